// A write in doubt is never sent twice, whoever resends it (docs/idempotency.md, "A write in
// doubt"). Once any attempt of a logical call may have written, its key stays in doubt until an
// answer about that key (a success, a replay, a verify step) or a person (`governor.settle`)
// settles it; a later refusal does not settle it `failed`. While it is in doubt, an identical
// write (same server, tool, canonical arguments and scope) is refused, whatever its tool-call id:
// a model that sends the charge again under a new id, a proxy's next window, a retry the host
// sends after cancelling the first.
//
// The index is kept in the Store with its existing ledger methods, so every store has it: each
// keyed write claims a second entry, keyed by its content (`gd_` + the content hash below), beside
// its own key, and each settle of its key is mirrored there: `uncertain` stays `uncertain`, any
// other state frees the entry (`failed`: a success does not make an identical write a replay, it
// is a new write). A claim of that entry answering `in_flight` or `uncertain` refuses the write.
// The call key's `argsHash` is the same content hash (call-state.ts `contentHash`), so a person who
// settles the key frees its content entry too (see settleByHand). The scope is the run's
// `idempotencyScope`, else the run instance (nobody else can mint such an entry, and the run's
// end frees it).
import { flatPrefix32 } from "../judge/canonical.ts";
import type {
  ClaimOptions,
  ClaimResult,
  LedgerEntry,
  SettleOptions,
  Store,
} from "../store/store.ts";
import type { MaybePromise } from "../types.ts";
import type { CallState } from "./call-state.ts";
import { instance, leaseMsOf, type RunState } from "./run-state.ts";
import { isThenable } from "./store-guard.ts";
import { recordOp, settleHeld, storeOp } from "./store-steps.ts";
import { guardedAsync } from "./waits.ts";

/** The `argsHash` every claim of a content entry gives: the entry is about content, not a call. */
export const CONTENT_ARGS = "doubt";

/** The content hash last made a key of, and that key: a write's claim and settle ask for one. */
let lastArgsHash: string | undefined;
let lastDoubtKey = "";

/** The ledger key of a write's content entry, from its key's `argsHash`. */
export function doubtKeyOf(argsHash: string): string {
  if (argsHash !== lastArgsHash) {
    lastDoubtKey = flatPrefix32("gd_", argsHash);
    lastArgsHash = argsHash;
  }
  return lastDoubtKey;
}

/**
 * What the index of writes in doubt says of this write: free (its entry claimed for it), refused,
 * or an answer kept for it (an identical write went through and its answer never reached the
 * model: kept-answer.ts), to give instead of sending.
 */
export type DoubtAnswer = "free" | "in_flight" | "uncertain" | "ledger_full" | KeptAnswer;

/** An answer kept for an identical write (see {@link DoubtAnswer}). */
export interface KeptAnswer {
  readonly answer: unknown;
  /** The claim of the answer's token this call took (see `takeSucceeded`), ended by `spendKept`. */
  readonly token: TokenClaim;
}

/**
 * The claim of a `succeeded` content entry's token: only the call holding it may give that entry's
 * kept answer, or free the entry (see `takeSucceeded`).
 */
export interface TokenClaim {
  readonly key: string;
  readonly claimedAt: number;
  /** The `succeeded` entry's result as the claim read it: only that entry is spent (`spendKept`). */
  readonly result: unknown;
}

/** The field of a content entry's result that marks a kept answer. */
const KEPT = "io.governor/kept-answer";

/** A content entry's result when it holds a kept answer (plain JSON). */
interface KeptRecord {
  readonly [KEPT]: true;
  readonly answer: unknown;
  /** Epoch ms (the keeper's clock) after which the answer is no longer given. */
  readonly until: number;
  /** This keep's own name (a random id): its token's key (see `takeSucceeded`). */
  readonly id: string;
}

/** What a content entry keeps for an answer given until `until` (kept-answer.ts). */
export function keptRecord(answer: unknown, until: number, id: string): KeptRecord {
  return { [KEPT]: true, answer, until, id };
}

/** The kept record a `succeeded` content entry's result is, if any. */
function keptRecordOf(result: unknown): Partial<KeptRecord> | undefined {
  if (typeof result !== "object" || result === null) return undefined;
  const record = result as Partial<KeptRecord>;
  return record[KEPT] === true ? record : undefined;
}

/** The answer a `succeeded` content entry keeps, while it lasts; undefined for none. */
function liveAnswerOf(record: Partial<KeptRecord> | undefined, now: number): unknown[] | undefined {
  if (record === undefined || typeof record.until !== "number" || !(now < record.until)) {
    return undefined;
  }
  return [record.answer];
}

