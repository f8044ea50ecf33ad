// An answer that went through but never reached the model (docs/idempotency.md, "An answer the
// host never got"), kept in the ledger rather than beside it: the write's content entry in the
// index of writes in doubt (doubt.ts) is settled `succeeded` with the answer, so the next identical
// call of the scope, in any run or process that shares the store, is answered with it once instead
// of making the write again. doubt.ts reads it when it claims the entry (`takeSucceeded`: one call takes
// it); ledger.ts replays it.
import { GovernorError } from "../errors.ts";
import { resolveEffect } from "../judge/effect.ts";
import type { ToolPolicy } from "../policy/policy.ts";
import type { ClaimResult } from "../store/store.ts";
import type { MaybePromise } from "../types.ts";
import { type CallState, canonicalArgs, contentHashOf } from "./call-state.ts";
import {
  CONTENT_ARGS,
  contentClaimOptions,
  doubtKeyOf,
  freed,
  handedOverOf,
  keptRecord,
  markFreeing,
  noteHandedOver,
  settlesLater,
} from "./doubt.ts";
import { writesAsJson } from "./ledger.ts";
import { bounded, type RunState } from "./run-state.ts";
import { guardStore, isThenable } from "./store-guard.ts";
import { recordOp, settleHeld, settlesAgain, storeOp } from "./store-steps.ts";
import type { ToolCall } from "./types.ts";
import { guardedAsync } from "./waits.ts";

/**
 * Keeps `answer` for the next identical call (see `Run.keepAnswer`): claims the write's content
 * entry, so that an identical write in flight or in doubt keeps it from being taken (nothing is
 * kept then: that write is the repeat), and settles it `succeeded` with the answer. Answers whether
 * it was kept. A store that fails rejects; an answer JSON cannot write frees the entry again.
 */
export async function keepAnswer(
  r: RunState,
  request: ToolCall,
  answer: unknown,
  ttlMs: number,
): Promise<boolean> {
  const { core } = r;
  if (!keepsFor(r)) return false;
  const server = request.server ?? "";
  const tool = core.toolPolicy(request.tool, request.server);
  if (resolveEffect(tool.effect, tool.trustAnnotations, request.annotations) !== "mutating") {
    return false;
  }
  // An answer JSON cannot write cannot be kept: nothing is claimed for it.
  const keepable = keepableAnswer(tool, answer);
  if (keepable === undefined) return false;
  const kept = keepable.value;
  // Arguments that are not JSON were never sent: there is no answer to keep.
  let canonical: string;
  try {
    canonical = canonicalArgs(request.args ?? {}, tool);
  } catch {
    return false;
  }
  const key = doubtKeyOf(contentHashOf(r, server, request.tool, canonical));
  const now = core.now();
  // As the write's own claim of it (doubt.ts): the run instance's when the run has no scope.
  // A hold this process handed over (doubt.ts `handedOverOf`) does not keep this keep out.
  const over = handedOverOf(core.store, key, now);
  const options = contentClaimOptions(r, now, false);
  const claim: ClaimResult = await core.store.claim(
    key,
    CONTENT_ARGS,
    over === undefined ? options : { ...options, handedOver: over },
  );
  // An older answer kept there is replaced by this one; a person's settle ended any claim.
  if (claim.status !== "claimed" && claim.status !== "succeeded") return false;
  const claimedAt = claim.status === "claimed" ? (claim.claimedAt ?? now) : undefined;
  try {
    await core.store.settle(key, "succeeded", {
      now,
      result: keptRecord(kept, now + ttlMs, core.newRunId()),
      ...(claimedAt !== undefined && { claimedAt }),
    });
    return true;
  } catch (error) {
    // The entry must not stay claimed: once its lease passed it would refuse every identical
    // write for good, with nobody to settle it. Asked once more when the store fails
    // (`settleHeld`); it names the claim, so the store drops it if the keep landed after all.
    if (claimedAt !== undefined) {
      await settleHeld(() => core.store.settle(key, "failed", { now: core.now(), claimedAt }));
    }
    if (GovernorError.isInstance(error)) throw error;
    return false;
  }
}

/**
 * Whether an answer kept now can reach an identical call of the run's scope: not in observe-only
 * (it keeps no ledger), nor once a run without a scope ended (its content entries are its
 * instance's, and no call of it is to come). The one check of `keepAnswer` and `handOver`.
 */
