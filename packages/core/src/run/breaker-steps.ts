// The breaker's bookkeeping after an attempt, in the store: advisory, so a store that fails here
// loses a count, nothing more.
import type { MaybePromise } from "../types.ts";
import { type BreakerState, breakerAfter } from "./breaker.ts";
import type { CallState } from "./call-state.ts";
import { isThenable, step } from "./store-guard.ts";
import { storeOp } from "./store-steps.ts";

const ignore = () => {};

/** The call's tool's breaker state, as the store has it. */
export const readBreaker = (state: CallState): MaybePromise<BreakerState | undefined> =>
  state.run.core.readBreaker(state.tool);

/** Breaker bookkeeping after an attempt; a store that fails here loses a count, nothing more. */
export function updateBreaker(
  state: CallState,
  outcome: "success" | "failure",
): MaybePromise<void> {
  // The breaker is advisory: a store that fails here leaves the call's outcome as it is.
  let before: MaybePromise<BreakerState | undefined>;
  try {
    before = storeOp(state, "a breaker read", readBreaker);
  } catch {
    return;
  }
  if (isThenable(before)) return before.then((b) => writeBreaker(state, outcome, b), ignore);
  return writeBreaker(state, outcome, before);
}

function writeBreaker(
  state: CallState,
  outcome: "success" | "failure",
  before: BreakerState | undefined,
): MaybePromise<void> {
  // A success with no breaker state (the common case) writes nothing.
  if (outcome === "success" && before === undefined) return;
  const { core } = state.run;
  const next = breakerAfter(before, state.tool.breaker, outcome, core.now());
  const ttl = state.tool.breaker.cooldownMs * 10 + 60_000;
  const key = core.breakerKey(state.tool.tool, state.tool.server);
  return step(
    () => storeOp(state, "a breaker write", () => core.store.set(key, next ?? null, ttl)),
    ignore,
    ignore,
  );
}