/**
 * Claims the write's content entry for an attempt, once its own key was claimed. `retaken`: that
 * claim took over this logical call's write in doubt, so the content entry in doubt is its own
 * (it was claimed with the key) and is taken over with it, as is one this call left uncertain.
 */
export function claimDoubt(state: CallState, retaken: boolean): MaybePromise<DoubtAnswer> {
  const r = state.run;
  const options = contentClaimOptions(r, r.core.now(), retaken || state.doubtHeld);
  // An identical call of this process given up on is keeping its answer: waited for first, so that
  // this claim cannot land between the free of its entry and the keep (see `handingOverOf`).
  const holder = handingOverOf(state);
  if (holder !== undefined) return claimAfter(state, holder, options);
  const claim = claimContent(state, options);
  return isThenable(claim)
    ? doubtClaimLater(state, claim, options)
    : afterDoubtClaim(state, claim, options, false);
}

/** The options of every claim of a write's content entry: an attempt's, or a keeper's (kept-answer.ts). */
export function contentClaimOptions(
  r: RunState,
  now: number,
  allowUncertain: boolean,
): ClaimOptions {
  return {
    now,
    allowUncertain,
    leaseMs: leaseMsOf(r),
    // Scoped by the run instance, the entry is the run's own (see ClaimOptions.owner).
    owner: r.scope === undefined ? instance(r) : undefined,
  };
}

function claimContent(state: CallState, options: ClaimOptions): MaybePromise<ClaimResult> {
  const key = doubtKeyOf(state.argsHash as string);
  const store = state.run.core.store;
  // An identical call of this process handed its answer over: its hold does not refuse this one.
  const over = handedOverOf(store, key, options.now);
  const asked = over === undefined ? options : { ...options, handedOver: over };
  return storeOp(state, "a ledger claim", (s) => s.run.core.store.claim(key, CONTENT_ARGS, asked));
}

/**
 * The content entries this process freed under a hold (`SettleOptions.holdMs`) whose answer was
 * handed over (the host did not give up): per store, by entry, the claim and when the hold ends by
 * this process's clock. A claim of this process names that claim (`ClaimOptions.handedOver`), so
 * the hold, which keeps identical writes of other processes out while the answer may still be
 * kept, never delays this process's own next write.
 */
const handedOverHolds = new WeakMap<Store, Map<string, { claimedAt: number; until: number }>>();

/** The store's map in a map of this process's notes by store, made on first use. */
function ofStore<V>(notes: WeakMap<Store, Map<string, V>>, store: Store): Map<string, V> {
  let byKey = notes.get(store);
  if (byKey === undefined) {
    byKey = new Map();
    notes.set(store, byKey);
  }
  return byKey;
}

/** Notes that the hold of `claimedAt` on `key` ended here: its answer was handed over. */
export function noteHandedOver(
  store: Store,
  key: string,
  claimedAt: number,
  now: number,
  holdMs: number,
): void {
  const byKey = ofStore(handedOverHolds, store);
  // Oldest first (insertion order): the holds that ran out go from the front.
  for (const [k, hold] of byKey) {
    if (hold.until > now) break;
    byKey.delete(k);
  }
  byKey.delete(key);
  byKey.set(key, { claimedAt, until: now + holdMs });
}

/** The claim whose hold on `key` this process handed over, while that hold may last. */
export function handedOverOf(store: Store, key: string, now: number): number | undefined {
  const hold = handedOverHolds.get(store)?.get(key);
  return hold !== undefined && hold.until > now ? hold.claimedAt : undefined;
}

/**
 * The stores whose last settle of a key handed over later answered with a promise: on them the
 * free of its content entry may land while the call's signal can still abort (a store that answers
 * at once leaves no such moment), so it is made under a hold (kept-answer.ts `handOver`).
 */
const settlingLater = new WeakSet<Store>();

/** Notes how the store answered a settle: at once, or later (see `settlingLater`). */
export function noteSettleAnswer(store: Store, answer: MaybePromise<void>): void {
  if (isThenable(answer)) settlingLater.add(store);
  else settlingLater.delete(store);
}

/** Whether the store's settles answer later (see `settlingLater`). */
export function settlesLater(store: Store): boolean {
  return settlingLater.has(store);
}

/** A pending answer to the content entry's claim (apart: a closure in `claimDoubt` costs every call). */
function doubtClaimLater(
  state: CallState,
  claim: Promise<ClaimResult>,
  options: ClaimOptions,
): Promise<DoubtAnswer> {
  return claim.then((answer) => afterDoubtClaim(state, answer, options, false));
}

/**
 * `again`: the claim made after a spent `succeeded` entry was freed (see `reclaim`). `waited`: the
 * claim made after an identical call's hand-over (`handingOverOf`), which is not waited for twice.
 */
