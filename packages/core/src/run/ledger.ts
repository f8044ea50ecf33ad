// The ledger steps around an attempt: the claim of a keyed call (with the first attempt's count
// against the server's retry budget) before it, and settling its key after it.
import { fingerprint } from "../judge/fingerprint.ts";
import { composeMessage } from "../judge/message.ts";
import type { MaybePromise, Reason } from "../types.ts";
import { type CallState, noteSuccess } from "./call-state.ts";
import { isAborted } from "./cuts.ts";
import { emitCall } from "./events.ts";
import { modelResult, plainStop, preflightStop, stopOutcome } from "./outcomes.ts";
import { isStoreError, isThenable, step } from "./store-guard.ts";
import { storeOp, storeTrouble } from "./store-steps.ts";
import type { CallOutcome } from "./types.ts";
import { guardedAsync } from "./waits.ts";

const ignore = () => {};

/** Counts a first attempt against the server's retry budget window. */
const countCall = (state: CallState): MaybePromise<unknown> =>
  state.run.core.countCall(state.call.server);

/**
 * Settles a key; a result the store cannot keep (not JSON) is dropped, the state is not. A store
 * that fails throws a `store_error`: the entry stays pending, and a pending entry whose lease has
 * passed counts as uncertain (fail closed).
 */
export function settle(
  state: CallState,
  key: string,
  to: "succeeded" | "failed" | "uncertain",
  result?: unknown,
): MaybePromise<void> {
  const { core } = state.run;
  const claimed = state.claimedAt === undefined ? {} : { claimedAt: state.claimedAt };
  const write = (withResult: boolean) =>
    storeOp(state, "a ledger settle", () =>
      core.store.settle(
        key,
        to,
        withResult ? { now: core.now(), result, ...claimed } : { now: core.now(), ...claimed },
      ),
    );
  if (result === undefined) return write(false);
  return step(
    () => write(true),
    ignore,
    (error) => {
      // A result that is not JSON (a BigInt, a cycle) is dropped; any other failure stands.
      const cause = isStoreError(error) ? error.cause : error;
      if (!(cause instanceof TypeError)) throw error;
      return write(false);
    },
  );
}

/**
 * Before an attempt: the ledger claim (keyed calls) and the retry-budget count (first attempts).
 * Undefined lets the attempt go.
 */
export function claimAndCount<T>(state: CallState): MaybePromise<CallOutcome<T> | undefined> {
  // Observe-only sends calls untouched, store or no store.
  if (state.key === undefined || state.argsHash === undefined) return countFirst<T>(state);
  const { core, policy } = state.run;
  const { key, argsHash } = state;
  const claimedAt = core.now();
  return step(
    () =>
      storeOp(state, "a ledger claim", () =>
        core.store.claim(key, argsHash, {
          now: claimedAt,
          allowUncertain: state.tool.idempotency.honorsKeys || state.verified === "absent",
          // The lease is the holder's longest attempt, not this claimer's remaining time: a
          // claimer with a short deadline must not take a key another attempt still holds.
          leaseMs: Math.min(policy.budgets.wallTimeMs, 15 * 60_000),
        }),
      ),
    (claim): MaybePromise<CallOutcome<T> | undefined> => {
      if (claim.status === "succeeded") {
        noteSuccess(state);
        emitCall(state, "replayed");
        return {
          kind: "ok",
          value: claim.entry.result as T,
          attempts: state.attempts,
          replayed: true,
        };
      }
      if (claim.status !== "claimed") return refusedClaim<T>(state, claim.status);
      state.claimedAt = claimedAt;
      return countFirst<T>(state);
    },
    (error) => countTrouble<T>(state, error),
  );
}

/** A first attempt counts against the server's retry budget window. */
function countFirst<T>(state: CallState): MaybePromise<CallOutcome<T> | undefined> {
  if (state.attempts !== 0) return admitted<T>(state);
  let counted: MaybePromise<unknown>;
  try {
    counted = storeOp(state, "a retry-budget count", countCall);
  } catch (error) {
    return countTrouble<T>(state, error);
  }
  if (isThenable(counted)) {
    return counted.then(
      () => admitted<T>(state),
      (error: unknown) => countTrouble<T>(state, error),
    );
  }
  return admitted<T>(state);
}

/** The store failed before an attempt; observe-only sends calls untouched, store or no store. */
function countTrouble<T>(state: CallState, error: unknown) {
  return state.run.observeOnly && state.key === undefined
    ? admitted<T>(state)
    : storeTrouble<T>(state, error, "not_sent");
}

/**
 * After the store steps, which may have seen the run end or the call aborted: nothing is sent
 * then, and a key just claimed is released as not sent.
 */
function admitted<T>(state: CallState): MaybePromise<CallOutcome<T> | undefined> {
  if (!isAborted(state)) return undefined;
  if (state.key === undefined) return preflightStop<T>(state, "aborted");
  const { key } = state;
  return guardedAsync(() => settle(state, key, "failed")).then(() =>
    preflightStop<T>(state, "aborted"),
  );
}

function refusedClaim<T>(
  state: CallState,
  status: "in_flight" | "args_mismatch" | "uncertain" | "ledger_full",
): CallOutcome<T> {
  if (status === "in_flight") {
    emitCall(state, "model");
    const text = composeMessage({
      tool: state.call.tool,
      observation: "an identical call is still in progress",
      decision: { action: "correct_arguments", reason: "conflict", certainty: "not_sent" },
      hint: "Wait for its result instead of repeating it",
    });
    return {
      kind: "model",
      action: "correct_arguments",
      reason: "conflict",
      fingerprint: fingerprint({ tool: state.call.tool, channel: "local", text: "in_flight" }),
      result: modelResult(text),
    };
  }
  const reason: Reason = status === "uncertain" ? "uncertain_mutation" : "business_rule";
  const observation =
    status === "uncertain"
      ? "an earlier attempt of this write may have taken effect"
      : status === "args_mismatch"
        ? "this call id was already used with other arguments"
        : "too many writes await confirmation";
  return stopOutcome(state, { ...plainStop(reason), personResolvable: true }, observation);
}
