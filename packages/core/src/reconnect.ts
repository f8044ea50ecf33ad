// One reconnect at a time for an adapter whose SDK client cannot reconnect by itself (the OpenAI
// Agents SDK's MCP servers, @ai-sdk/mcp's client): the adapter sends a call that found the server
// gone once more after it, and only such a call (nothing was sent on that attempt). Which calls are
// attempted again after a connection lost mid-call is the run's rule, never this module's.

import { GovernorError } from "./errors.ts";
import { type Failure, localFailure } from "./judge/failure.ts";
import { redact } from "./judge/redact.ts";
import { MAX_TIMER_MS } from "./run/waits.ts";

/**
 * A reconnect that did not bring the server back: nothing was sent on its account, so the call
 * that waited for it fails as `not_connected` (certainty `not_sent`; the host's `session_expired`).
 * Its message is for the host, never the model.
 */
export class ReconnectFailed extends Error {
  override readonly name = "ReconnectFailed";

  /** The failure Governor judges: `not_connected`, with this text for the host, never the model. */
  failure(): Failure {
    return { ...localFailure("not_connected", this.message), raw: this.cause ?? this };
  }
}

/**
 * One reconnect at a time for every call through a server. `generation` changes each time one
 * finished, so a call that failed on the connection a reconnect already replaced sends again on
 * the new one instead of replacing it too (which would cut the calls already on it).
 */
export interface Reconnector {
  /** How many reconnects finished; a call notes it before it sends. */
  readonly generation: number;
  /**
   * Reconnects, unless one finished since the caller saw `seen` (then at once); a caller that
   * comes while one runs waits for that one. Bounded by `signal` (pass the attempt's: the run's
   * abort and deadline) and by the reconnect's own time; throws {@link ReconnectFailed} when the
   * server is not back.
   */
  renew(seen: number, signal: AbortSignal | undefined): Promise<void>;
}

/** Options of {@link createReconnector}. */
export interface ReconnectorOptions {
  /** Upper bound of one reconnect and of each caller's wait for it, a positive number of ms. */
  readonly limitMs: number;
  /**
   * The host-facing text of what the hook threw (it may quote a server's answer, a path or a
   * command line). @default its message, redacted with the built-in redaction
   */
  readonly describe?: (error: unknown) => string;
}

/**
 * The {@link Reconnector} around a host's `reconnect` hook. The hook gets a signal that aborts
 * once `limitMs` passed; it goes on as long as it runs (a server's `connect()` may take no
 * signal), and callers that come meanwhile wait for it, not for another.
 * @example
 * const reconnector = createReconnector(async () => { await server.close(); await server.connect(); }, { limitMs: 30_000 });
 * const seen = reconnector.generation;
 * try { return await send(); } catch (error) { if (!foundGone(error)) throw error; }
 * await reconnector.renew(seen, ctx.signal); // throws ReconnectFailed: toFailure → error.failure()
 * return send();
 */
export function createReconnector(
  reconnect: (signal: AbortSignal) => Promise<void>,
  options: ReconnectorOptions,
): Reconnector {
  if (typeof reconnect !== "function") {
    throw new GovernorError(
      "invalid_options",
      `createReconnector: reconnect must be a function (signal) => Promise<void>, got ${typeof reconnect}`,
    );
  }
  const limitMs = options?.limitMs;
  if (typeof limitMs !== "number" || !(limitMs > 0)) {
    throw new GovernorError(
      "invalid_options",
      `createReconnector: limitMs must be a positive number of ms, got ${String(limitMs)}`,
    );
  }
  const describe = options.describe ?? describeRedacted;
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

/** The message of what a hook threw, redacted (a spawn's path, a token in a URL). */
function describeRedacted(error: unknown): string {
  let text: string;
  try {
    text = error instanceof Error ? error.message : String(error);
  } catch {
    text = "unreadable error";
  }
  return redact(text);
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
