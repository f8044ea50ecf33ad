/**
 * Fixtures of the proxy tests: `governor proxy` started from source as a child process, with the
 * MCP SDK client as the host, over stdio or Streamable HTTP; or run in the test's process on
 * in-memory stdio, for tests of what it governs rather than of its process.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { PassThrough, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { stateFileFor } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  type ClientCapabilities,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { main } from "../packages/cli/src/main.ts";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX = import.meta.resolve("tsx");

/** `node … bin.ts proxy ARGS -- COMMAND…`: the proxy as a host would start it. */
export function proxyCommandLine(
  proxyArgs: readonly string[],
  server: { command: string; args?: readonly string[] },
) {
  return {
    command: process.execPath,
    args: [
      "--conditions=source",
      "--import",
      TSX,
      "packages/cli/src/bin.ts",
      "proxy",
      ...proxyArgs,
      "--",
      server.command,
      ...(server.args ?? []),
    ],
  };
}

export interface Host {
  readonly client: Client;
  readonly transport: StdioClientTransport;
  /** `notifications/message` the host received. */
  readonly logs: { level: string; logger?: string | undefined; data: unknown }[];
  close(): Promise<void>;
}

/** A host (the SDK client) talking to `governor proxy` over stdio. */
export async function startHost(
  proxyArgs: readonly string[],
  server: { command: string; args?: readonly string[] },
  capabilities: ClientCapabilities = {},
): Promise<Host> {
  const line = proxyCommandLine(proxyArgs, server);
  const transport = new StdioClientTransport({ ...line, cwd: ROOT, stderr: "pipe" });
  // An unread pipe could fill up and block the proxy.
  transport.stderr?.on("data", () => undefined);
  const { client, logs } = hostClient(capabilities);
  await client.connect(transport);
  return { client, transport, logs, close: () => client.close() };
}

function hostClient(capabilities: ClientCapabilities): Pick<Host, "client" | "logs"> {
  const client = new Client({ name: "test-host", version: "1.0.0" }, { capabilities });
  const logs: Host["logs"] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
  });
  return { client, logs };
}

/** A host talking to `governor proxy` run by `main()` in this process. */
export interface InProcessHost {
  readonly client: Client;
  readonly logs: Host["logs"];
  /** What the proxy wrote to its stderr so far. */
  stderr(): string;
  /** Closes the host's end of stdio and resolves with the proxy's exit status once it is done. */
  close(): Promise<number>;
}

/**
 * A host (the SDK client) talking to `governor proxy ARGS -- SERVER` run in this process on
 * in-memory stdio: the same command line, policy, event log and stdio framing as the child
 * process, without a second of `node --import tsx` start-up. The server is still a child process.
 * What only a process shows (its exit, its children, its real stdin and stdout) is tested with
 * {@link startHost}.
 */
export async function startInProcessHost(
  proxyArgs: readonly string[],
  server: { command: string; args?: readonly string[] },
  capabilities: ClientCapabilities = {},
): Promise<InProcessHost> {
  const toProxy = new PassThrough();
  const fromProxy = new PassThrough();
  let stderr = "";
  const proxyStderr = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      stderr += chunk.toString();
      done();
    },
  });
  const status = main(["proxy", ...proxyArgs, "--", server.command, ...(server.args ?? [])], {
    stdin: toProxy,
    stdout: fromProxy,
    stderr: proxyStderr,
  });
  const { client, logs } = hostClient(capabilities);
  // The client's side of the same newline-delimited JSON-RPC: it reads what the proxy writes.
  await client.connect(new StdioServerTransport(fromProxy, toProxy));
  return {
    client,
    logs,
    stderr: () => stderr,
    async close() {
      await client.close();
      toProxy.end();
      return status;
    },
  };
}

/** A host connected straight to the server, to compare with. */
export async function startDirect(
  server: { command: string; args?: readonly string[] },
  capabilities: ClientCapabilities = {},
): Promise<Client> {
  const client = new Client({ name: "test-host", version: "1.0.0" }, { capabilities });
  await client.connect(
    new StdioClientTransport({
      command: server.command,
      args: [...(server.args ?? [])],
      cwd: ROOT,
      stderr: "ignore",
    }),
  );
  return client;
}

/** `governor proxy --listen 0 …` started; resolves with its URL once it listens. */
export async function startHttpProxy(
  proxyArgs: readonly string[],
  server: { command: string; args?: readonly string[] },
): Promise<{ url: URL; pid: number; stop(): Promise<void> }> {
  const line = proxyCommandLine(["--listen", "0", ...proxyArgs], server);
  const child = spawn(line.command, line.args, { cwd: ROOT, stdio: ["pipe", "ignore", "pipe"] });
  let stderr = "";
  const url = await new Promise<URL>((resolve, reject) => {
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match?.[1] !== undefined) resolve(new URL(match[1]));
    });
    child.once("exit", (code) => reject(new Error(`proxy exited with ${code}: ${stderr}`)));
  });
  return {
    url,
    pid: child.pid ?? -1,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/** A host talking to an HTTP proxy. */
export async function connectHttp(url: URL): Promise<Client> {
  const client = new Client({ name: "test-host", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

/** How many calls of `tool` reached the fault server that writes `effectsFile`. */
export function serverCalls(effectsFile: string, tool: string): number {
  const file = stateFileFor(effectsFile);
  if (!existsSync(file)) return 0;
  const state = JSON.parse(readFileSync(file, "utf8")) as { counters: Record<string, number> };
  return state.counters[tool] ?? 0;
}

/** The text of a tool result's first block. */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? "").join("\n");
}
