/**
 * `governor proxy`: the command line. Parses its arguments, builds the governor (policy, event
 * log) and serves the proxy over stdio or Streamable HTTP, to a real server started as a child
 * process (`-- COMMAND ARGS`) or reached over Streamable HTTP (`--upstream URL`).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createGovernor, createJsonlSink, type JsonlSink } from "@governor/core";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { CliIo } from "../io.ts";
import { parseOptions } from "../options.ts";
import { HostStdioTransport } from "./host-stdio.ts";
import { isPreset, loadProxyPolicy, PRESETS, type Preset } from "./policy-source.ts";
import { createProxyServer, type ProxyServer, type ProxyServerOptions } from "./server.ts";
import { type OpenedStore, openStore, parseStoreSpec, type StoreSpec } from "./store-option.ts";
import { answerBadToolCalls } from "./tool-call-guard.ts";

/** What `governor proxy` was asked to do. */
export interface ProxyArgs {
  readonly policy?: string;
  /** A starter policy shipped for a common server (`presets/NAME.json`). */
  readonly preset?: Preset;
  /** Let the server's tool annotations set effects. */
  readonly trustAnnotations?: true;
  readonly events?: string;
  readonly server?: string;
  /** Serve the host over Streamable HTTP on this port (0: any free port) instead of stdio. */
  readonly listen?: number;
  readonly host: string;
  /** The real server over Streamable HTTP. */
  readonly upstream?: URL;
  /** The real server as a child process over stdio. */
  readonly command?: { readonly command: string; readonly args: readonly string[] };
  readonly windowMs?: number;
  readonly stopTtlMs?: number;
  readonly timeoutMs?: number;
  /** Where the ledger, breakers and budgets live (`--store`). @default the process's memory */
  readonly store?: StoreSpec;
}

/** A bad command line: the message says what was wrong and what is accepted. */
export class ProxyUsageError extends Error {
  override name = "ProxyUsageError";
}

function duration(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const match = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (match === null) {
    throw new ProxyUsageError(
      `--${flag} ${JSON.stringify(text)}: expected a duration such as 500ms, 30s, 10m or 1h (a bare number is ms)`,
    );
  }
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] ?? "ms"] ?? 1;
  const ms = Number(match[1]) * unit;
  if (ms <= 0)
    throw new ProxyUsageError(`--${flag}: must be more than 0, got ${JSON.stringify(text)}`);
  return ms;
}