function afterDoubtClaim(
  state: CallState,
  claim: ClaimResult,
  options: ClaimOptions,
  again: boolean,
  waited = false,
): MaybePromise<DoubtAnswer> {
  switch (claim.status) {
    case "claimed":
      state.doubtHeld = true;
      state.doubtClaimedAt = claim.claimedAt ?? options.now;
      return "free";
    case "in_flight": {
      // An identical call of this process succeeded and was given up on as its answer came: it
      // keeps that answer before it lets the entry go (kept-answer.ts `handOver`), so this call
      // waits for it, and meets the answer, rather than being refused while it is kept.
      const holder = waited ? undefined : handingOverOf(state);
      if (holder === undefined) return "in_flight";
      return claimAfter(state, holder, options);
    }
    case "ledger_full":
      return claim.status;
    // Nothing is in doubt: an answer kept for this write, else a person's settle or a kept
    // answer spent or past its time, which is freed and claimed as any, so that this write holds
    // the entry while it is out; either only by the call that takes the entry's token. Met again
    // once this call freed it: another keeper's answer, left to the next call.
    case "succeeded":
      return again ? "in_flight" : takeSucceeded(state, claim.entry, options);
    // `args_mismatch` cannot come from claims made here: read as in doubt (fail closed).
    default:
      return "uncertain";
  }
}

/**
 * The identical calls of this process whose success is being handed over (kept-answer.ts
 * `handOver`): per store, by their write's entry. An entry is there from the success until the
 * entry is freed or its answer kept.
 */
const handingOver = new WeakMap<Store, Map<string, HandOver>>();

/**
 * A success being handed over: the call, its own signal, the end of its hand-over, and whether its
 * entry's free is on the way (`markFreeing`).
 */
interface HandOver {
  readonly owner: CallState;
  readonly signal: AbortSignal | undefined;
  readonly done: Promise<void>;
  freeing: boolean;
}

/**
 * Marks this call's success as being handed over until the function it answers is called (see
 * `handingOver`). Only a call that holds its write's entry and hands it over later.
 */
export function holdHandOver(state: CallState): () => void {
  const store = state.run.core.store;
  const key = doubtKeyOf(state.argsHash as string);
  const byKey = ofStore(handingOver, store);
  let end: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    end = resolve;
  });
  const entry: HandOver = { owner: state, signal: state.call.signal, done, freeing: false };
  byKey.set(key, entry);
  return () => {
    if (byKey.get(key) === entry) byKey.delete(key);
    end();
  };
}

/**
 * This call's entry is being freed while its signal may still abort (kept-answer.ts `handOver`):
 * the answer is then kept right after the free, and an identical call of this process that claims
 * the entry meanwhile would be sent. Such a call waits for the hand-over instead (`handingOverOf`).
 */
export function markFreeing(state: CallState): void {
  const holder = handingOver.get(state.run.core.store)?.get(doubtKeyOf(state.argsHash as string));
  if (holder?.owner === state) holder.freeing = true;
}

/**
 * The hand-over of an identical call that a claim of its entry waits for, if one is under way: one
 * given up on (its signal aborted), or one whose entry's free is on the way (`markFreeing`).
 */
function handingOverOf(state: CallState): HandOver | undefined {
  const holder = handingOver.get(state.run.core.store)?.get(doubtKeyOf(state.argsHash as string));
  if (holder === undefined || holder.owner === state) return undefined;
  return holder.freeing || holder.signal?.aborted === true ? holder : undefined;
}

/** The entry claimed again once an identical call's hand-over ended (its answer kept, or freed). */
async function claimAfter(
  state: CallState,
  holder: HandOver,
  options: ClaimOptions,
): Promise<DoubtAnswer> {
  // Bounded as a store step of this call: its abort, its run's end and deadline, the store timeout.
  await storeOp(state, "a ledger claim", () => holder.done);
  const again = { ...options, now: state.run.core.now() };
  return afterDoubtClaim(state, await claimContent(state, again), again, false, true);
}

/**
 * A `succeeded` content entry is the business of one call only: identical calls that meet it at
 * once would each be given its kept answer (a write not made, told made), or each free it, one
 * freeing the entry another one had claimed since (both writes sent). Each claims the entry's
 * token, a ledger key named by the kept answer's id (by the entry's settle time when it keeps
 * none); the one that gets it gives the answer, or frees the entry and claims it, and the others
 * are told an identical write is in progress. A token left pending by a call that died is taken
 * over after its lease (the answer given once more at worst, never a write made twice).
 */
