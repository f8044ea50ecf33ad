import { GovernorError } from "../errors.ts";
import type { MaybePromise } from "../types.ts";

/** States of an idempotency key (docs/architecture.md §4). */
export type LedgerState = "pending" | "succeeded" | "failed" | "uncertain";

/** One idempotency key in the ledger. Plain JSON. */
export interface LedgerEntry {
  readonly key: string;
  /**
   * Hash of the canonical arguments the key was minted for (`hashArgs`). Empty for a key a host
   * settled by hand without claiming it: such an entry matches any arguments.
   */
  readonly argsHash: string;
  readonly state: LedgerState;
  /** The recorded result of a succeeded call, for replay. */
  readonly result?: unknown;
  /**
   * Set on a `succeeded` entry whose recorded result is gone (a store that keeps results apart
   * from the entry may lose them first, e.g. to eviction). The call still succeeded and must not
   * run again: replay it as done, with no result to show.
   */
  readonly resultUnavailable?: true;
  /** Epoch ms of the last change. */
  readonly updatedAt: number;
  /**
   * A `pending` entry's lease as its holder asked for it (`ClaimOptions.leaseMs`), counted from
   * `updatedAt`: until it runs out the call may still be in flight, so the key is not yet a write
   * in doubt. Absent on settled entries (and on entries a store wrote before it kept leases).
   */
  readonly leaseMs?: number;
  /**
   * A `pending` entry's lease left, as the store's own clock counts it, from a store that runs
   * leases on a clock of its own (Redis: its server's), so that a reader whose clock differs from
   * the holder's (read by `governor.settle`) counts it as the store's claims do. Absent: the lease
   * is `leaseMs` from `updatedAt`.
   */
  readonly leaseLeftMs?: number;
  /**
   * A `pending` entry's latest claim, as its `claimed` answer carried it
   * (`ClaimResult.claimedAt`): a holder that reads the entry back can tell its own claim from a
   * newer one. Absent on settled entries, and from stores that keep no claim marks.
   */
  readonly claimedAt?: number;
}

/** Options of {@link Store.claim}. */
export interface ClaimOptions {
  /** Epoch ms now. */
  readonly now: number;
  /**
   * Whether an `uncertain` entry may be claimed again: true when the tool honors keys (the server
   * deduplicates). Otherwise an uncertain key refuses.
   */
  readonly allowUncertain: boolean;
  /**
   * How long this claim holds: the longest this attempt may take. The store keeps it with the
   * `pending` entry, and a later claim finds the entry `in_flight` until the longer of the
   * holder's lease and its own has passed since the claim. A pending entry older than that belongs
   * to an attempt that died or whose settle failed (a crashed worker, a store outage after the
   * write): it is treated as `uncertain`, never as free, since that attempt may have run (and it
   * is recorded as `uncertain` when the claim is refused).
   */
  readonly leaseMs: number;
  /**
   * The run instance the key belongs to, when nobody else can ever claim it: a key the run minted
   * from its instance for a call without `callId` (no other run can mint it, and this one claims
   * none once it has ended). A store with {@link Store.release} may drop the key's entry early once
   * that owner is released, if it is then `succeeded` or `failed`; a store without it ignores this.
   * @default none: the entry is kept for the retention period
   */
  readonly owner?: string | undefined;
  /**
   * A claim (`claimedAt`) whose hold (`SettleOptions.holdMs`) this claimer may pass: its own (the
   * holder keeping its answer there), or one whose holder, in this process, handed its answer
   * over. The key freed under that hold is claimed as any `failed` one; a hold of another claim
   * still answers `in_flight`.
   * @default none: every hold that has not run out answers `in_flight`
   */
  readonly handedOver?: number | undefined;
}

