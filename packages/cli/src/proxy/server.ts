/**
 * The proxy's MCP server: speaks to the host as the real server would, and to the real server as
 * the host would. Tool calls go through Governor (session.ts); everything else passes through
 * both ways unchanged: initialize (the real server's capabilities, info and instructions),
 * resources, prompts, completions, logging, progress, cancellation, and the server's own requests
 * (sampling, elicitation, roots) to the host.
 */
import { createRequire } from "node:module";
import type { Governor, HostError } from "@governor/core";
import { type GovernedClient, governClient } from "@governor/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  type ClientCapabilities,
  ErrorCode,
  type Implementation,
  type InitializeRequest,
  InitializeRequestSchema,
  type InitializeResult,
  ListToolsRequestSchema,
  type LoggingLevel,
  LoggingLevelSchema,
  McpError,
  type Notification,
  PingRequestSchema,
  type Request,
  type RequestId,
  ResultSchema,
  type ServerCapabilities,
  SetLevelRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { dispatchChecked, useLineReadBuffer } from "./fast-path.ts";
import {
  createProxySession,
  JsonRpcError,
  type ProxyCall,
  type ProxyLog,
  type ProxySession,
} from "./session.ts";
import { routeToolCalls } from "./tool-call-route.ts";
import { sendToolCallsDirectly } from "./upstream-tool-calls.ts";

const { version: VERSION } = createRequire(import.meta.url)("../../package.json") as {
  version: string;
};

/** The `_meta` key of the initialize result that says a Governor proxy answers. */
export const PROXY_META_KEY = "dev.governor/proxy";

/** Capabilities the proxy may need to serve: the real server's are answered at initialize. */
const SUPERSET: ServerCapabilities = {
  tools: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
};

export interface ProxyServerOptions {
  readonly governor: Governor;
  /** A new transport to the real server (called at initialize, and again to reconnect). */
  readonly upstream: () => Transport;
  /** The server's name in the policy (`servers.<name>`). */
  readonly server?: string;
  readonly windowMs?: number;
  readonly stopTtlMs?: number;
  /** Upper bound of one request to the real server, in ms (at most 2^31 - 1). @default 60000 */
  readonly timeoutMs?: number;
  /** Transport trouble no request reports (redacted), e.g. to stderr. */
  readonly onTransportError?: (error: HostError) => void;
  /**
   * The real server could not be reached at initialize (the host gets the same text as the
   * JSON-RPC error of its `initialize`), e.g. to stderr, where a host that shows only a failed
   * start still logs it.
   */
  readonly onConnectError?: (message: string) => void;
}

export interface ProxyServer {
  /** The MCP server the host talks to (through `connect`). */
  readonly server: Server;
  /**
   * Connects the host's transport: `server.connect(transport)`, with the host's tool calls taken
   * off the transport and answered without the SDK's request handling (tool-call-route.ts).
   * `checked`: the transport checks each message's envelope itself (host-stdio.ts), so the SDK
   * is handed the rest by kind (fast-path.ts).
   */
  connect(transport: Transport, options?: { readonly checked?: boolean }): Promise<void>;
  /** Closes the host side and the real server's connection (a stdio child is ended). */
  close(): Promise<void>;
}

/** The longest timer Node keeps (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/** The pause between a call's last progress notification and its answer, in ms. */
const PROGRESS_GAP_MS = 5;

/** A severity order of MCP logging levels. */
const LEVELS = LoggingLevelSchema.options;

/** Rethrows what the real server answered so the host gets its code and message unprefixed. */
function forHost(error: unknown): never {
  if (error instanceof JsonRpcError) throw error;
  if (error instanceof McpError) {
    const prefix = `MCP error ${error.code}: `;
    const message = error.message.startsWith(prefix)
      ? error.message.slice(prefix.length)
      : error.message;
    throw new JsonRpcError(error.code, message, error.data);
  }
  const message = error instanceof Error ? error.message : String(error);
  throw new JsonRpcError(ErrorCode.InternalError, `governor proxy: ${message}`);
}

/** What the proxy tells the host it can do: the real server's capabilities, plus its own. */
function advertised(real: ServerCapabilities): ServerCapabilities {
  // Task-based tool calls are not governed (the adapter refuses them): not advertised.
  const { tasks: _tasks, ...rest } = real;
  return {
    ...rest,
    logging: {},
    ...(real.tools !== undefined && { tools: { ...real.tools, listChanged: true } }),
  };
}