/** Parses `governor proxy` arguments; throws {@link ProxyUsageError} on a bad one. */
export function parseProxyArgs(argv: readonly string[]): ProxyArgs {
  const dash = argv.indexOf("--");
  const own = dash === -1 ? [...argv] : argv.slice(0, dash);
  const child = dash === -1 ? [] : argv.slice(dash + 1);
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseOptions({
      args: own,
      options: {
        policy: { type: "string" },
        preset: { type: "string" },
        "trust-annotations": { type: "boolean" },
        events: { type: "string" },
        server: { type: "string" },
        listen: { type: "string" },
        host: { type: "string" },
        upstream: { type: "string" },
        window: { type: "string" },
        "stop-ttl": { type: "string" },
        timeout: { type: "string" },
        store: { type: "string" },
      },
      allowPositionals: true,
      strict: true,
    }) as { values: Record<string, string | boolean | undefined>; positionals: string[] });
  } catch (error) {
    throw new ProxyUsageError(error instanceof Error ? error.message : String(error));
  }
  if (positionals.length > 0) {
    throw new ProxyUsageError(
      `unexpected ${JSON.stringify(positionals[0])}: put the server's command after --, e.g. governor proxy -- npx -y @modelcontextprotocol/server-everything`,
    );
  }
  const str = (name: string): string | undefined => values[name] as string | undefined;
  const preset = str("preset");
  if (preset !== undefined && !isPreset(preset)) {
    throw new ProxyUsageError(
      `--preset ${JSON.stringify(preset)}: expected one of ${PRESETS.join(", ")} (or --policy FILE for another server)`,
    );
  }
  if (preset !== undefined && values.policy !== undefined) {
    throw new ProxyUsageError(
      "give either --policy FILE or --preset NAME, not both (a preset is a policy file: copy it from the package's presets/ to change it)",
    );
  }
  const trustAnnotations = values["trust-annotations"] === true;
  if (trustAnnotations && values.server === undefined && preset === undefined) {
    throw new ProxyUsageError(
      "--trust-annotations needs --server NAME (the server whose annotations are trusted, servers.NAME in the policy) or --preset",
    );
  }
  let upstream: URL | undefined;
  if (values.upstream !== undefined) {
    try {
      upstream = new URL(str("upstream") as string);
    } catch {
      throw new ProxyUsageError(
        `--upstream ${JSON.stringify(values.upstream)}: expected an http(s) URL`,
      );
    }
    if (upstream.protocol !== "http:" && upstream.protocol !== "https:") {
      throw new ProxyUsageError(
        `--upstream: expected an http: or https: URL, got ${upstream.protocol}`,
      );
    }
  }
  if (upstream !== undefined && child.length > 0) {
    throw new ProxyUsageError("give either --upstream URL or -- COMMAND [ARGS...], not both");
  }
  if (upstream === undefined && child.length === 0) {
    throw new ProxyUsageError(
      "no server to govern: give -- COMMAND [ARGS...] (a stdio server) or --upstream URL (Streamable HTTP)",
    );
  }
  let listen: number | undefined;
  const port = str("listen");
  if (port !== undefined) {
    listen = Number(port);
    if (!/^\d+$/.test(port) || listen > 65_535) {
      throw new ProxyUsageError(`--listen ${JSON.stringify(port)}: expected a port, 0 to 65535`);
    }
  }
  const windowMs = duration("window", str("window"));
  const stopTtlMs = duration("stop-ttl", str("stop-ttl"));
  const timeoutMs = duration("timeout", str("timeout"));
  let store: StoreSpec | undefined;
  const storeValue = str("store");
  if (storeValue !== undefined) {
    const parsed = parseStoreSpec(storeValue);
    if ("problem" in parsed) {
      throw new ProxyUsageError(`--store ${JSON.stringify(storeValue)}: ${parsed.problem}`);
    }
    store = parsed;
    // The store keeps each server's writes by its name: proxies without one on the same store
    // would share one ledger, and a write of one server be answered with another's. A preset
    // names a kind of server, not this one: two proxies of one preset would share it too.
    if (values.server === undefined) {
      throw new ProxyUsageError(
        "--store needs --server NAME (with --preset too: a preset names a kind of server, not this one): the store keeps each server's writes apart by that name, and proxies without one on the same store would share one ledger",
      );
    }
  }
  const [command, ...args] = child;
  return {
    ...(values.policy !== undefined && { policy: str("policy") as string }),
    ...(preset !== undefined && { preset }),
    ...(trustAnnotations && { trustAnnotations: true as const }),
    ...(values.events !== undefined && { events: str("events") as string }),
    ...(values.server !== undefined && { server: str("server") as string }),
    ...(listen !== undefined && { listen }),
    host: str("host") ?? "127.0.0.1",
    ...(upstream !== undefined && { upstream }),
    ...(command !== undefined && { command: { command, args } }),
    ...(windowMs !== undefined && { windowMs }),
    ...(stopTtlMs !== undefined && { stopTtlMs }),
    ...(timeoutMs !== undefined && { timeoutMs }),
    ...(store !== undefined && { store }),
  };
}

/** The environment a child server gets: the proxy's own (a host passes its settings this way). */
function childEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  return env;
}

