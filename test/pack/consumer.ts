/**
 * A consumer of the installed packages, as a user would write it. The pack test copies this file
 * into a clean project outside the workspace, type-checks it against the installed declarations
 * (NodeNext and bundler resolution), compiles it and runs the JavaScript under plain `node`: it
 * governs the installed testkit's fault server over stdio (a child process running the built
 * `stdio-main.js`) and over Streamable HTTP, with a `@modelcontextprotocol/sdk` 1.32 client and a
 * `@modelcontextprotocol/client` 2.x one, and fails loudly when an outcome is not the one the
 * docs promise.
 */
import assert from "node:assert/strict";
import { type CallOutcome, createGovernor, type Governor } from "@governor/core";
import { type GovernedClient, governClient, toModelResult } from "@governor/mcp";
import { fixtureSecrets, startHttpServer, stdioServerParams } from "@governor/testkit";
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as StreamableHTTPClientTransportV2,
} from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioClientTransportV2 } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

function text(outcome: CallOutcome<CallToolResult>): string {
  return toModelResult(outcome)
    .content.map((part) => (part.type === "text" ? part.text : ""))
    .join("");
}

/** The same checks over any transport: a retry, a correction, redaction and a stop. */
async function exercise(transport: string, notes: GovernedClient, governor: Governor) {
  const tools = await notes.listTools();
  assert.ok(
    tools.some((tool) => tool.name === "get_note"),
    `${transport}: listTools names get_note`,
  );

  const run = governor.startRun();
  // 503 twice, then 200: retried inside the call, invisible to the model.
  const fetched = await notes.callTool(run, {
    name: "flaky_fetch",
    arguments: { url: "https://example.com" },
  });
  assert.equal(fetched.kind, "ok", `${transport}: flaky_fetch ends ok`);
  assert.equal(fetched.kind === "ok" && fetched.attempts, 3, `${transport}: after 3 attempts`);

  // An id that does not exist: the model gets a short text telling what to change.
  const missing = await notes.callTool(run, { name: "get_note", arguments: { id: "drafts" } });
  assert.equal(missing.kind, "model", `${transport}: get_note(drafts) goes to the model`);
  assert.equal(missing.kind === "model" && missing.action, "correct_arguments");
  assert.match(text(missing), /welcome/);

  // Permission denied: nobody in the loop can fix it; the run stops with a known reason.
  const denied = await notes.callTool(run, { name: "delete_account", arguments: { id: "acct_1" } });
  assert.equal(denied.kind, "stop", `${transport}: delete_account stops the run`);
  assert.equal(denied.kind === "stop" && denied.reason, "forbidden");

  // A stack trace full of secrets (in a run of its own: it ends that run): none reaches the model.
  const other = governor.startRun();
  const crashed = await notes.callTool(other, { name: "crash_with_stack", arguments: {} });
  assert.notEqual(crashed.kind, "ok");
  for (const secret of fixtureSecrets()) {
    assert.ok(!text(crashed).includes(secret), `${transport}: ${secret} is redacted`);
  }
  other.end();

  const summary = run.end();
  assert.equal(summary.reason, "forbidden");
  return summary;
}

/** Either SDK's client, connected over stdio. */
async function connectStdio(sdk: "v1" | "v2"): Promise<Client | ClientV2> {
  const params = stdioServerParams();
  // Installed, the child is plain node running the built entry point: no loader, no conditions.
  assert.deepEqual(params.args?.length, 1, `stdio args: ${JSON.stringify(params.args)}`);
  assert.match(
    params.args?.[0] ?? "",
    /node_modules[\\/]@governor[\\/]testkit[\\/]dist[\\/]stdio-main\.js$/,
  );
  if (sdk === "v2") {
    const client = new ClientV2({ name: "pack-test", version: "1.0.0" });
    await client.connect(new StdioClientTransportV2(params));
    return client;
  }
  const client = new Client({ name: "pack-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport(params));
  return client;
}

async function overStdio(sdk: "v1" | "v2"): Promise<string> {
  const client = await connectStdio(sdk);
  try {
    const governor = createGovernor(
      { tools: { "get_*": { effect: "read_only" }, flaky_fetch: { effect: "read_only" } } },
      { metrics: false },
    );
    const summary = await exercise(
      `stdio (${sdk})`,
      governClient(client, { governor, server: "notes" }),
      governor,
    );
    return `stdio ${sdk}: ${summary.reason} after ${summary.calls} calls`;
  } finally {
    await client.close();
  }
}

async function overHttp(sdk: "v1" | "v2"): Promise<string> {
  const http = await startHttpServer();
  const url = new URL(http.url);
  const client =
    sdk === "v2"
      ? new ClientV2({ name: "pack-test", version: "1.0.0" })
      : new Client({ name: "pack-test", version: "1.0.0" });
  try {
    if (client instanceof ClientV2) await client.connect(new StreamableHTTPClientTransportV2(url));
    else await client.connect(new StreamableHTTPClientTransport(url));
    const governor = createGovernor(
      { tools: { "get_*": { effect: "read_only" }, flaky_fetch: { effect: "read_only" } } },
      { metrics: false },
    );
    const summary = await exercise(
      `http (${sdk})`,
      governClient(client, { governor, server: "notes" }),
      governor,
    );
    return `http ${sdk}: ${summary.reason} after ${summary.calls} calls`;
  } finally {
    await client.close();
    await http.close();
  }
}

const results: string[] = [];
for (const sdk of ["v1", "v2"] as const) results.push(await overStdio(sdk), await overHttp(sdk));
console.log(`node ${process.version}: ${results.join("; ")}`);
