import type { MaybePromise } from "./types.ts";

/** States of an idempotency key (DESIGN.md §4). */
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
  /** Epoch ms of the last change. */
  readonly updatedAt: number;
}

/** Options of {@link Store.claim}. */
export interface ClaimOptions {
  /** Epoch ms now. */
  readonly now: number;
  /**
   * Whether an `uncertain` entry may be claimed again: true when the tool honors keys (the server
   * deduplicates) or a verify step said the effect is absent. Otherwise an uncertain key refuses.
   */
  readonly allowUncertain: boolean;
  /**
   * How long a `pending` claim holds. A pending entry older than this belongs to an attempt that
   * died (a crashed worker): it is treated as `uncertain`, since that attempt may have been sent
   * (and recorded as `uncertain` when the claim is refused).
   */
  readonly leaseMs: number;
}

/**
 * The answer to a claim. `claimed` means this caller may execute (the entry is now `pending`);
 * every other answer means it must not.
 * - `in_flight`: another attempt holds the key right now (concurrent use is refused);
 * - `args_mismatch`: the key was minted for other arguments (refused, like Stripe);
 * - `succeeded`: done before; `entry.result` may be replayed;
 * - `uncertain`: sent before with no answer, and repeating it is not known to be safe;
 * - `ledger_full`: the hard cap of unsettled entries is reached; new mutations are refused
 *   rather than old entries forgotten (fail-closed).
 */
export type ClaimResult =
  | { readonly status: "claimed"; readonly entry: LedgerEntry }
  | {
      readonly status: "in_flight" | "args_mismatch" | "succeeded" | "uncertain";
      readonly entry: LedgerEntry;
    }
  | { readonly status: "ledger_full" };

/**
 * What must outlive a call: counters (retry budgets), small JSON values (breaker state) and the
 * idempotency ledger. Methods may answer synchronously or with a promise. Every implementation
 * must pass the contract suite in `@governor/core/testing`.
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
   * creates it (a host that checked by hand).
   */
  settle(
    key: string,
    state: Exclude<LedgerState, "pending">,
    options: { readonly now: number; readonly result?: unknown },
  ): MaybePromise<void>;
  /** Reads a ledger entry. */
  entry(key: string): MaybePromise<LedgerEntry | undefined>;
}
