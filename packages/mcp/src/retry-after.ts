import { parseRetryAfter } from "@governor/core/judge";

/** A `fetch` for the HTTP transports (Streamable HTTP, legacy SSE) that remembers the last `Retry-After` header. */
export interface RetryAfterFetch {
  /** Pass this as the transport's `fetch` option. */
  readonly fetch: typeof fetch;
  /**
   * Takes (and clears) the hint of the last response, in ms from when it arrived, if that response
   * failed with a `Retry-After` header. `governClient` calls it when a call fails.
   */
  take(): number | undefined;
}

/**
 * `StreamableHTTPError` carries only the status and body (the legacy SSE transport's refused POST
 * only its message), so a 429/503's `Retry-After` header is lost. Wrap the transport's fetch
 * with this to keep it for classification (`SSEClientTransport` takes the same `fetch` option). Every response
 * replaces the last hint, so a hint never outlives the response after it.
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
  let last: number | undefined;
  const wrapped = (async (
    input: Parameters<typeof fetch>[0],
    init?: Parameters<typeof fetch>[1],
  ) => {
    const response = await inner(input, init);
    const header = response.ok ? null : response.headers.get("retry-after");
    last = header === null ? undefined : parseRetryAfter(header, now());
    return response;
  }) as typeof fetch;
  return {
    fetch: wrapped,
    take() {
      const value = last;
      last = undefined;
      return value;
    },
  };
}
