/**
 * The host's `tools/call` requests, taken off the transport before the SDK's `Server` sees them
 * and answered from the parsed message: the proxy's one hot path. The SDK would check the request
 * against `CallToolRequestSchema` twice, make a request context of closures per call and check the
 * result against `CallToolResultSchema` once more; here the request is checked once, with the same
 * schema, and the answer is written as the SDK writes it (`{result, jsonrpc, id}`, or an `error`
 * with the thrown `code`, `message` and `data`).
 *
 * Only a request the proxy would run anyway is taken: well-formed by the SDK's own schema, not
 * task-augmented, after initialize. Anything else goes on to the SDK, whose answer (its -32603
 * with the schema's issues, its task-capability error, "not initialized") stays exactly its own.
 * A host's `notifications/cancelled` aborts a taken request as the SDK aborts its own (the same
 * schema, the reason given), and no answer is sent for it; the transport closing aborts them all.
 */

import { PlainAbortSignal } from "@governor/mcp";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  CancelledNotificationSchema,
  ErrorCode,
  type JSONRPCMessage,
  RELATED_TASK_META_KEY,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { isPlainObject } from "./jsonrpc-envelope.ts";

/**
 * `work` two microtasks later, as the SDK's `Protocol` starts a request handler: what came before
 * it in the same read (a host's cancel of the identical call, say) is handled first, as it was.
 * `work` returns nothing, so no promise of its own is adopted (two more ticks); and not through
 * `queueMicrotask`, which makes an AsyncResource per call in Node.
 */
function ticks(work: () => void): void {
  RESOLVED.then(undefined).then(work);
}

const RESOLVED = Promise.resolve();

/**
 * Whether `params` are a tools/call's as hosts send them, which `CallToolRequestSchema` accepts
 * as they are: `name` a string, `arguments` an object, `_meta` an object with at most a
 * `progressToken` (a string or an integer) of the keys it checks, nothing else. Such params are
 * used without the schema's copy; any other goes through the schema (the same checks, cost about
 * 8 µs of CPU a call behind the proxy).
 */
export function plainToolCall(params: unknown): boolean {
  if (!isPlainObject(params)) return false;
  let name = false;
  for (const key in params) {
    const value = params[key];
    if (key === "name") {
      if (typeof value !== "string") return false;
      name = true;
    } else if (key === "arguments") {
      if (value !== undefined && !isPlainObject(value)) return false;
    } else if (key === "_meta") {
      if (value === undefined) continue;
      if (!isPlainObject(value) || Object.hasOwn(value, RELATED_TASK_META_KEY)) return false;
      const token = value.progressToken;
      if (token !== undefined && typeof token !== "string" && !Number.isSafeInteger(token)) {
        return false;
      }
    } else {
      return false;
    }
  }
  return name;
}

/** What the route needs of the proxy. */
export interface ToolCallHandler {
  /** Whether a tools/call would be run now (the proxy is initialized). */
  ready(): boolean;
  /** Governs one tools/call; rejects with an error whose `code`, `message`, `data` are the answer. */
  call(
    request: CallToolRequest,
    requestId: RequestId,
    signal: AbortSignal,
  ): Promise<CallToolResult>;
  /** An answer that could not be sent (the SDK's `onerror`). */
  onerror(error: Error): void;
}

/** The answer the SDK's `Server` writes for a handler's throw: its code, message and data. */
function errorAnswer(id: RequestId, thrown: unknown): JSONRPCMessage {
  const error = (typeof thrown === "object" && thrown !== null ? thrown : {}) as {
    code?: unknown;
    message?: string;
    data?: unknown;
  };
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: Number.isSafeInteger(error.code) ? (error.code as number) : ErrorCode.InternalError,
      message: error.message ?? "Internal error",
      ...(error.data !== undefined && { data: error.data }),
    },
  };
}

