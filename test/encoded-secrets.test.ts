/**
 * Secrets a server hands back encoded, over the real surfaces: `governClient` on stdio and
 * `governor proxy` as a child process, against a raw stdio server that answers each call with a
 * hostile failure. JSON inside JSON whose value holds an escaped quote, HTML entities, HTTP Basic
 * credentials in base64, a quoted value split across two text blocks, a JSON `\n` glued to a path
 * and a JWT, and secrets in `structuredContent`, `_meta`, resource links, embedded resources and a
 * JSON-RPC error's `data`:
 * what the model (through the proxy, the host) reads holds none of them.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, HostError } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, startRawProxy } from "./proxy-support.ts";

const RAW_SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");
const T = "Zq8vX2mN4pL7rT1w";
const TAIL = "Hx5cV9bN3mQ7wE2r";
const BASIC = Buffer.from("alice:hunter2xyz").toString("base64");
/** Nothing of these may reach the model. */
const SECRETS = [T, TAIL, BASIC.slice(0, 12), "hunter2", "/home/alice", "alice:"];

const text = (t: string) => ({ type: "text", text: t });
const failure = (extra: Record<string, unknown>) => ({ result: { isError: true, ...extra } });

/** One answer a call, in order; each holds its secret where the case says. */
const CASES: [string, Record<string, unknown>][] = [
  [
    "JSON inside JSON, the value holding an escaped quote",
    failure({
      content: [
        text(
          `upstream failed: ${JSON.stringify({ error: JSON.stringify({ password: `${T}"${TAIL}` }) })}`,
        ),
      ],
    }),
  ],
  [
    "HTML entities",
    failure({
      content: [text(`upstream said {&quot;client_secret&quot;:&quot;${T}&quot;}`)],
    }),
  ],
  ["HTTP Basic credentials", failure({ content: [text(`{"auth":"Basic ${BASIC}"} rejected`)] })],
  [
    "a quoted value split across two text blocks",
    failure({ content: [text('config error: password: "'), text(`${T}" rejected`)] }),
  ],
  [
    "a JSON error whose line break is glued to a path and a JWT",
    failure({
      content: [
        text(
          JSON.stringify({
            error: `open failed\n/home/alice/.env\neyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.${T}`,
          }),
        ),
      ],
    }),
  ],
  [
    "structuredContent beside the content",
    failure({
      content: [text("request rejected")],
      structuredContent: { error: { message: `token=${T}`, code: `E_${T}` } },
    }),
  ],
  [
    "_meta of the result and of a block",
    failure({
      content: [{ ...text("request rejected"), _meta: { token: T } }],
      _meta: { "io.modelcontextprotocol/toolFailure": { message: `password=${T}` }, trace: T },
    }),
  ],
  [
    "a resource link and an embedded resource",
    failure({
      content: [
        text("request rejected"),
        { type: "resource_link", uri: `file:///home/alice/${T}.txt`, name: "log" },
        { type: "resource", resource: { uri: "file:///home/alice/x", text: `token=${T}` } },
      ],
    }),
  ],
  [
    "a JSON-RPC error's data",
    {
      error: {
        code: -32000,
        message: `upstream: {\\"token\\":\\"${T}\\\\\\"${TAIL}\\"}`,
        data: {
          body: JSON.stringify({ error: JSON.stringify({ token: T }) }),
          path: "/home/alice",
        },
      },
    },
  ],
];

/** A tool a case: a stop one case's failure calls for (an auth failure) holds no other's back. */
const TOOLS = CASES.map((_, k) => `case_${k}`);
const ENV = {
  RAW_MODE: "answers",
  RAW_ANSWERS: JSON.stringify(CASES.map(([, answer]) => answer)),
  RAW_TOOLS: TOOLS.join(","),
};

function expectNoSecret(seen: string, what: string): void {
  for (const secret of SECRETS) expect.soft(seen, `${what}: ${seen}`).not.toContain(secret);
}

const POLICY = { tools: { "*": { effect: "read_only" } } } as const;

const dir = mkdtempSync(join(tmpdir(), "governor-encoded-"));
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe("encoded secrets over the real surfaces", () => {
  it("governClient over stdio hands the model none of them", async () => {
    const client = new Client({ name: "encoded-secrets", version: "1" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [RAW_SERVER],
        env: { ...(process.env as Record<string, string>), ...ENV },
      }),
    );
    closers.push(() => client.close());
    const placeholders: string[] = [];
    for (const [k, [what]] of CASES.entries()) {
      // A governor a call: each case is judged as the first failure of its run.
      const governor = createGovernor(POLICY, { metrics: false });
      let seen: string;
      try {
        const outcome = await governClient(client, { governor, server: "raw" }).callTool(
          governor.startRun(),
          { name: `case_${k}`, arguments: { case: what } },
        );
        expect(outcome.kind, what).not.toBe("ok");
        seen = JSON.stringify(toModelResult(outcome));
      } catch (error) {
        // A JSON-RPC error is the host's: its message (redacted) is what a host may pass on.
        if (!(error instanceof HostError)) throw error;
        seen = error.message;
      }
      expectNoSecret(seen, what);
      placeholders.push(seen);
    }
    // The texts that quote the secret reach the model, redacted (not dropped for a stop).
    for (const k of [0, 1, 2, 3, 4])
      expect(placeholders[k], CASES[k]?.[0]).toMatch(/\[(?:redacted|token)\]/);
  }, 30_000);

  it("governor proxy answers the host with none of them", async () => {
    const policy = join(dir, "policy.json");
    writeFileSync(policy, JSON.stringify(POLICY));
    const proxy = await startRawProxy(
      ["--policy", policy],
      { command: process.execPath, args: [RAW_SERVER] },
      { env: ENV },
    );
    closers.push(() => proxy.close());
    const answers: string[] = [];
    for (const [k, [what]] of CASES.entries()) {
      proxy.send({
        jsonrpc: "2.0",
        id: k + 1,
        method: "tools/call",
        params: { name: `case_${k}`, arguments: { case: what } },
      });
      const answer = JSON.stringify(await proxy.answer(k + 1));
      expectNoSecret(answer, what);
      answers.push(answer);
    }
    expectNoSecret(proxy.stdout(), "everything the proxy wrote");
    for (const k of [0, 1, 2, 3, 4])
      expect(answers[k], CASES[k]?.[0]).toMatch(/\[(?:redacted|token)\]/);
  }, 60_000);
});
