/**
 * Fixtures of the proxy tests: `governor proxy` started from source as a child process, with the
 * MCP SDK client as the host, over stdio or Streamable HTTP; or run in the test's process on
 * in-memory stdio, for tests of what it governs rather than of its process.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
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
import { expect } from "vitest";
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

/** A JSON-RPC message the proxy wrote to its stdout (a line that was not JSON: `{ notJson }`). */
export type RawMessage = Record<string, unknown> & {
  id?: unknown;
  method?: string;
  params?: Record<string, unknown>;
  error?: { code: number; message: string };
};

/** `governor proxy` as a child process on its real stdio, driven line by line as a host would. */
export interface RawProxy {
  /** Writes each message as a JSON line, all in one write to stdin. */
  send(...messages: unknown[]): void;
  /** Writes `text` as one line, as it is (a line that is not JSON, a batch…). */
  sendLine(text: string): void;
  /** Everything the proxy wrote to stdout so far. */
  stdout(): string;
  /** Every message the proxy wrote to stdout so far, in order. */
  received(): RawMessage[];
  /** What the proxy wrote to stderr so far. */
  stderr(): string;
  /** The answer to the host's request `id` (waits up to 30 s). */
  answer(id: unknown): Promise<RawMessage>;
  /** The first message `match` accepts that no `take` took before; it is taken (waits up to 30 s). */
  take(match: (m: RawMessage) => boolean, what: string): Promise<RawMessage>;
  /** Ends stdin and waits for the proxy to exit. */
  close(): Promise<void>;
  /** Kills the proxy. */
  kill(): void;
}

/**
 * Starts `governor proxy ARGS -- SERVER` as a host would and, unless `initialize` is false, sends
 * `initialize` (checking the answer names the server) and `notifications/initialized`.
 */
export async function startRawProxy(
  proxyArgs: readonly string[],
  server: { command: string; args?: readonly string[] },
  options: { readonly env?: Record<string, string>; readonly initialize?: boolean } = {},
): Promise<RawProxy> {
  const line = proxyCommandLine(proxyArgs, server);
  const child = spawn(line.command, line.args, {
    cwd: ROOT,
    stdio: "pipe",
    ...(options.env !== undefined && { env: { ...process.env, ...options.env } }),
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const received: RawMessage[] = [];
  const taken = new Set<RawMessage>();
  const waiters: (() => void)[] = [];
  createInterface({ input: child.stdout }).on("line", (text) => {
    if (text.trim() === "") return;
    let message: RawMessage;
    try {
      message = JSON.parse(text) as RawMessage;
    } catch {
      message = { notJson: text };
    }
    received.push(message);
    for (const wake of waiters.splice(0)) wake();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const waitFor = async (find: () => RawMessage | undefined, what: string) => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no ${what}: ${stdout}\n${stderr}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  };
  const proxy: RawProxy = {
    send: (...messages) =>
      child.stdin.write(messages.map((m) => `${JSON.stringify(m)}\n`).join("")),
    sendLine: (text) => child.stdin.write(`${text}\n`),
    stdout: () => stdout,
    received: () => [...received],
    stderr: () => stderr,
    answer: (id) =>
      waitFor(() => received.find((m) => m.id === id && !("method" in m)), `answer to ${id}`),
    take: (match, what) =>
      waitFor(() => {
        const found = received.find((m) => !taken.has(m) && match(m));
        if (found !== undefined) taken.add(found);
        return found;
      }, what),
    async close() {
      child.stdin.end();
      await exited;
    },
    kill: () => child.kill(),
  };
  if (options.initialize === false) return proxy;
  try {
    await initialize(proxy);
  } catch (error) {
    proxy.kill();
    throw error;
  }
  return proxy;
}

/** `initialize` (its answer must name the server), then `notifications/initialized`. */
async function initialize(proxy: RawProxy): Promise<void> {
  proxy.send({
    jsonrpc: "2.0",
    id: "init",
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "raw-host", version: "1.0.0" },
    },
  });
  const init = await proxy.answer("init");
  if (typeof (init.result as { serverInfo?: unknown } | undefined)?.serverInfo !== "object") {
    throw new Error(`initialize was not answered with a serverInfo: ${JSON.stringify(init)}`);
  }
  proxy.send({ jsonrpc: "2.0", method: "notifications/initialized" });
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

/**
 * An MCP SDK client over stdio to test/fixtures/raw-mcp-server.mjs answering each tools/call, in
 * turn, with the next of `answers` (the JSON text of a list of JSON-RPC `result` or `error`
 * objects, as the fixture's RAW_ANSWERS reads it) as it is, malformed or not. The caller closes it.
 */
export async function rawAnswersClient(name: string, answers: string): Promise<Client> {
  const client = new Client({ name, version: "1" });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [fileURLToPath(new URL("./fixtures/raw-mcp-server.mjs", import.meta.url))],
      env: {
        ...(process.env as Record<string, string>),
        RAW_MODE: "answers",
        RAW_ANSWERS: answers,
      },
    }),
  );
  return client;
}

/** Polls `done` every 25 ms for up to 10 s, then asserts it (`what` names it in a failure). */
export async function waitUntil(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(done(), what).toBe(true);
}

/**
 * A host's JSON-RPC `tools/call` of the raw fixture's `write_note`, with a progress token when
 * given; without an id it is a notification (which no server answers).
 */
export function writeNoteCall(
  id: number | undefined,
  t: string,
  progressToken?: string,
): RawMessage {
  return {
    jsonrpc: "2.0",
    ...(id !== undefined && { id }),
    method: "tools/call",
    params: {
      name: "write_note",
      arguments: { t },
      ...(progressToken !== undefined && { _meta: { progressToken } }),
    },
  };
}

/** The `tools/call` messages the raw fixture read, from its RAW_LOG file (none before it exists). */
export function loggedToolCalls(log: string): RawMessage[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as RawMessage)
    .filter((m) => m.method === "tools/call");
}