/** Options of {@link Store.settle}. */
export interface SettleOptions {
  /** Epoch ms now. */
  readonly now: number;
  /** The result of a `succeeded` call, to replay (JSON). */
  readonly result?: unknown;
  /**
   * The claim this attempt holds: the `claimedAt` its `claimed` answer carried (see
   * {@link ClaimResult}). A `failed` or `uncertain` settle is dropped when the entry's current
   * claim is another one (this attempt's lease ran out and another attempt took the key: it may
   * have sent, and it may be running still or have left the key in doubt), or when the entry is
   * `succeeded` (a person, or another attempt, found the write made: it stays done), or when a
   * `succeeded` settle has ended the claim since. A `succeeded` settle is always kept (the write
   * happened). So only the holder of a key's latest claim frees or marks it; the store decides, by
   * its own records, not by any worker's clock.
   * @default none: the settle applies whatever holds the key (a host settling by hand)
   */
  readonly claimedAt?: number;
  /**
   * Settle only the `succeeded` entry the caller read: the settle (to any state) is dropped
   * unless the key is `succeeded` now with this same recorded result (the same JSON text; `result` absent: it
   * records none, or its result is gone). For a caller that frees a `succeeded` entry it was
   * answered by a claim (the core spending a kept answer): a `succeeded` settle written since,
   * with another result to give, is not freed with it. Checked with the settle, atomically, as
   * `claimedAt` is; both may be given, and the settle applies only when both hold.
   * @default none: the settle applies whatever the key holds
   */
  readonly ifSucceeded?: { readonly result?: unknown };
  /**
   * On a `failed` settle naming its claim (`claimedAt`): the key is freed, but held for this claim
   * for `holdMs` more, counted by the store's own clock from the settle (Redis: its server's;
   * SQLite: the callers' `now`, which the processes on its file share with its clock):
   * until then a claim answers `in_flight`, but one naming this claim as
   * {@link ClaimOptions.handedOver} claims it as any `failed` key. For a holder that frees a write's entry before it knows whether its answer was
   * given (the core's content entries, docs/idempotency.md). A later settle ends the hold. The key
   * is kept at least until the hold runs out, whatever the store's retention or caps. Only the
   * entry's own claim is held: a settle that finds no entry (a key never claimed, or forgotten
   * with its retention) frees no claim and creates the entry as a settle by hand does, holding
   * nothing.
   * @default none: the key is free at once
   */
  readonly holdMs?: number;
}

/**
 * The answer to a claim. `claimed` means this caller may execute (the entry is now `pending`);
 * every other answer means it must not. A `claimed` answer carries `retaken: true` when it took
 * over a write in doubt (an `uncertain` entry, or a `pending` one whose lease passed, claimed with
 * {@link ClaimOptions.allowUncertain}): an attempt of that key may have written, so a caller that
 * then sends nothing settles the key back to `uncertain`, never `failed`.
 * - `in_flight`: another attempt holds the key right now (concurrent use is refused);
 * - `args_mismatch`: the key was minted for other arguments (refused, like Stripe);
 * - `succeeded`: done before; `entry.result` may be replayed;
 * - `uncertain`: sent before with no answer, and repeating it is not known to be safe;
 * - `ledger_full`: a hard cap is reached (unsettled entries, or with the memory store all
 *   entries within their retention); new mutations are refused rather than old entries forgotten
 *   (fail-closed). The run hands it to the host as a `StoreError` with reason `ledger_full`.
 */
export type ClaimResult =
  | {
      readonly status: "claimed";
      readonly entry: LedgerEntry;
      /**
       * This claim, as the store marks it: a number the store gives each claim that takes the key,
       * greater than the one it gave the key's claim before, kept with the entry until the next
       * claim (a settle by this attempt names it as {@link SettleOptions.claimedAt}). A store that
       * runs leases on a clock of its own takes it from that clock (Redis: its server's `TIME`),
       * the others from the claim's `now`, so it reads as the claim's epoch ms; callers compare it
       * only for equality. Optional so that a store written before it still compiles (the core then
       * names the claim by the `now` it passed); the contract suite asks for it.
       */
      readonly claimedAt?: number;
      /**
       * Set when the claim took over a write in doubt (`uncertain`, or `pending` past its lease).
       * Optional so that a store written before it still compiles; the contract suite asks for it.
       * @default absent: the key was new, `failed`, or settled by hand as `failed`
       */
      readonly retaken?: true;
    }
  | {
      readonly status: "in_flight" | "args_mismatch" | "succeeded" | "uncertain";
      readonly entry: LedgerEntry;
    }
  | { readonly status: "ledger_full" };

/**
 * Learned outcomes of one key (a server, tool and fingerprint): counts that decay with a
 * half-life, as of `updatedAt`. Plain JSON. See `learnedDemotion` and docs/learning.md.
 */
export interface OutcomeRecord {
  readonly key: string;
  /** Weighted counts by field (`retry_paid`, `correct_futile`…) as of `updatedAt`, not decayed since. */
  readonly counts: Readonly<Record<string, number>>;
  /** Epoch ms of the last addition. */
  readonly updatedAt: number;
}

/** Options of {@link Store.addOutcome}. */
export interface AddOutcomeOptions {
  /** Epoch ms now: the counts decay from their `updatedAt` to it before the addition. */
  readonly now: number;
  /** Half-life of the counts, in ms. */
  readonly halfLifeMs: number;
  /** The record expires this long after its last addition, in ms. */
  readonly ttlMs: number;
  /** What to add. @default 1 */
  readonly by?: number;
}