export function keepsFor(r: RunState): boolean {
  return !r.observeOnly && (r.scope !== undefined || r.ended === undefined);
}

/**
 * What may be kept of a write's answer, the one rule of `keepAnswer` and `handOver`: nothing of a
 * tool whose results are not kept (`idempotency.replay: false`; the identical call is told the write
 * was made, with no answer to show, as a replay of its key would be), and undefined when the answer
 * cannot be kept at all (JSON cannot write it: a BigInt, a cycle).
 */
function keepableAnswer(
  tool: ToolPolicy,
  answer: unknown,
): { readonly value: unknown } | undefined {
  const value = tool.idempotency.replay ? answer : undefined;
  return writesAsJson(value) ? { value } : undefined;
}

/**
 * Whether a success of this call frees its write's entry only once its answer is handed over
 * (`handOver`): the call holds the entry and can still be given up on (its own signal, or a
 * moment of the host's before the answer goes on).
 */
export function handsOverLater(state: CallState): boolean {
  return (
    state.doubtHeld && (state.call.signal !== undefined || state.call.beforeAnswer !== undefined)
  );
}

/**
 * A write's success handed over (its key already settled `succeeded`): the host's moment before the
 * answer goes on (`ToolCall.beforeAnswer`), then, when `held` (`handsOverLater`), its entry in the
 * index of writes in doubt is freed, unless the call's signal aborted by then: its answer will not
 * reach the model, and the identical call the host sends next would make the write again. The
 * entry is then settled `succeeded` with the answer under this call's own claim, in the one settle
 * that would have freed it, so no identical call can claim it in between (`keptAnswer`). A signal
 * that aborts while the entry is being freed (a store that answers later, such as Redis) keeps it
 * right after, as `Run.keepAnswer` does; that free holds the entry for the call meanwhile
 * (`freeHold`), so an identical call of another process is refused as in progress, not sent. The
 * call waits for the free and that keep as for any store step, never past its cut (cut, they go
 * on; cut by anything but its own abort, the answer goes out with the outcome, and an abort after
 * it keeps nothing), and not for the keep of a call given up on first; identical calls of this process wait for
 * all of them (`handOverWrites`, doubt.ts `holdHandOver`).
 */
export async function handOver(state: CallState, answer: unknown, held: boolean): Promise<void> {
  const { beforeAnswer } = state.call;
  // Bounded as every host hook is: the run's deadline, its signal and end, the call's signal.
  if (beforeAnswer !== undefined) await bounded(state, beforeAnswer, undefined);
  if (!held || !state.doubtHeld) return;
  const r = state.run;
  const ttlMs = r.options.keptAnswerMs ?? KEPT_MS;
  const key = doubtKeyOf(state.argsHash as string);
  const { doubtClaimedAt } = state;
  const claim = doubtClaimedAt === undefined ? {} : { claimedAt: doubtClaimedAt };
  // The call lets go of the entry: it is settled below, whatever the call comes to.
  freed(state);
  // An answer JSON cannot write cannot be kept: the entry is freed, and the outcome says nothing kept.
  const keepable = givenUp(state) && keepsFor(r) ? keepableAnswer(state.tool, answer) : undefined;
  if (keepable !== undefined) {
    // Under this call's own claim nobody else can take the entry: a store that fails to record
    // it (twice, `keepHeld`) leaves the entry held (identical writes refused, in doubt after its
    // lease), never free.
    keptLater.set(state, keepHeld(state, key, claim, keepable.value, ttlMs));
    state.keptAnswer = true;
    return;
  }
  // Identical calls of this process wait for the hand-over from now on: the free may land before
  // the call's signal aborts.
  if (state.call.signal !== undefined) markFreeing(state);
  const holdMs = freeHold(state, claim.claimedAt);
  const hold = holdMs === undefined ? {} : { holdMs };
  let freeing: MaybePromise<void>;
  try {
    freeing = settleHeld(() =>
      r.core.store.settle(key, "failed", { now: r.core.now(), ...claim, ...hold }),
    );
  } catch (error) {
    freeing = Promise.reject(error);
  }
  // A store that answers at once freed it: nothing could abort the call meanwhile.
  if (!isThenable(freeing)) {
    handedOverHere(state, key, claim.claimedAt, holdMs);
    return;
  }
  // The answer went out with the call's outcome (its wait cut by the store timeout, the deadline,
  // the run's signal or end): a later abort of the call's signal is the host's (`keepAnswer`).
  let out = false;
  const kept = freeing.then(() => {
    if (out || !givenUp(state)) {
      handedOverHere(state, key, claim.claimedAt, holdMs);
      return false;
    }
    if (holdMs === undefined) return keepAnswer(r, state.call, answer, ttlMs);
    return keepUnderHold(state, key, claim.claimedAt as number, answer, ttlMs);
  });
  // Identical calls of this process wait for these writes as long as the hold lasts (the store
  // timeout without one), no longer: a free whose answer never comes (a connection that lost it)
  // would have them wait, and fail, for good. The keep, if any, goes on: a late one keeps nothing
  // over a write that claimed the entry since.
  const bound = { signals: [], timeoutMs: holdMs ?? r.core.storeTimeoutMs };
  keptLater.set(
    state,
    (guardStore("a ledger settle", () => kept, bound) as Promise<boolean>).then(
      () => undefined,
      () => undefined,
    ),
  );
  try {
    state.keptAnswer = await storeOp(state, "a ledger settle", () => kept);
  } catch (error) {
    // Cut by the call's abort: the writes go on, and nobody waits for them but identical calls.
    if (!givenUp(state)) {
      // Its hold no longer keeps this process's calls out: the host's own keep among them.
      out = true;
      handedOverHere(state, key, claim.claimedAt, holdMs);
      throw error;
    }
  }
}

