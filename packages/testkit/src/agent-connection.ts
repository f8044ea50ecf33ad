import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type {
  Transport,
  TransportSendOptions,
} from "@modelcontextprotocol/sdk/shared/transport.js";
import type {
  JSONRPCMessage,
  MessageExtraInfo,
  RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { waitForExit } from "./clients.ts";
import { type StdioFaultServerOptions, stdioServerParams } from "./stdio.ts";

/** What went over the wire, counted at the transport (the same for every runtime). */
export interface WireCounts {
  /** `tools/call` requests sent: every attempt that reached the server, retries included. */
  readonly toolCalls: number;
  /**
   * Of those, the ones whose result the client could not use: an `isError` result, a JSON-RPC
   * error, or no answer at all (the connection closed, or the client cancelled it on timeout).
   */
  readonly failedCalls: number;
}

interface Counter {
  toolCalls: number;
  failedCalls: number;
  readonly pending: Set<RequestId>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/**
 * Wraps a transport to count `tools/call` requests and how they ended. Pending calls count as
 * failed when the connection closes or the client cancels them.
 */
class CountingTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void;

  constructor(
    private readonly inner: Transport,
    private readonly counter: Counter,
    onClosed: () => void,
  ) {
    inner.onclose = () => {
      counter.failedCalls += counter.pending.size;
      counter.pending.clear();
      onClosed();
      this.onclose?.();
    };
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => {
      const m = message as Record<string, unknown>;
      const id = m.id as RequestId | undefined;
      if (id !== undefined && !("method" in m) && counter.pending.delete(id)) {
        const failed = "error" in m || (isRecord(m.result) && m.result.isError === true);
        if (failed) counter.failedCalls += 1;
      }
      this.onmessage?.(message, extra);
    };
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const m = message as Record<string, unknown>;
    if (m.method === "tools/call" && m.id !== undefined) {
      this.counter.toolCalls += 1;
      this.counter.pending.add(m.id as RequestId);
    } else if (m.method === "notifications/cancelled" && isRecord(m.params)) {
      const id = m.params.requestId as RequestId;
      if (this.counter.pending.delete(id)) this.counter.failedCalls += 1;
    }
    return this.inner.send(message, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * A client connected to the fault server in a child process over stdio, which the host can
 * reconnect (a new child on the same effects file: the server's script and key ledger carry on)
 * after the server went away mid-call. Counts what went over the wire.
 */
export interface FaultConnection {
  /** The SDK client; the same object across reconnects. */
  readonly client: Client;
  /** Whether the connection is closed (the child went away) and not yet reconnected. */
  readonly closed: boolean;
  /** Spawns a new child and connects the client to it, when the connection is closed. */
  reconnect(): Promise<void>;
  /** Counts since the connection was opened (across reconnects). */
  counts(): WireCounts;
  /** Closes the client and waits for every child spawned to exit. */
  close(): Promise<void>;
}

/** Spawns the fault server (see `stdioServerParams`) and connects a counting client to it. */
export async function connectFaultServer(
  options: StdioFaultServerOptions = {},
): Promise<FaultConnection> {
  const client = new Client({ name: "governor-scripted-agent", version: "0.1.0" });
  const counter: Counter = { toolCalls: 0, failedCalls: 0, pending: new Set() };
  const pids: number[] = [];
  let closed = true;
  let connecting: Promise<void> | undefined;

  const connect = async () => {
    const stdio = new StdioClientTransport(stdioServerParams(options));
    const transport = new CountingTransport(stdio, counter, () => {
      closed = true;
    });
    await client.connect(transport);
    if (stdio.pid !== null) pids.push(stdio.pid);
    closed = false;
  };

  const reconnect = async () => {
    if (!closed) return;
    connecting ??= connect().finally(() => {
      connecting = undefined;
    });
    await connecting;
  };

  await reconnect();
  return {
    client,
    get closed() {
      return closed;
    },
    reconnect,
    counts: () => ({ toolCalls: counter.toolCalls, failedCalls: counter.failedCalls }),
    async close() {
      await client.close().catch(() => undefined);
      await Promise.all(pids.map((pid) => waitForExit(pid)));
    },
  };
}