/** Why a store operation failed: see {@link StoreError}. */
export type StoreErrorReason =
  /** The store could not be reached, or the connection broke during the operation. */
  | "unavailable"
  /** The store did not answer within its command timeout. */
  | "timeout"
  /**
   * The ledger lost data (a restart without persistence, a flush, an eviction, a failover to a
   * replica that had not received the latest writes): an absent key may be a write that happened.
   * Nothing may execute until a person checks the writes that were in doubt and resets the mark.
   */
  | "ledger_lost"
  /**
   * The ledger is at its cap (`ledger_full` from `claim`): a new write cannot be recorded, so it
   * is not made. A person settles the writes in doubt, or raises the cap.
   */
  | "ledger_full"
  /** The server is set up in a way the ledger cannot be trusted on (no persistence, eviction). */
  | "misconfigured"
  /** The server refused the command (out of memory, read-only replica, wrong type…). */
  | "rejected";

const STORE_MARKER = Symbol.for("governor.store-error");

/**
 * A store operation failed. Its `message` is fixed text that names the operation and the reason,
 * never a URL, a host, an address or a key, so a host may show or log it as it is; the client's
 * own error is the `cause`. A caller must treat any store error as "the ledger cannot answer":
 * execute nothing (fail closed) and hand the error to the host.
 */
export class StoreError extends GovernorError {
  /** Why the operation failed. */
  readonly reason: StoreErrorReason;
  /** The store method that failed (`claim`, `settle`, `get`, `set`, `increment`, `entry`). */
  readonly operation: string;
  readonly [STORE_MARKER]: true = true;

  constructor(fields: {
    reason: StoreErrorReason;
    operation: string;
    message: string;
    cause?: unknown;
  }) {
    super("store_error", fields.message, { cause: fields.cause });
    this.name = "StoreError";
    this.reason = fields.reason;
    this.operation = fields.operation;
  }

  /** True for any StoreError, even one from another copy of the package. */
  static override isInstance(value: unknown): value is StoreError {
    return typeof value === "object" && value !== null && STORE_MARKER in value;
  }
}

/**
 * What must outlive a call: counters (retry budgets), small JSON values (breaker state) and the
 * idempotency ledger. Methods may answer synchronously or with a promise. A method that cannot
 * answer throws (or rejects with) a {@link StoreError}; `claim` then must be read as a refusal.
 * Every implementation must pass the contract suite in `@governor/core/testing`.
 */
export interface Store {
  /** Reads a JSON value, or undefined when absent or expired. */
  get<T>(key: string): MaybePromise<T | undefined>;
  /** Writes a JSON value, expiring after `ttlMs` when given. */
  set<T>(key: string, value: T, ttlMs?: number): MaybePromise<void>;
  /**
   * Adds `by` to a counter atomically and returns the new value. A new counter starts at 0 and
   * expires `ttlMs` after its creation.
   */
  increment(key: string, by: number, ttlMs: number): MaybePromise<number>;
  /** Atomically claims an idempotency key for one attempt (see {@link ClaimResult}). */
  claim(key: string, argsHash: string, options: ClaimOptions): MaybePromise<ClaimResult>;
  /**
   * Settles a key: `succeeded` (with the result to replay), `failed` (the server answered with a
   * failure; no effect assumed) or `uncertain` (sent, no answer). Settled entries are kept for the
   * retention period; `uncertain` ones until a host settles them. Settling a key nobody claimed
   * creates it (a host that checked by hand). With `claimedAt`, a `failed` or `uncertain` settle of
   * a key that another attempt has claimed since, or that is `succeeded`, or whose claim a
   * `succeeded` settle ended, is dropped (see {@link SettleOptions}). With `ifSucceeded`, a settle
   * of a key that is not `succeeded` with that result is dropped.
   */
  settle(
    key: string,
    state: Exclude<LedgerState, "pending">,
    options: SettleOptions,
  ): MaybePromise<void>;
  /** Reads a ledger entry. */
  entry(key: string): MaybePromise<LedgerEntry | undefined>;
  /**
   * Optional. The run instance `owner` has ended: entries claimed with this `owner`
   * ({@link ClaimOptions.owner}) that are `succeeded` or `failed` now may be dropped before their
   * retention (nobody can claim their keys again). Entries that are `pending` or `uncertain` now
   * must be kept as they are (a write whose outcome is unknown waits for a person), and so must
   * entries of other owners or of none. The core calls it once, when a run that minted keys from
   * its instance ends, and issues no claim of that owner after it; a claim issued before it must
   * take effect before it (as when operations apply in the order they are issued). A store
   * without it keeps every settled entry for its retention.
   */
  release?(owner: string): MaybePromise<void>;
  /**
   * Learning (optional: a store without these methods does not learn). Atomically decays every
   * count of the record at `key` from its `updatedAt` to `now` (halving each `halfLifeMs`), adds
   * `by` to `field`, sets `updatedAt` to `now` (or keeps a later one) and the expiry to `ttlMs`
   * from now; answers the new record. Records are bounded: past the store's cap, the least
   * recently updated go first (learning is advice, never fail-closed).
   */
  addOutcome?(key: string, field: string, options: AddOutcomeOptions): MaybePromise<OutcomeRecord>;
  /** Reads a learned record as stored (not decayed), or undefined. */
  outcome?(key: string): MaybePromise<OutcomeRecord | undefined>;
  /** Lists learned records, the most recently updated first, at most `limit` of them. */
  listOutcomes?(limit: number): MaybePromise<OutcomeRecord[]>;
  /** Deletes the learned records whose key starts with `prefix` (all without it); answers how many. */
  resetOutcomes?(prefix?: string): MaybePromise<number>;
}