/** Creates a proxy for one host session. */
export function createProxyServer(options: ProxyServerOptions): ProxyServer {
  const { governor } = options;
  // Node fires a longer timer after 1 ms: a longer limit is taken as the longest it keeps.
  const timeoutMs = Math.min(options.timeoutMs ?? 60_000, MAX_TIMER_MS);
  const server = new Server(
    { name: "governor-proxy", version: VERSION },
    { capabilities: SUPERSET },
  );
  let client: Client | undefined;
  let governed: GovernedClient | undefined;
  let session: ProxySession | undefined;
  let realCapabilities: ServerCapabilities = {};
  let level: LoggingLevel | undefined;
  const hidden = new Set<string>();
  /** Host requests in flight: a server request while exactly one is out belongs to it. */
  const inFlight = new Set<RequestId>();

  const log = (entry: ProxyLog): void => {
    if (level !== undefined && LEVELS.indexOf(entry.level) < LEVELS.indexOf(level)) return;
    server
      .notification({
        method: "notifications/message",
        params: { level: entry.level, logger: "governor", data: entry.data },
      })
      .catch(() => undefined);
  };

  const toolsMaybeChanged = (tool: string): void => {
    governor
      .unavailableTools([tool], options.server)
      .then((closed) => {
        const now = closed.includes(tool);
        if (now === hidden.has(tool)) return;
        if (now) hidden.add(tool);
        else hidden.delete(tool);
        return server.sendToolListChanged();
      })
      .catch(() => undefined);
  };

  const relatedTo = (): { relatedRequestId?: RequestId } => {
    if (inFlight.size !== 1) return {};
    const [only] = inFlight;
    return only === undefined ? {} : { relatedRequestId: only };
  };

  /** Host progress tokens of requests out, and where their progress goes. */
  const forwarders = new Map<string | number, (params: Record<string, unknown>) => void>();

  /**
   * Forwards the real server's progress for one host request, under the host's own token (sent
   * upstream as it is), in the order it came; `done` stops forwarding and waits a moment after
   * the last notification, because the SDK handles a notification a microtask later than an
   * answer that came in the same read and drops progress for a request that has its answer.
   */
  const forwardProgress = (token: unknown, requestId: RequestId) => {
    if (typeof token !== "string" && typeof token !== "number") return undefined;
    let forwarded = false;
    forwarders.set(token, (params) => {
      forwarded = true;
      server
        .notification(
          {
            method: "notifications/progress",
            params: { ...params, progressToken: token },
          } as never,
          { relatedRequestId: requestId },
        )
        .catch(() => undefined);
    });
    let done: Promise<void> | undefined;
    return {
      /** Stops forwarding and waits the gap once, however often it is called. */
      done: () =>
        (done ??= (async () => {
          forwarders.delete(token);
          if (forwarded) await new Promise((resolve) => setTimeout(resolve, PROGRESS_GAP_MS));
        })()),
    };
  };

  /**
   * Takes the real server's progress notifications off its transport as they are read, ahead of
   * the SDK (which would run them after an answer read at the same time, and then drop them).
   */
  const tapProgress = (transport: Transport): void => {
    const inner = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if ("method" in message && message.method === "notifications/progress") {
        const params = (message.params ?? {}) as Record<string, unknown>;
        const token = params.progressToken;
        const forward =
          typeof token === "string" || typeof token === "number"
            ? forwarders.get(token)
            : undefined;
        if (forward !== undefined) return forward(params);
      }
      inner?.(message, extra);
    };
  };

  /** How each client sends its tool calls (upstream-tool-calls.ts). */
  const directs = new WeakMap<Client, ReturnType<typeof sendToolCallsDirectly>>();

  const connectTransport = async (upstream: Client): Promise<void> => {
    const transport = options.upstream();
    const checked = useLineReadBuffer(transport);
    await upstream.connect(transport);
    if (checked) dispatchChecked(upstream, transport);
    directs.get(upstream)?.attach(transport);
    tapProgress(transport);
  };

  /** The reconnect under way, shared by tool calls (governClient's hook) and other requests. */
  let reconnecting: Promise<void> | undefined;
  /** Set by `close()`: a request still coming in must not start the server again. */
  let shuttingDown = false;
  const reconnect = (upstream: Client): Promise<void> => {
    reconnecting ??= (async () => {
      await upstream.close().catch(() => undefined);
      await connectTransport(upstream);
    })().finally(() => {
      reconnecting = undefined;
    });
    return reconnecting;
  };

  /**
   * A request other than a tool call, once the real server went away (a stdio child that exited):
   * reconnects as a tool call does, or says the server is not reachable. Without it the SDK
   * answers "Not connected" for ever, and the proxy's own `ping` answered for a dead server.
   */
  const connected = async (upstream: Client): Promise<void> => {
    if (upstream.transport !== undefined && reconnecting === undefined) return;
    if (shuttingDown) {
      throw new JsonRpcError(ErrorCode.InternalError, "governor proxy: the proxy is shutting down");
    }
    try {
      await (reconnecting ?? reconnect(upstream));
    } catch (error) {
      const message = `could not reconnect to the server: ${error instanceof Error ? error.message : String(error)}`;
      options.onConnectError?.(message);
      throw new JsonRpcError(
        ErrorCode.InternalError,
        "governor proxy: the server is not reachable: it went away and could not be started again (see the proxy's stderr)",
      );
    }
  };

  const connectUpstream = async (
    capabilities: ClientCapabilities,
    clientInfo: Implementation,
  ): Promise<Client> => {
    const upstream = new Client(clientInfo, { capabilities });
    directs.set(upstream, sendToolCallsDirectly(upstream));
    // The real server's requests (sampling, elicitation, roots) go to the host, whose own
    // capabilities the SDK checks.
    upstream.fallbackRequestHandler = async (request, extra) => {
      try {
        return await server.request(request as Request as never, ResultSchema, {
          signal: extra.signal,
          ...relatedTo(),
        });
      } catch (error) {
        return forHost(error);
      }
    };
    upstream.fallbackNotificationHandler = async (notification: Notification) => {
      await server.notification(notification as never);
    };
    await connectTransport(upstream);
    return upstream;
  };

  server.setRequestHandler(InitializeRequestSchema, async (request: InitializeRequest) => {
    const base = (await (
      server as unknown as { _oninitialize(r: InitializeRequest): Promise<InitializeResult> }
    )._oninitialize(request)) as InitializeResult;
    if (client !== undefined) {
      throw new JsonRpcError(ErrorCode.InvalidRequest, "governor proxy: already initialized");
    }
    let upstream: Client;
    try {
      upstream = await connectUpstream(request.params.capabilities, request.params.clientInfo);
    } catch (error) {
      const message = `could not connect to the server: ${error instanceof Error ? error.message : String(error)}`;
      options.onConnectError?.(message);
      throw new JsonRpcError(ErrorCode.InternalError, `governor proxy: ${message}`);
    }
    client = upstream;
    realCapabilities = upstream.getServerCapabilities() ?? {};
    governed = governClient(upstream, {
      governor,
      ...(options.server !== undefined && { server: options.server }),
      requestTimeoutMs: timeoutMs,
      reconnect: () => reconnect(upstream),
      ...(options.onTransportError !== undefined && { onTransportError: options.onTransportError }),
    });
    session = createProxySession({
      governor,
      governed,
      ...(options.server !== undefined && { server: options.server }),
      ...(options.windowMs !== undefined && { windowMs: options.windowMs }),
      ...(options.stopTtlMs !== undefined && { stopTtlMs: options.stopTtlMs }),
      timeoutMs,
      log,
      onToolsMaybeChanged: toolsMaybeChanged,
    });
    const instructions = upstream.getInstructions();
    return {
      ...base,
      capabilities: advertised(realCapabilities),
      serverInfo: upstream.getServerVersion() ?? base.serverInfo,
      ...(instructions !== undefined && { instructions }),
      _meta: { [PROXY_META_KEY]: { name: "governor-proxy", version: VERSION } },
    };
  });

  const notInitialized = () =>
    new JsonRpcError(ErrorCode.InvalidRequest, "governor proxy: not initialized");

  const ready = (): { client: Client; governed: GovernedClient; session: ProxySession } => {
    if (client === undefined || governed === undefined || session === undefined) {
      throw notInitialized();
    }
    return { client, governed, session };
  };

  /** Tracks a host request while it is out. */
  const tracked = async <T>(id: RequestId, work: () => Promise<T>): Promise<T> => {
    inFlight.add(id);
    try {
      return await work();
    } finally {
      inFlight.delete(id);
    }
  };

  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) =>
    tracked(extra.requestId, async () => {
      const { governed } = ready();
      try {
        const tools = await governed.listTools({ signal: extra.signal });
        const listed = new Set(tools.map((t) => t.name));
        for (const name of [...hidden]) if (listed.has(name)) hidden.delete(name);
        return { tools };
      } catch (error) {
        return forHost(error);
      }
    }),
  );

  /**
   * One tools/call of the host (taken off the transport by tool-call-route.ts, or the SDK's),
   * tracked while it is out as `tracked` does, without its async frames: the proxy's hot path.
   */
  const callTool = (
    request: CallToolRequest,
    requestId: RequestId,
    signal: AbortSignal,
  ): Promise<CallToolResult> => {
    if (session === undefined) return Promise.reject(notInitialized());
    const { name, arguments: args, _meta } = request.params;
    inFlight.add(requestId);
    const progress = forwardProgress(_meta?.progressToken, requestId);
    // Built field by field: a conditional spread makes an object per field per call.
    const call: { -readonly [K in keyof ProxyCall]: ProxyCall[K] } = { name, signal };
    if (args !== undefined) call.arguments = args;
    if (_meta !== undefined) call.meta = _meta;
    // The gap before the answer, inside the session: a cancel in it is seen there.
    if (progress !== undefined) call.beforeAnswer = progress.done;
    const answered = session.callTool(call);
    if (progress === undefined) {
      // Not `finally`, which adopts the promise of its callback's result: two reactions more
      // between the server's answer and the host's, per call.
      return answered.then(
        (result) => {
          inFlight.delete(requestId);
          return result;
        },
        (error: unknown) => {
          inFlight.delete(requestId);
          throw error;
        },
      );
    }
    return answered.finally(() => progress.done().finally(() => inFlight.delete(requestId)));
  };

  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    callTool(request, extra.requestId, extra.signal),
  );

  // The proxy alone is not the server: a ping goes through, so a dead server is not called alive.
  server.setRequestHandler(PingRequestSchema, (_request, extra) =>
    tracked(extra.requestId, async () => {
      if (client === undefined) return {};
      await connected(client);
      try {
        await client.ping({ signal: extra.signal, timeout: timeoutMs });
      } catch (error) {
        return forHost(error);
      }
      return {};
    }),
  );

  server.setRequestHandler(SetLevelRequestSchema, async (request) => {
    level = request.params.level;
    if (client !== undefined && realCapabilities.logging !== undefined) {
      await connected(client);
      try {
        await client.setLoggingLevel(request.params.level);
      } catch (error) {
        return forHost(error);
      }
    }
    return {};
  });

  server.fallbackRequestHandler = (request, extra) =>
    tracked(extra.requestId, async () => {
      const { client } = ready();
      await connected(client);
      const token = (request.params?._meta as { progressToken?: unknown } | undefined)
        ?.progressToken;
      const progress = forwardProgress(token, extra.requestId);
      try {
        return await client.request(request as never, ResultSchema, {
          signal: extra.signal,
          timeout: timeoutMs,
        });
      } catch (error) {
        return forHost(error);
      } finally {
        await progress?.done();
      }
    });

  server.fallbackNotificationHandler = async (notification) => {
    // A tools/call without an id is no MCP request, but a JSON-RPC server may run a notification
    // (it only sends no answer): passed on, it would be a tool call no run governs. Dropped.
    if (notification.method === "tools/call") return;
    await client?.notification(notification as never);
  };

  return {
    server,
    async connect(transport, connectOptions = {}) {
      await server.connect(transport);
      if (connectOptions.checked === true) dispatchChecked(server, transport);
      routeToolCalls(transport, {
        ready: () => session !== undefined,
        call: callTool,
        onerror: (error) => server.onerror?.(error),
      });
    },
    async close() {
      shuttingDown = true;
      session?.close();
      await client?.close().catch(() => undefined);
      await server.close().catch(() => undefined);
    },
  };
}