/**
 * How long the free of a call's content entry holds it for the call (`SettleOptions.holdMs`), or
 * undefined to free it at once. Held only where the host can give up while the free is on its way:
 * the call has its own signal, and its store answered the key's settle later (a store that answers
 * at once, as the memory and SQLite stores, lands the free before any abort can run). The free
 * lands, and only then does its answer tell the call whether the host gave up meanwhile: were the
 * entry free in between, an identical call of another process could claim it and make the write a
 * second time, the answer kept then reaching nobody. Held, such a call is refused as in progress
 * until the call keeps its answer there (`keepUnderHold`) or the hold runs out. The hold is room
 * for the free's answer and the keep's claim, each within the store timeout: twice that.
 */
function freeHold(state: CallState, claimedAt: number | undefined): number | undefined {
  if (state.call.signal === undefined || claimedAt === undefined) return undefined;
  const { core } = state.run;
  return settlesLater(core.store) ? 2 * core.storeTimeoutMs : undefined;
}

/**
 * The answer was handed over (the host did not give up): identical calls of this process are not
 * kept out by the entry's hold, if it has one (doubt.ts `handedOverOf`).
 */
function handedOverHere(
  state: CallState,
  key: string,
  claimedAt: number | undefined,
  holdMs: number | undefined,
): void {
  if (holdMs === undefined || claimedAt === undefined) return;
  const { core } = state.run;
  noteHandedOver(core.store, key, claimedAt, core.now(), holdMs);
}

/**
 * The host gave up while the entry was being freed under a hold: the answer is kept there under a
 * claim that passes the call's own hold (`ClaimOptions.handedOver`), so an identical call of
 * another process cannot claim the entry in between, and settled `succeeded` as the keep of a held
 * entry is (`keepHeld`: a store that fails is asked once more, and a keep that fails again leaves
 * the entry claimed, in doubt after its lease, never free). A claim the store fails with a
 * `StoreError` other than a timeout is asked once more too: unanswered, the hold would run out and
 * the identical call be sent. A keep that comes after the hold ran out and another write claimed
 * the entry meets that write in flight and keeps nothing, as any keep would. A keep that cannot be
 * made (an answer JSON cannot write, a run that can meet no identical call, that other write) ends
 * the hold, naming the call's claim (dropped when the entry was claimed since): the identical call
 * is then a new write, as it would have been.
 */