/**
 * Wraps `transport.onmessage` and `onclose` as the SDK's `Server.connect` set them: call it right
 * after connecting.
 */
export function routeToolCalls(transport: Transport, handler: ToolCallHandler): void {
  const inner = transport.onmessage;
  const innerClose = transport.onclose;
  /**
   * Taken requests out, by id: the signal of each (a set of them while a host reuses an id with its
   * request out; the SDK keeps the later one only). Its cancel of that id, and the transport
   * closing, abort each, so none outlives them.
   */
  const out = new Map<RequestId, PlainAbortSignal | Set<PlainAbortSignal>>();

  const hold = (id: RequestId, signal: PlainAbortSignal): void => {
    const held = out.get(id);
    if (held === undefined) out.set(id, signal);
    else if (held instanceof Set) held.add(signal);
    else out.set(id, new Set([held, signal]));
  };

  const release = (id: RequestId, signal: PlainAbortSignal): void => {
    const held = out.get(id);
    if (held === signal) out.delete(id);
    else if (held instanceof Set) {
      held.delete(signal);
      if (held.size === 0) out.delete(id);
    }
  };

  const abortAll = (
    held: PlainAbortSignal | Set<PlainAbortSignal> | undefined,
    reason?: unknown,
  ): void => {
    if (held instanceof Set) for (const signal of held) signal.abort(reason);
    else held?.abort(reason);
  };

  /** Sends the answer of a request still out (none once the host cancelled it). */
  const finish = (id: RequestId, signal: PlainAbortSignal, message: JSONRPCMessage): void => {
    release(id, signal);
    if (signal.aborted) return;
    let sent: Promise<void>;
    try {
      sent = transport.send(message);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.catch((error: unknown) => handler.onerror(new Error(`Failed to send response: ${error}`)));
  };

  const answer = (request: CallToolRequest & { id: RequestId }, signal: PlainAbortSignal): void => {
    const id = request.id;
    // Started two microtasks later, as the SDK starts a handler (see `ticks`).
    ticks(() => {
      let answered: Promise<CallToolResult>;
      try {
        answered = handler.call(request, id, signal.asSignal());
      } catch (error) {
        answered = Promise.reject(error);
      }
      answered.then(
        (result) => finish(id, signal, { result, jsonrpc: "2.0", id } as JSONRPCMessage),
        (error: unknown) => finish(id, signal, errorAnswer(id, error)),
      );
    });
  };

  /** Takes the request if the proxy runs it; false leaves it to the SDK. */
  const take = (message: JSONRPCMessage & { id: RequestId }): boolean => {
    if (!handler.ready()) return false;
    let request: CallToolRequest & { id: RequestId };
    if (plainToolCall((message as { params?: unknown }).params)) {
      request = message as unknown as CallToolRequest & { id: RequestId };
    } else {
      const parsed = CallToolRequestSchema.safeParse(message);
      if (!parsed.success) return false;
      const params = parsed.data.params;
      if (params.task !== undefined || params._meta?.[RELATED_TASK_META_KEY] !== undefined) {
        return false;
      }
      request = { ...parsed.data, id: message.id };
    }
    const signal = new PlainAbortSignal();
    hold(message.id, signal);
    answer(request, signal);
    return true;
  };

  transport.onmessage = (message, extra) => {
    if ("method" in message) {
      if (message.method === "tools/call" && "id" in message) {
        if (take(message)) return;
      } else if (message.method === "notifications/cancelled" && out.size > 0) {
        const parsed = CancelledNotificationSchema.safeParse(message);
        const id = parsed.success ? parsed.data.params.requestId : undefined;
        // The SDK still gets it, for a request of its own.
        if (id !== undefined) abortAll(out.get(id), parsed.data?.params.reason);
      }
    }
    inner?.(message, extra);
  };

  transport.onclose = () => {
    innerClose?.();
    const held = [...out.values()];
    out.clear();
    for (const signals of held) abortAll(signals);
  };
}