async function takeSucceeded(
  state: CallState,
  entry: LedgerEntry,
  options: ClaimOptions,
): Promise<DoubtAnswer> {
  const record = keptRecordOf(entry.result);
  const name = typeof record?.id === "string" ? record.id : String(entry.updatedAt);
  const key = `${flatPrefix32("gt_", state.argsHash as string)}_${name}`;
  const claim = await storeOp(state, "a ledger claim", (s) =>
    s.run.core.store.claim(key, CONTENT_ARGS, { ...options, allowUncertain: true }),
  );
  if (claim.status === "ledger_full") return "ledger_full";
  if (claim.status !== "claimed") return "in_flight";
  const token: TokenClaim = {
    key,
    claimedAt: claim.claimedAt ?? options.now,
    result: entry.result,
  };
  const live = liveAnswerOf(record, options.now);
  if (live !== undefined) return { answer: live[0], token };
  await spendKept(state, options.now, token);
  return afterDoubtClaim(state, await claimContent(state, options), options, true);
}

/** Frees a token this call took, for the next identical call to take (its answer not given). */
export function freeToken(state: CallState, token: TokenClaim): MaybePromise<void> {
  const options = { now: state.run.core.now(), claimedAt: token.claimedAt };
  return storeOp(state, "a ledger settle", (s) =>
    s.run.core.store.settle(token.key, "failed", options),
  );
}

/**
 * Frees the write's content entry that kept an answer (given now, or spent): the next identical
 * write is a new one. Settled by hand (a `succeeded` settle ended every claim of it), but only
 * while the entry is the one the token was taken for (`SettleOptions.ifSucceeded`): an answer a
 * keeper kept there since is another write's, left for the next identical call, not freed for it to
 * make that write again. Then ends the token's claim: taken for good once the entry is freed, else
 * freed for the next call to take.
 */
export async function spendKept(state: CallState, now: number, token: TokenClaim): Promise<void> {
  const key = doubtKeyOf(state.argsHash as string);
  const options: SettleOptions = { now, ifSucceeded: { result: token.result } };
  let spent = false;
  try {
    // Asked once more when the store fails (`settleHeld`): else the answer is given once more.
    await storeOp(state, "a ledger settle", (s) =>
      settleHeld(() => s.run.core.store.settle(key, "failed", options)),
    );
    spent = true;
  } finally {
    await guardedAsync(() =>
      storeOp(state, "a ledger settle", (s) =>
        s.run.core.store.settle(token.key, spent ? "succeeded" : "failed", {
          now,
          claimedAt: token.claimedAt,
        }),
      ),
    );
  }
}

/**
 * Mirrors a settle of the call's key onto its content entry, before the key's own settle: a store
 * that fails between the two leaves the key pending (in doubt after its lease), never the
 * content entry freed while its key is in doubt unless the write's outcome is known. `record`: as
 * the key's settle (ledger.ts `settle`).
 */
export function settleDoubt(
  state: CallState,
  to: "succeeded" | "failed" | "uncertain",
  record = false,
): MaybePromise<void> {
  const argsHash = state.argsHash as string;
  const mirror = to === "uncertain" ? "uncertain" : "failed";
  const { doubtClaimedAt } = state;
  const now = state.run.core.now();
  const options: SettleOptions =
    doubtClaimedAt === undefined ? { now } : { now, claimedAt: doubtClaimedAt };
  const op = mirror === "uncertain" || record ? recordOp : storeOp;
  const written = op(state, "a ledger settle", (s) =>
    s.run.core.store.settle(doubtKeyOf(argsHash), mirror, options),
  );
  if (mirror === "uncertain") return written;
  return isThenable(written) ? freedLater(state, written) : freed(state);
}

/** The content entry freed once its pending settle is written (apart: its closure). */
function freedLater(state: CallState, written: Promise<void>): Promise<void> {
  return written.then(() => freed(state));
}

/** The call no longer holds its write's entry. */
export function freed(state: CallState): void {
  state.doubtHeld = false;
  state.doubtClaimedAt = undefined;
}

/**
 * A person settled a key by hand: when it was in doubt, its write's content entry is freed too
 * (identical writes may be sent again). A key that was settled already frees nothing: another
 * identical write may hold the entry since. A person who found the write made (`succeeded`) ends
 * the entry's claim first (a `succeeded` settle does, in every store), so the late settle of an
 * attempt still holding it cannot mark it `uncertain` again: the key it mirrors stays done, and
 * nobody would free the entry.
 */
export async function settleByHand(
  store: Store,
  before: LedgerEntry | undefined,
  outcome: "succeeded" | "failed",
  now: number,
): Promise<void> {
  if (before === undefined || before.argsHash === "") return;
  if (before.state !== "pending" && before.state !== "uncertain") return;
  const key = doubtKeyOf(before.argsHash);
  if (outcome === "succeeded") await store.settle(key, "succeeded", { now });
  await store.settle(key, "failed", { now });
}