async function keepUnderHold(
  state: CallState,
  key: string,
  claimedAt: number,
  answer: unknown,
  ttlMs: number,
): Promise<boolean> {
  const r = state.run;
  const keepable = keepsFor(r) ? keepableAnswer(state.tool, answer) : undefined;
  const claim = keepable === undefined ? undefined : await claimUnderHold(state, key, claimedAt);
  if (keepable === undefined || claim === undefined) {
    await recordOp(state, "a ledger settle", (s) =>
      settleHeld(() =>
        s.run.core.store.settle(key, "failed", { now: s.run.core.now(), claimedAt }),
      ),
    );
    return false;
  }
  await keepHeld(state, key, claim, keepable.value, ttlMs);
  return true;
}

/**
 * The keep's claim of an entry held for `claimedAt` (see `keepUnderHold`): the claim it is kept
 * under, `{}` for an answer kept there already (replaced, as `Run.keepAnswer` replaces one), or
 * undefined when it cannot be kept (another write holds the entry).
 */
async function claimUnderHold(
  state: CallState,
  key: string,
  claimedAt: number,
): Promise<{ readonly claimedAt?: number } | undefined> {
  const r = state.run;
  const claimOnce = () => {
    const now = r.core.now();
    const options = { ...contentClaimOptions(r, now, false), handedOver: claimedAt };
    return recordOp(state, "a ledger claim", (s) =>
      s.run.core.store.claim(key, CONTENT_ARGS, options),
    );
  };
  const claim: ClaimResult = await settleHeld(claimOnce);
  if (claim.status === "succeeded") return {};
  if (claim.status !== "claimed") return undefined;
  return { claimedAt: claim.claimedAt ?? r.core.now() };
}

/** The host gave up on the call: its own signal aborted. */
function givenUp(state: CallState): boolean {
  return state.call.signal?.aborted === true;
}

/** The writes of a hand-over that outlive its call's cut (see `handOver`), by call. */
const keptLater = new WeakMap<CallState, Promise<void>>();

/** The end of the writes a call's hand-over left going on, if any (see `handOver`). */
export function handOverWrites(state: CallState): Promise<void> | undefined {
  return keptLater.get(state);
}

/** How long a kept answer is given by default (as `Run.keepAnswer`). */
const KEPT_MS = 600_000;

/**
 * The answer kept in the write's entry the call held: settled `succeeded` with it under the call's
 * claim, bounded by the store timeout alone (store-steps.ts `recordOp`). An answer JSON cannot
 * write frees the entry, as a success does. A store that fails with a `StoreError` other than a
 * timeout is asked once more, if the entry is still held (`keepAgain`). Never rejects: a store
 * that fails still leaves the entry held, in doubt after its lease.
 */
async function keepHeld(
  state: CallState,
  key: string,
  claim: { readonly claimedAt?: number },
  answer: unknown,
  ttlMs: number,
): Promise<void> {
  const r = state.run;
  const now = r.core.now();
  const record = keptRecord(answer, now + ttlMs, r.core.newRunId());
  const keep = () =>
    recordOp(state, "a ledger settle", (s) =>
      s.run.core.store.settle(key, "succeeded", { now, result: record, ...claim }),
    );
  try {
    await keep();
  } catch (error) {
    if (writesAsJson(record)) {
      if (settlesAgain(error)) await guardedAsync(() => keepAgain(state, key, claim, keep));
      return;
    }
    await guardedAsync(() =>
      recordOp(state, "a ledger settle", (s) =>
        s.run.core.store.settle(key, "failed", { now: s.run.core.now(), ...claim }),
      ),
    );
  }
}

/**
 * The keep made again, if the entry is still held by this call: `pending` under its claim. A
 * failure other than a timeout may still have landed (a connection that broke during the
 * command): the entry is then `succeeded` with this answer, or already spent and claimed by the
 * next write, pending under that write's claim, which a `succeeded` settle (always kept) would
 * overwrite with an answer already given. A store that names no claim of a pending entry
 * (`LedgerEntry.claimedAt`) is taken at its word that the entry is held.
 */
async function keepAgain(
  state: CallState,
  key: string,
  claim: { readonly claimedAt?: number },
  keep: () => MaybePromise<void>,
): Promise<void> {
  const found = await recordOp(state, "a ledger read", (s) => s.run.core.store.entry(key));
  if (found?.state !== "pending") return;
  if (found.claimedAt !== undefined && found.claimedAt !== claim.claimedAt) return;
  await keep();
}