/**
 * A {@link Store} whose every method, the optional ones included, answers synchronously: the
 * memory store and `@governor/sqlite`'s store. A host holding one may read its answers without
 * `await`.
 */
export interface SynchronousStore extends Store {
  get<T>(key: string): T | undefined;
  set<T>(key: string, value: T, ttlMs?: number): void;
  increment(key: string, by: number, ttlMs: number): number;
  claim(key: string, argsHash: string, options: ClaimOptions): ClaimResult;
  settle(key: string, state: Exclude<LedgerState, "pending">, options: SettleOptions): void;
  entry(key: string): LedgerEntry | undefined;
  release(owner: string): void;
  addOutcome(key: string, field: string, options: AddOutcomeOptions): OutcomeRecord;
  outcome(key: string): OutcomeRecord | undefined;
  listOutcomes(limit: number): OutcomeRecord[];
  resetOutcomes(prefix?: string): number;
}

/**
 * The hold a {@link Store.settle} keeps on its key ({@link SettleOptions.holdMs}), as every store of
 * the project reads it: whole ms (rounded up) of a positive finite `holdMs` on a `failed` settle
 * naming its claim (`claimedAt`), else 0 (no hold: the key is free at once).
 */
export function settleHoldMs(state: LedgerState, settlement: SettleOptions): number {
  const { holdMs } = settlement;
  if (state !== "failed" || settlement.claimedAt === undefined) return 0;
  return typeof holdMs === "number" && Number.isFinite(holdMs) && holdMs > 0
    ? Math.ceil(holdMs)
    : 0;
}

/**
 * Whether a `failed` key freed under a hold ({@link settleHoldMs}: `holdMs` from `heldSince`, for
 * the claim `claimedAt`) still answers a claim `in_flight` at `at`: the hold has not run out and
 * the claimer does not name that claim as handed over ({@link ClaimOptions.handedOver}). A hold
 * is its claim's: one that names no claim (a store keeps none: a settle that freed no claim holds
 * nothing) is passed by no claimer, named or not, until it runs out. The memory and SQLite stores
 * read it so; Redis reads the same in its script, on its server's clock.
 */
export function isHeld(
  hold: { readonly holdMs: number; readonly heldSince: number; readonly claimedAt?: number },
  at: number,
  handedOver: number | undefined,
): boolean {
  const passed = hold.claimedAt !== undefined && hold.claimedAt === handedOver;
  return hold.holdMs > 0 && at - hold.heldSince < hold.holdMs && !passed;
}

/**
 * Checks {@link Store.addOutcome}'s arguments as every store of the project does (the contract
 * suite in `@governor/core/testing` refuses the same ones): `field` a non-empty string not starting
 * with `@`, `by` (default 1) a positive finite number, `now` epoch ms (finite, >= 0), `halfLifeMs`
 * and `ttlMs` positive finite numbers of ms. Answers the options with `by` filled in; throws a
 * `GovernorError` (`invalid_options`) naming the first argument that is wrong and what it accepts.
 *
 * @example
 * addOutcome(key, field, options) {
 *   const { by, now, halfLifeMs, ttlMs } = checkAddOutcome(field, options);
 *   // ... decay, add, store
 * }
 */
export function checkAddOutcome(
  field: string,
  options: AddOutcomeOptions,
): Required<AddOutcomeOptions> {
  const bad = (what: string) => new GovernorError("invalid_options", `addOutcome: ${what}.`);
  if (typeof field !== "string" || field === "" || field.startsWith("@")) {
    throw bad(
      `field must be a non-empty string not starting with "@", got ${JSON.stringify(field)}`,
    );
  }
  const by = options.by ?? 1;
  if (typeof by !== "number" || !Number.isFinite(by) || by <= 0) {
    throw bad(`by must be a positive finite number, got ${String(by)}`);
  }
  if (typeof options.now !== "number" || !Number.isFinite(options.now) || options.now < 0) {
    throw bad(`now must be epoch ms (a finite number >= 0), got ${String(options.now)}`);
  }
  for (const name of ["halfLifeMs", "ttlMs"] as const) {
    const value = options[name];
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      throw bad(`${name} must be a positive finite number of ms, got ${String(value)}`);
    }
  }
  return { by, now: options.now, halfLifeMs: options.halfLifeMs, ttlMs: options.ttlMs };
}
