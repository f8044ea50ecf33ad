// The idempotency ledger in the `governor_ledger` table: each claim and settle is one transaction
// that takes the file's write lock first (BEGIN IMMEDIATE), so two processes on one file never
// both claim a key, and commits with an fsync (the ledger connection is `synchronous = FULL`).
import {
  type ClaimOptions,
  type ClaimResult,
  isHeld,
  type LedgerEntry,
  type LedgerState,
} from "@governor/core";
import type { Database, SqlValue } from "./sqlite-api.ts";
import { unexpectedRow } from "./store-errors.ts";
import { transaction } from "./transaction.ts";

/** The ledger's bounds (see `SqliteStoreOptions`). */
export interface LedgerOptions {
  readonly retentionMs: number;
  readonly maxUnsettled: number;
  /** The store's clock (epoch ms): settled entries expire `retentionMs` after their settle by it. */
  readonly clock: () => number;
}

/** A row of `governor_ledger`. */
interface Row {
  readonly args_hash: string;
  readonly state: LedgerState;
  readonly updated_at: number;
  readonly lease_ms: number;
  readonly result: string | null;
  readonly result_unavailable: number;
  /** The key's latest claim (`ClaimResult.claimedAt`); null for none, or one a success ended. */
  readonly claimed_at: number | null;
}

const STATES = new Set<string>(["pending", "succeeded", "failed", "uncertain"]);

