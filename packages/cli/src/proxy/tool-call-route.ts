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
 * `work` after two microtasks, as the SDK's `Protocol` starts a request handler: what came before
 * it in the same read (a host's cancel of the identical call, say) is handled first, as it was.
 */
function ticks<T>(work: () => Promise<T>): Promise<T> {
  return Promise.resolve().then(undefined).then(work);
}

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

/**
 * Wraps `transport.onmessage` and `onclose` as the SDK's `Server.connect` set them: call it right
 * after connecting.
 */
export function routeToolCalls(transport: Transport, handler: ToolCallHandler): void {
  const inner = transport.onmessage;
  const innerClose = transport.onclose;
  /**
   * Taken requests out, by id. A host that reuses an id while its request is out has them all
   * here (the SDK keeps the later one only): its cancel of that id, and the transport closing,
   * abort each, so none outlives them.
   */
  const out = new Map<RequestId, Set<AbortController>>();

  const answer = (
    request: CallToolRequest & { id: RequestId },
    controller: AbortController,
  ): void => {
    const id = request.id;
    // Started two microtasks later, as the SDK starts a handler (see `ticks`).
    ticks(() => handler.call(request, id, controller.signal))
      .then(
        (result) => {
          if (controller.signal.aborted) return;
          return transport.send({ result, jsonrpc: "2.0", id } as JSONRPCMessage);
        },
        (error: { code?: unknown; message?: string; data?: unknown }) => {
          if (controller.signal.aborted) return;
          return transport.send({
            jsonrpc: "2.0",
            id,
            error: {
              code: Number.isSafeInteger(error.code)
                ? (error.code as number)
                : ErrorCode.InternalError,
              message: error.message ?? "Internal error",
              ...(error.data !== undefined && { data: error.data }),
            },
          });
        },
      )
      .catch((error: unknown) => handler.onerror(new Error(`Failed to send response: ${error}`)))
      .finally(() => {
        const same = out.get(id);
        same?.delete(controller);
        if (same?.size === 0) out.delete(id);
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
    const controller = new AbortController();
    const same = out.get(message.id);
    if (same === undefined) out.set(message.id, new Set([controller]));
    else same.add(controller);
    answer(request, controller);
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
        const reason = parsed.data?.params.reason;
        if (id !== undefined) for (const controller of out.get(id) ?? []) controller.abort(reason);
      }
    }
    inner?.(message, extra);
  };

  transport.onclose = () => {
    innerClose?.();
    for (const same of out.values()) for (const controller of same) controller.abort();
    out.clear();
  };
}
