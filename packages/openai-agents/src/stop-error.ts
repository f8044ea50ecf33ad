import { GovernorError, GovernorStopError, type HostError } from "@governor/core";

/**
 * Thrown by a governed tool when Governor stops the run: the Agents SDK ends `run()` with it (as
 * the `error` of the `ToolCallError` it throws; {@link governorStopOf} finds it). The class is
 * `@governor/core`'s, the same for every adapter. The model never reads it.
 */
export { GovernorStopError };

/** How deep {@link governorStopOf} looks through `error` / `cause` links. */
const MAX_DEPTH = 8;

/**
 * Finds the {@link GovernorStopError} in what `run()` threw: the Agents SDK wraps a tool's error
 * in a `ToolCallError` (its `error` field) and may wrap that again (`cause`). Returns `undefined`
 * when the run did not end because Governor stopped it.
 * @example
 * try {
 *   await run(agent, input);
 * } catch (error) {
 *   const stop = governorStopOf(error);
 *   if (!stop) throw error;
 *   report(stop.reason, stop.idempotencyKey, stop.summary);
 * }
 */
export function governorStopOf(error: unknown): GovernorStopError | undefined {
  // By marker and name, not `instanceof`: another copy of this package may have thrown it.
  return findInChain(error, GovernorStopError.isStop);
}

/**
 * Finds the {@link HostError} in what `run()` threw, the counterpart of {@link governorStopOf}: a
 * failure only the host can handle (a JSON-RPC error from the server, a broken session, a tool
 * that threw something that is not an error, Governor's own store failing) ends `run()` with the
 * SDK's `ToolCallError`, whose `error` is the `HostError` (or a `GovernorStopError` whose `cause`
 * is one, when the host's `onHostError` hook answered with a stop). Returns `undefined` when the
 * run did not end with one (any other stop, or the SDK's own error).
 * @example
 * try {
 *   await run(agent, input);
 * } catch (error) {
 *   const host = hostErrorOf(error);
 *   if (host?.reason === "session_expired") return reconnectAndRetry();
 *   throw error;
 * }
 */
export function hostErrorOf(error: unknown): HostError | undefined {
  // By marker and code, not `instanceof`: another copy of @governor/core may have thrown it.
  return findInChain(error, isHostError);
}

function isHostError(value: unknown): value is HostError {
  return GovernorError.isInstance(value) && value.code === "host_error";
}

/**
 * Finds the first value in `error`'s chain (`error` field, then `cause`) that matches `test`;
 * bounded, and safe against cycles and throwing getters.
 */
export function findInChain<T>(
  error: unknown,
  test: (value: unknown) => value is T,
): T | undefined {
  const seen = new Set<unknown>();
  let current: unknown = error;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    if (current === null || typeof current !== "object" || seen.has(current)) return undefined;
    if (test(current)) return current;
    seen.add(current);
    try {
      const record = current as { error?: unknown; cause?: unknown };
      current = record.error instanceof Error ? record.error : record.cause;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
