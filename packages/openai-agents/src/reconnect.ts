import { type Failure, localFailure } from "@governor/core";

/** Node fires a longer timer after 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A reconnect that did not bring the server back: nothing was sent on its account, so the call
 * that waited for it fails as `not_connected` (certainty `not_sent`; the host's `session_expired`).
 */
export class ReconnectFailed extends Error {
  override readonly name = "ReconnectFailed";

  /** The failure Governor judges: `not_connected`, with this text for the host, never the model. */
  failure(): Failure {
    return { ...localFailure("not_connected", this.message), raw: this.cause ?? this };
  }
}

/**
 * One reconnect at a time for every call through a wrapped server. `generation` changes each time
 * one finished, so a call that failed on the connection a reconnect already replaced sends again
 * on the new one instead of replacing it too (which would cut the calls already on it).
 */
export interface Reconnector {
  /** How many reconnects finished; a call notes it before it sends. */
  readonly generation: number;
  /**
   * Reconnects, unless one finished since the caller saw `seen` (then at once); a caller that
   * comes while one runs waits for that one. Bounded by `signal` and the reconnect's own time;
   * throws {@link ReconnectFailed} when the server is not back.
   */
  renew(seen: number, signal: AbortSignal | undefined): Promise<void>;
}

/**
 * The {@link Reconnector} around the host's `reconnect` hook. The hook gets a signal that aborts
 * once `limitMs` passed; it goes on as long as it runs (a server's `connect()` takes no signal),
 * and callers that come meanwhile wait for it, not for another.
 */
export function createReconnector(
  reconnect: (signal: AbortSignal) => Promise<void>,
  limitMs: number,
  describe: (error: unknown) => string,
): Reconnector {
  let generation = 0;
  let running: Promise<void> | undefined;

  const start = (): Promise<void> => {
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error(`did not finish within ${limitMs} ms`)),
      Math.min(limitMs, MAX_TIMER_MS),
    );
    // Not an async function: a hook that throws at once must still leave `running` cleared.
    const attempt = Promise.resolve()
      .then(() => reconnect(controller.signal))
      .then(() => {
        generation += 1;
      });
    running = attempt;
    attempt
      .finally(() => {
        clearTimeout(timer);
        if (running === attempt) running = undefined;
      })
      .catch(() => undefined);
    return attempt;
  };

  return {
    get generation() {
      return generation;
    },
    async renew(seen, signal) {
      if (generation !== seen) return;
      const attempt = running ?? start();
      try {
        await bounded(attempt, limitMs, signal);
      } catch (error) {
        if (error instanceof ReconnectFailed) throw error;
        throw new ReconnectFailed(`Reconnect failed: ${describe(error)}`, { cause: error });
      }
    },
  };
}

/** `promise`, or a {@link ReconnectFailed} once `ms` passed or `signal` aborted. */
function bounded(promise: Promise<void>, ms: number, signal: AbortSignal | undefined) {
  if (signal?.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(new ReconnectFailed("Aborted while reconnecting"));
  }
  return new Promise<void>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      done();
      reject(new ReconnectFailed("Aborted while reconnecting"));
    };
    const timer = setTimeout(
      () => {
        done();
        reject(new ReconnectFailed(`Reconnect did not finish within ${ms} ms`));
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(
      () => {
        done();
        resolve();
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}