export function createLedger(db: Database, options: LedgerOptions) {
  const { retentionMs, maxUnsettled, clock } = options;
  const select = db.prepare(
    "SELECT args_hash, state, updated_at, lease_ms, result, result_unavailable, claimed_at FROM governor_ledger WHERE key = ? AND (expires_at IS NULL OR expires_at >= ?)",
  );
  const purge = db.prepare("DELETE FROM governor_ledger WHERE expires_at < ?");
  const unsettled = db.prepare(
    "SELECT count(*) AS n FROM governor_ledger WHERE state IN ('pending', 'uncertain')",
  );
  const insert = db.prepare(
    "INSERT INTO governor_ledger (key, args_hash, state, updated_at, lease_ms, result, expires_at, owner, claimed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
  );
  // A key claimed again (pending, for the claimer's arguments, under a new claim) or found stale
  // (uncertain, its claim kept): the result goes, the owner stays.
  const reopen = db.prepare(
    "UPDATE governor_ledger SET args_hash = ?, state = ?, updated_at = ?, lease_ms = ?, result = NULL, result_unavailable = 0, expires_at = NULL, claimed_at = ? WHERE key = ?",
  );
  // A settled row has no lease: a `failed` one freed under a hold (`SettleOptions.holdMs`) keeps
  // the hold in `lease_ms`, counted from its `updated_at` (a version that knows no holds writes 0).
  const record = db.prepare(
    "UPDATE governor_ledger SET state = ?, updated_at = ?, lease_ms = ?, result = ?, result_unavailable = 0, expires_at = ?, claimed_at = ? WHERE key = ?",
  );
  const dropOwned = db.prepare(
    "DELETE FROM governor_ledger WHERE owner = ? AND state IN ('succeeded', 'failed')",
  );
  const disown = db.prepare("UPDATE governor_ledger SET owner = NULL WHERE owner = ?");

  /** The key's row, unless past its retention at `time` (one clock reading per transaction). */
  const lookup = (key: string, operation: string, time: number): Row | undefined => {
    const row = select.get(key, time) as Row | undefined;
    if (row !== undefined && !STATES.has(row.state)) throw unexpectedRow(operation);
    return row;
  };
  const hasRoom = (): boolean => Number(unsettled.get()?.n ?? 0) < maxUnsettled;
  const expiry = (state: LedgerState, time: number): number | null =>
    state === "succeeded" || state === "failed" ? time + retentionMs : null;

  /** A held key taken by a new claim, marked past the one before (`nextClaim`). */
  const take = (
    key: string,
    argsHash: string,
    at: number,
    leaseMs: number,
    found: Row,
  ): ClaimResult => {
    const claimedAt = nextClaim(found.claimed_at, at);
    reopen.run(argsHash, "pending", at, leaseMs, claimedAt, key);
    return claimed(key, argsHash, at, claimedAt);
  };

  return {
    claim(key: string, argsHash: string, claim: ClaimOptions): ClaimResult {
      const { now: at, allowUncertain, leaseMs } = claim;
      return transaction(db, () => {
        const time = clock();
        purge.run(time);
        const found = lookup(key, "claim", time);
        if (found === undefined) {
          if (!hasRoom()) return { status: "ledger_full" };
          const owner = typeof claim.owner === "string" ? claim.owner : null;
          insert.run(key, argsHash, "pending", at, leaseMs, null, null, owner, at);
          return claimed(key, argsHash, at, at);
        }
        // An empty hash is a key a host settled by hand without the arguments: it matches any.
        if (found.args_hash !== "" && found.args_hash !== argsHash) {
          return { status: "args_mismatch", entry: toEntry(key, found) };
        }
        switch (found.state) {
          case "succeeded":
            return { status: "succeeded", entry: toEntry(key, found) };
          case "failed": {
            // Freed under a hold that has not run out: its holder may still keep an answer
            // there, unless it handed it over (`ClaimOptions.handedOver`).
            const hold = {
              holdMs: found.lease_ms,
              heldSince: found.updated_at,
              ...(found.claimed_at !== null && { claimedAt: found.claimed_at }),
            };
            if (isHeld(hold, at, claim.handedOver)) {
              return { status: "in_flight", entry: toEntry(key, found) };
            }
            // The server answered with a failure: no effect, so the key may run again, but it
            // becomes unsettled and so counts against the cap.
            if (!hasRoom()) return { status: "ledger_full" };
            return take(key, argsHash, at, leaseMs, found);
          }
          case "pending":
            // The holder's lease counts, however short this claimer's is.
            if (at - found.updated_at < Math.max(leaseMs, found.lease_ms)) {
              return { status: "in_flight", entry: toEntry(key, found) };
            }
            // The lease expired: the attempt that held it died, perhaps after sending.
            if (allowUncertain)
              return { ...take(key, argsHash, at, leaseMs, found), retaken: true };
            reopen.run(found.args_hash, "uncertain", at, 0, found.claimed_at, key);
            return {
              status: "uncertain",
              entry: { key, argsHash: found.args_hash, state: "uncertain", updatedAt: at },
            };
          case "uncertain":
            if (!allowUncertain) return { status: "uncertain", entry: toEntry(key, found) };
            return { ...take(key, argsHash, at, leaseMs, found), retaken: true };
        }
      });
    },

    /**
     * `result` is the JSON text of the settled result, made by the caller (undefined: none);
     * `expected`, the result text a conditional settle expects (`SettleOptions.ifSucceeded`).
     */
    settle(
      key: string,
      state: Exclude<LedgerState, "pending">,
      now: number,
      result: string | undefined,
      claimedAt: number | undefined,
      expected?: { readonly text: string | undefined },
      /** The hold the settle keeps (`settleHoldMs`): 0 for none. */
      held = 0,
    ): void {
      transaction(db, () => {
        const time = clock();
        const found = lookup(key, "settle", time);
        // A late failed or uncertain settle must not free, or mark, a key whose latest claim is
        // not the settler's (another attempt took it, or a success ended the claim), nor demote
        // one settled `succeeded` meanwhile (by a person, or by that attempt).
        if (
          claimedAt !== undefined &&
          state !== "succeeded" &&
          found !== undefined &&
          (found.state === "succeeded" || found.claimed_at !== claimedAt)
        ) {
          return;
        }
        // Only the succeeded entry the settler read: not one a newer success has written since.
        if (
          expected !== undefined &&
          (found?.state !== "succeeded" || (found.result ?? undefined) !== expected.text)
        ) {
          return;
        }
        const text: SqlValue = result ?? null;
        if (found === undefined) {
          // A host settling a key it never claimed (by hand) does not know the arguments. A row
          // past its retention may still be there: it goes first.
          purge.run(time);
          insert.run(key, "", state, now, 0, text, expiry(state, time), null, null);
        } else {
          // The write is done: no claim may free or mark the key any more.
          const claim =
            state === "succeeded" && found.claimed_at !== null
              ? found.claimed_at + 1
              : found.claimed_at;
          // Kept while held, whatever the retention: forgotten, the row would be free.
          const expires =
            held > 0 ? Math.max(expiry(state, time) as number, time + held) : expiry(state, time);
          record.run(state, now, held, text, expires, claim, key);
        }
      });
    },

    entry(key: string): LedgerEntry | undefined {
      const found = lookup(key, "entry", clock());
      if (found === undefined) return undefined;
      const entry = toEntry(key, found);
      if (found.state !== "pending") return entry;
      // A pending entry names its holder's lease (read by `governor.settle`) and claim.
      return {
        ...entry,
        ...(found.lease_ms > 0 && { leaseMs: found.lease_ms }),
        ...(found.claimed_at !== null && { claimedAt: found.claimed_at }),
      };
    },

    release(owner: string): void {
      transaction(db, () => {
        dropOwned.run(owner);
        disown.run(owner);
      });
    },
  };
}

/**
 * A new claim's mark: its `now`, or just past the key's claim before when that is not earlier (a
 * claimer whose clock is behind), so that no two claims of a key share one (as the memory store).
 */
function nextClaim(before: number | null, at: number): number {
  return before === null || at > before ? at : before + 1;
}

function claimed(key: string, argsHash: string, at: number, claimedAt: number): ClaimResult {
  return {
    status: "claimed",
    entry: { key, argsHash, state: "pending", updatedAt: at },
    claimedAt,
  };
}

function toEntry(key: string, row: Row): LedgerEntry {
  const entry: LedgerEntry = {
    key,
    argsHash: row.args_hash,
    state: row.state,
    updatedAt: row.updated_at,
  };
  if (row.result !== null) return { ...entry, result: JSON.parse(row.result) as unknown };
  return row.result_unavailable === 1 ? { ...entry, resultUnavailable: true } : entry;
}
