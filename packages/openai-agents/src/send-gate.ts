import { AsyncLocalStorage } from "node:async_hooks";
import { type AttemptContext, GovernorError, type Run } from "@governor/core";

/**
 * One governed attempt of `governMcpServer`, as the fetch of its server's transport sees it: the
 * attempt's context (whose `beforeSending` says whether it may still send), its run, its tool,
 * and whether a `tools/call` of it went out already.
 */
interface AttemptSends {
  readonly ctx: AttemptContext;
  readonly run: Run;
  readonly tool: string;
  wentOut: boolean;
}

/**
 * The attempt a request belongs to. The SDK gives a call no handle on its HTTP request, so the tie
 * is the async context: `governMcpServer` runs each attempt's SDK call inside it, and the SDK
 * makes that call's POSTs within the call, its own reconnect and second try included (they are
 * awaited inside `callToolResult`). One store for every wrapper and every `governedFetch`: a
 * server built once serves the wrappers of many runs.
 */
const attempts = new AsyncLocalStorage<AttemptSends>();

/** Runs `send` (one attempt's SDK call) with its requests tied to the attempt. */
export function withAttemptSends<T>(
  ctx: AttemptContext,
  run: Run,
  tool: string,
  send: () => Promise<T>,
): Promise<T> {
  return attempts.run({ ctx, run, tool, wentOut: false }, send);
}

/**
 * A `fetch` for `MCPServerStreamableHttp` (its `fetch` option; `MCPServerSSE` takes the same)
 * that sends nothing more of a governed write once a stop ended its run.
 *
 * `MCPServerStreamableHttp` reconnects by itself when its client lost its transport, and sends the
 * call once more, inside one Governor attempt and out of its sight. A stop cuts the reads in
 * flight, but not a write (cutting one already on the wire would leave its outcome in doubt), so
 * without this its second try went out after the run ended. This fetch sees every request the
 * server's transports make, the ones its reconnect makes too (the SDK hands `fetch` to each new
 * transport). Before the first `tools/call` of a governed attempt goes out it asks Governor
 * whether the attempt may still send (`AttemptContext.beforeSending`): when the run ended, the
 * attempt is settled as not sent (its key freed, certain: nothing reached the server) and this
 * fetch throws without sending a byte. Once a `tools/call` of the attempt went out, the rest of
 * the attempt's requests go out as they come (the transport's own send again after a 401, a
 * stream resumed): the attempt was on the wire before the stop, and a stop lets such an attempt
 * finish; refusing them could only turn what the server may have done into a doubt.
 *
 * Requests made outside a governed attempt (connecting, listing tools, a call not governed) and
 * every other request go out as they are.
 * @param inner the fetch to send with. @default globalThis.fetch
 * @example
 * const notes = new MCPServerStreamableHttp({ url, name: "notes", fetch: governedFetch() });
 */
export function governedFetch(
  inner: typeof fetch = (input, init) => fetch(input, init),
): typeof fetch {
  if (typeof inner !== "function") {
    throw new GovernorError(
      "invalid_options",
      `governedFetch: inner must be a fetch function, got ${typeof inner}`,
    );
  }
  return (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const attempt = attempts.getStore();
    if (attempt !== undefined && !attempt.wentOut && callsTool(init, attempt.tool)) {
      // Throws, with the attempt settled as not sent, when it may not send any more: its run
      // ended, it was cut, its deadline passed.
      await attempt.ctx.beforeSending(Promise.resolve());
      // `beforeSending` answers a microtask or more after its own check: a stop decided in between
      // is read here, in the same turn as the request is handed on, and asked about once more,
      // which cuts the attempt. (In observe-only mode an ended run cuts nothing, and the request
      // goes out, as every call there does.)
      if (attempt.run.ended) await attempt.ctx.beforeSending(Promise.resolve());
      // Marked before the request is handed on: from here on it may reach the server.
      attempt.wentOut = true;
    }
    return inner(input, init);
  }) as typeof fetch;
}

/**
 * Whether a request is a JSON-RPC `tools/call` of `tool` (alone or in a batch): the attempt's own
 * call. Anything else (an initialize, a GET, a body that is not JSON text) is not.
 */
function callsTool(init: Parameters<typeof fetch>[1], tool: string): boolean {
  const body = init?.body;
  if (typeof body !== "string" || (init?.method ?? "GET").toUpperCase() !== "POST") return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return false;
  }
  const messages = Array.isArray(parsed) ? parsed : [parsed];
  return messages.some(
    (m) =>
      typeof m === "object" &&
      m !== null &&
      (m as { method?: unknown }).method === "tools/call" &&
      (m as { params?: { name?: unknown } }).params?.name === tool,
  );
}
