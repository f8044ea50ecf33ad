import { parseRetryAfter } from "@governor/core";

/** A `fetch` for the Streamable HTTP transport that remembers the last `Retry-After` header. */
export interface RetryAfterFetch {
  /** Pass this as the transport's `fetch` option. */
  readonly fetch: typeof fetch;
  /** Takes (and clears) the last captured hint, in ms. */
  take(): number | undefined;
}

/**
 * `StreamableHTTPError` carries only the status and body, so a 429/503's `Retry-After` header is
 * lost. Wrap the transport's fetch with this to keep it for classification.
 * @example
 * const retryAfter = captureRetryAfter();
 * const transport = new StreamableHTTPClientTransport(url, { fetch: retryAfter.fetch });
 * const governed = governClient(client, { governor, retryAfter });
 */
export function captureRetryAfter(inner: typeof fetch = fetch, now: () => number = Date.now): RetryAfterFetch {
  let last: number | undefined;
  const wrapped = (async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const response = await inner(input, init);
    if (!response.ok) {
      const header = response.headers.get("retry-after");
      const ms = header === null ? undefined : parseRetryAfter(header, now());
      if (ms !== undefined) last = ms;
    }
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