function upstreamOf(args: ProxyArgs): () => Transport {
  const { upstream, command } = args;
  if (upstream !== undefined) return () => new StreamableHTTPClientTransport(upstream);
  if (command === undefined) throw new ProxyUsageError("no server to govern");
  return () =>
    new StdioClientTransport({
      command: command.command,
      args: [...command.args],
      env: childEnv(),
      stderr: "inherit",
    });
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  return text === "" ? undefined : JSON.parse(text);
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/**
 * Whether a request may be served: on a loopback address, only with a loopback `Host` header,
 * so that a web page the user opens cannot reach the proxy by DNS rebinding.
 */
export function hostAllowed(bound: string, hostHeader: string | undefined): boolean {
  if (!LOOPBACK.has(bound)) return true;
  if (hostHeader === undefined) return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${hostHeader}`).hostname;
  } catch {
    return false;
  }
  return LOOPBACK.has(hostname);
}

function jsonRpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

/** Serves one proxy per HTTP session on `host:port`; resolves with the bound port and a closer. */
export async function listenHttp(
  proxyOptions: () => ProxyServerOptions,
  port: number,
  host: string,
  onProblem: (message: string) => void = () => undefined,
): Promise<{ port: number; close(): Promise<void> }> {
  const sessions = new Map<
    string,
    { transport: StreamableHTTPServerTransport; proxy: ProxyServer }
  >();
  const http = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname !== "/mcp") return jsonRpcError(res, 404, -32000, "Not found: use /mcp");
      if (!hostAllowed(host, req.headers.host)) {
        return jsonRpcError(
          res,
          403,
          -32000,
          "Forbidden: a loopback proxy answers loopback hosts only",
        );
      }
      const id = req.headers["mcp-session-id"];
      let body: unknown;
      if (req.method === "POST") {
        try {
          body = await readBody(req);
        } catch {
          return jsonRpcError(res, 400, -32700, "Parse error: the body is not JSON");
        }
      }
      const known = typeof id === "string" ? sessions.get(id) : undefined;
      if (known !== undefined) return known.transport.handleRequest(req, res, body);
      if (id !== undefined) return jsonRpcError(res, 404, -32001, "Session not found");
      if (req.method !== "POST")
        return jsonRpcError(res, 400, -32000, "No session: initialize first");
      const proxy = createProxyServer(proxyOptions());
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, { transport, proxy });
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
        void proxy.close();
      };
      await proxy.connect(transport);
      answerBadToolCalls(transport, onProblem);
      await transport.handleRequest(req, res, body);
    })().catch((error: unknown) => {
      if (!res.headersSent) jsonRpcError(res, 500, -32603, `governor proxy: ${String(error)}`);
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(port, host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const address = http.address();
  const bound = typeof address === "object" && address !== null ? address.port : port;
  return {
    port: bound,
    async close() {
      await Promise.all([...sessions.values()].map((s) => s.proxy.close()));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Runs `governor proxy`; resolves with the exit status when the host goes away. */
export async function proxyCommand(argv: string[], io: CliIo): Promise<number> {
  let args: ProxyArgs;
  try {
    args = parseProxyArgs(argv);
  } catch (error) {
    if (!(error instanceof ProxyUsageError)) throw error;
    io.stderr.write(`governor proxy: ${error.message}\n`);
    return 2;
  }
  const { policy, server } = await loadProxyPolicy(args);
  let sink: JsonlSink | undefined;
  if (args.events !== undefined) {
    sink = createJsonlSink(args.events, {
      onError: (error) => io.stderr.write(`governor proxy: event log: ${String(error)}\n`),
    });
  }
  let opened: OpenedStore | undefined;
  if (args.store !== undefined) {
    try {
      opened = await openStore(args.store);
    } catch (error) {
      io.stderr.write(`governor proxy: --store: ${(error as Error).message}\n`);
      await sink?.close();
      return 1;
    }
  }
  const governor = createGovernor(policy, {
    ...(sink !== undefined && { onEvent: sink.write }),
    ...(opened !== undefined && { store: opened.store }),
  });
  const upstream = upstreamOf(args);
  const proxyOptions = (): ProxyServerOptions => ({
    governor,
    upstream,
    ...(server !== undefined && { server }),
    ...(args.windowMs !== undefined && { windowMs: args.windowMs }),
    ...(args.stopTtlMs !== undefined && { stopTtlMs: args.stopTtlMs }),
    ...(args.timeoutMs !== undefined && { timeoutMs: args.timeoutMs }),
    onTransportError: (error) => io.stderr.write(`governor proxy: ${error.message}\n`),
    onConnectError: (message) => io.stderr.write(`governor proxy: ${message}\n`),
  });

  // What a host sent that the proxy answered with a JSON-RPC error (or dropped), for its logs.
  const hostProblem = (message: string) => io.stderr.write(`governor proxy: ${message}\n`);
  let closing: Promise<void> | undefined;
  let shutdownResolve: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    shutdownResolve = resolve;
  });
  let closeHost: () => Promise<void>;
  if (args.listen !== undefined) {
    const served = await listenHttp(proxyOptions, args.listen, args.host, hostProblem);
    io.stderr.write(`governor proxy: listening on http://${args.host}:${served.port}/mcp\n`);
    closeHost = served.close;
  } else {
    const proxy = createProxyServer(proxyOptions());
    const transport = new HostStdioTransport(io.stdin, io.stdout, hostProblem);
    await proxy.connect(transport, { checked: true });
    closeHost = proxy.close;
    // The host went away: end the run and the child server with it.
    io.stdin.once("end", () => void shutdown());
    io.stdin.once("close", () => void shutdown());
  }
  function shutdown(): Promise<void> {
    closing ??= (async () => {
      await closeHost();
      await opened?.close().catch(() => undefined);
      await sink?.close();
      shutdownResolve();
    })();
    return closing;
  }
  const onSignal = () => void shutdown();
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
  await done;
  // Run in a longer-lived process (a test's), the next command's listeners are its own.
  process.off("SIGTERM", onSignal);
  process.off("SIGINT", onSignal);
  return 0;
}
