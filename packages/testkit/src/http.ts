import { randomUUID } from "node:crypto";
import {
  createServer,
  type Server as HttpServer,
  type IncomingMessage,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { createFaultServer, type FaultContext, type FaultServerOptions } from "./fault-server.ts";
import { createLowLevelServer, type LowLevelServerOptions } from "./lowlevel-server.ts";
import { FaultState } from "./scenario.ts";

/**
 * A failure answered at the HTTP layer, before any JSON-RPC handling: the response has `status`,
 * a `Retry-After` header when `retryAfter` is set, and a plain-text body.
 */
export interface HttpFault {
  status: number;
  /** `Retry-After` header value: seconds, or an HTTP date. */
  retryAfter?: number | string;
  /** JSON-RPC method the request must carry (default `"tools/call"`). */
  method?: string;
  /** For `tools/call`, only calls of this tool (default: any tool). */
  tool?: string;
  /** How many matching requests fail (default 1). */
  times?: number;
  /** Response body (default `"<status> <reason>"`). */
  body?: string;
}

export interface HttpFaultServerOptions
  extends Pick<FaultServerOptions, "effectsFile" | "scenario" | "secret" | "name">,
    Pick<LowLevelServerOptions, "endlessToolPages" | "toolPageDelayMs"> {
  /** Serve the low-level (JSON-RPC errors) server instead of the McpServer one. */
  lowlevel?: boolean;
  /**
   * Answer POSTs with plain JSON (default `true`) rather than an SSE stream. With JSON, a
   * connection destroyed mid-call makes the client's `fetch` reject (`TypeError: fetch failed`).
   */
  jsonResponse?: boolean;
  /** HTTP-layer faults armed from the start (see {@link HttpFaultServer.injectHttpFault}). */
  httpFaults?: HttpFault[];
}

/** One JSON-RPC request the HTTP server received, and the HTTP status it answered with. */
export interface HttpRequestRecord {
  /** The JSON-RPC method (`tools/call`, `tools/list`, `initialize`…). */
  readonly method: string;
  /** For `tools/call`, the tool's name. */
  readonly tool: string | undefined;
  /** The HTTP status of the answer: 404 for a gone session, a fault's status, else the transport's. */
  readonly status: number;
}

export interface HttpFaultServer {
  /** The MCP endpoint, `http://127.0.0.1:<random port>/mcp`. */
  url: string;
  /** Counters and effects, shared by the servers of all sessions. */
  state: FaultState;
  /** Arms an HTTP-layer fault for the next matching request(s). */
  injectHttpFault(fault: HttpFault): void;
  /**
   * Forgets every session (closing its transport and server): the next request carrying an old
   * `mcp-session-id` gets `404` with JSON-RPC error -32001 `Session not found`. Returns how many.
   */
  expireSessions(): Promise<number>;
  /** Live sessions. */
  sessionCount(): number;
  /**
   * Every JSON-RPC request received so far (notifications excluded), in order of their answers:
   * what reached the server and what it refused, counted at the server.
   */
  requests(): HttpRequestRecord[];
  /** Closes every session and connection, then the listener. */
  close(): Promise<void>;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  server: { connect(transport: Transport): Promise<void>; close(): Promise<void> };
}

interface ArmedFault extends HttpFault {
  remaining: number;
}

const SESSION_NOT_FOUND = JSON.stringify({
  jsonrpc: "2.0",
  error: { code: -32001, message: "Session not found" },
  id: null,
});

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function messagesOf(body: unknown): Record<string, unknown>[] {
  const list = Array.isArray(body) ? body : [body];
  return list.filter((m): m is Record<string, unknown> => m !== null && typeof m === "object");
}

function matches(fault: HttpFault, message: Record<string, unknown>): boolean {
  if (message.method !== (fault.method ?? "tools/call")) return false;
  if (fault.tool === undefined) return true;
  const params = message.params as Record<string, unknown> | undefined;
  return params?.name === fault.tool;
}

/**
 * Serves the fault server over Streamable HTTP on 127.0.0.1 (random port), sessionful: one SDK
 * transport and one server instance per `mcp-session-id`, all sharing one {@link FaultState}.
 * Tools that make the server "go away" destroy the socket of the request that called them.
 */
export async function startHttpServer(
  options: HttpFaultServerOptions = {},
): Promise<HttpFaultServer> {
  const state = new FaultState({
    ...(options.effectsFile !== undefined ? { effectsFile: options.effectsFile } : {}),
    ...(options.scenario !== undefined ? { scenario: options.scenario } : {}),
  });
  const sessions = new Map<string, Session>();
  const inflight = new Map<string, ServerResponse>();
  const faults: ArmedFault[] = (options.httpFaults ?? []).map((f) => ({
    ...f,
    remaining: f.times ?? 1,
  }));
  const jsonResponse = options.jsonResponse ?? true;
  const requestLog: HttpRequestRecord[] = [];

  const dropConnection = (context: FaultContext): void => {
    const res = inflight.get(`${context.sessionId ?? ""} ${String(context.requestId)}`);
    res?.socket?.destroy();
    res?.destroy();
  };

  const newSession = (): Session => {
    let session: Session | undefined;
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: jsonResponse,
      onsessioninitialized: (id) => {
        if (session) sessions.set(id, session);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    const server = options.lowlevel
      ? createLowLevelServer({
          ...(options.secret !== undefined ? { secret: options.secret } : {}),
          ...(options.endlessToolPages !== undefined
            ? { endlessToolPages: options.endlessToolPages }
            : {}),
          ...(options.toolPageDelayMs !== undefined
            ? { toolPageDelayMs: options.toolPageDelayMs }
            : {}),
          ...(options.name !== undefined ? { name: options.name } : {}),
        })
      : createFaultServer({
          state,
          ...(options.secret !== undefined ? { secret: options.secret } : {}),
          ...(options.name !== undefined ? { name: options.name } : {}),
          onExit: dropConnection,
        });
    session = { transport, server };
    return session;
  };

  const takeFault = (body: unknown): ArmedFault | undefined => {
    for (const message of messagesOf(body)) {
      const fault = faults.find((f) => f.remaining > 0 && matches(f, message));
      if (fault) {
        fault.remaining--;
        return fault;
      }
    }
    return undefined;
  };

  const logRequests = (body: unknown, res: ServerResponse): void => {
    const requests = messagesOf(body).filter(
      (m) => typeof m.method === "string" && m.id !== undefined,
    );
    if (requests.length === 0) return;
    res.on("close", () => {
      for (const m of requests) {
        const params = m.params as Record<string, unknown> | undefined;
        const tool = m.method === "tools/call" ? params?.name : undefined;
        requestLog.push({
          method: m.method as string,
          tool: typeof tool === "string" ? tool : undefined,
          status: res.statusCode,
        });
      }
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname !== "/mcp") {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not Found");
      return;
    }
    let body: unknown;
    if (req.method === "POST") {
      const raw = await readBody(req);
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400, { "content-type": "application/json" }).end(
          JSON.stringify({
            jsonrpc: "2.0",
            error: { code: -32700, message: "Parse error" },
            id: null,
          }),
        );
        return;
      }
      logRequests(body, res);
      const fault = takeFault(body);
      if (fault) {
        const headers: Record<string, string> = { "content-type": "text/plain" };
        if (fault.retryAfter !== undefined) headers["retry-after"] = String(fault.retryAfter);
        res
          .writeHead(fault.status, headers)
          .end(fault.body ?? `${fault.status} ${STATUS_CODES[fault.status] ?? "Error"}`);
        return;
      }
    }
    const header = req.headers["mcp-session-id"];
    const sessionId = Array.isArray(header) ? header[0] : header;
    let session: Session | undefined;
    if (sessionId !== undefined) {
      session = sessions.get(sessionId);
      if (!session) {
        res.writeHead(404, { "content-type": "application/json" }).end(SESSION_NOT_FOUND);
        return;
      }
    } else if (req.method === "POST" && messagesOf(body).some((m) => isInitializeRequest(m))) {
      session = newSession();
      await session.server.connect(session.transport);
    } else {
      res.writeHead(400, { "content-type": "application/json" }).end(
        JSON.stringify({
          jsonrpc: "2.0",
          error: { code: -32000, message: "Bad Request: No valid session ID provided" },
          id: null,
        }),
      );
      return;
    }
    for (const message of messagesOf(body)) {
      if (typeof message.method === "string" && message.id !== undefined) {
        const key = `${sessionId ?? ""} ${String(message.id)}`;
        inflight.set(key, res);
        res.on("close", () => {
          if (inflight.get(key) === res) inflight.delete(key);
        });
      }
    }
    await session.transport.handleRequest(req, res, body);
  };

  const closeSession = async (session: Session): Promise<void> => {
    await session.transport.close().catch(() => {});
    await session.server.close().catch(() => {});
  };

  const http: HttpServer = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "text/plain" }).end(String(error));
      } else {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = http.address() as AddressInfo;

  const expireSessions = async (): Promise<number> => {
    const all = [...sessions.values()];
    sessions.clear();
    await Promise.all(all.map(closeSession));
    return all.length;
  };

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    injectHttpFault: (fault) => {
      faults.push({ ...fault, remaining: fault.times ?? 1 });
    },
    expireSessions,
    sessionCount: () => sessions.size,
    requests: () => [...requestLog],
    close: async () => {
      await expireSessions();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
