import { AsyncLocalStorage } from "node:async_hooks";
import { parseRetryAfter } from "@governor/core/judge";

/** Where the hint of one attempt's responses is kept: the attempt's own object. */
export interface RetryAfterSlot {
  /**
   * The `Retry-After` of the last response to a request the attempt made, in ms from when it
   * arrived, if that response failed with the header; else undefined.
   */
  retryAfterMs: number | undefined;
}

/** A `fetch` for the HTTP transports (Streamable HTTP, legacy SSE) that keeps `Retry-After` headers. */
export interface RetryAfterFetch {
  /** Pass this as the transport's `fetch` option. */
  readonly fetch: typeof fetch;
  /**
   * Runs `send`, and keeps on `slot` the hint of the responses to the requests `send` makes
   * through `fetch` (in its async context): a request's hint is its own call's, never another
   * call's at the same time. `governClient` runs each attempt's SDK call with it. A request made
   * outside it (connecting, a tool listing, a call not governed) keeps no hint.
   */
  within<T>(slot: RetryAfterSlot, send: () => T): T;
}

/**
 * `StreamableHTTPError` carries only the status and body (the legacy SSE transport's refused POST
 * only its message), so a 429/503's `Retry-After` header is lost. Wrap the transport's fetch
 * with this to keep it for classification (`SSEClientTransport` takes the same `fetch` option).
 *
 * The SDK gives a call no handle on its HTTP request (the JSON-RPC id it numbers the request with
 * is its own, never returned), so the tie is the async context: the SDK makes the POST of a call
 * within the call (`Protocol.request` sends before it returns its promise), and the fetch finds
 * the attempt that made it. Every response to an attempt's requests replaces its hint, so a hint
 * never outlives the response after it.
 * @param inner the fetch to wrap. @default globalThis.fetch
 * @param now the clock (epoch ms), for HTTP-date hints. @default Date.now
 * @example
 * const retryAfter = captureRetryAfter();
 * const transport = new StreamableHTTPClientTransport(url, { fetch: retryAfter.fetch });
 * const governed = governClient(client, { governor, retryAfter });
 */
export function captureRetryAfter(
  inner: typeof fetch = (input, init) => fetch(input, init),
  now: () => number = Date.now,
): RetryAfterFetch {
  const attempt = new AsyncLocalStorage<RetryAfterSlot>();
  const wrapped = (async (
    input: Parameters<typeof fetch>[0],
    init?: Parameters<typeof fetch>[1],
  ) => {
    const slot = attempt.getStore();
    const response = await inner(input, init);
    if (slot !== undefined) {
      const header = response.ok ? null : response.headers.get("retry-after");
      slot.retryAfterMs = header === null ? undefined : parseRetryAfter(header, now());
    }
    return response;
  }) as typeof fetch;
  return {
    fetch: wrapped,
    within: (slot, send) => attempt.run(slot, send),
  };
}
