import type {
  AddOutcomeOptions,
  ClaimOptions,
  ClaimResult,
  LedgerEntry,
  LedgerState,
  OutcomeRecord,
  SettleOptions,
  SynchronousStore,
} from "@governor/core";
import { checkAddOutcome, StoreError, settleHoldMs } from "@governor/core";
import { createLedger } from "./ledger.ts";
import { createOutcomes } from "./outcomes.ts";
import { openConnections } from "./schema.ts";
import { invalid, toStoreError } from "./store-errors.ts";
import { createValues } from "./values.ts";

/** Options of {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * The database file, created with its tables when it does not exist. Every process that opens
   * the same file shares one ledger. It must be on a local disk (WAL mode needs shared memory
   * between the processes: not over NFS or SMB).
   */
  readonly path: string;
  /**
   * How long settled (`succeeded` / `failed`) ledger entries are kept, in ms, by the store's clock
   * from the settle.
   * @default 86_400_000 (24 h)
   */
  readonly retentionMs?: number;
  /**
   * Hard cap on unsettled (`pending` / `uncertain`) ledger entries in the file. When it is
   * reached, claims of new keys answer `ledger_full` (fail-closed).
   * @default 10_000
   */
  readonly maxUnsettled?: number;
  /**
   * Most learned records (`addOutcome`) kept; past it the least recently updated go. Each record
   * also expires `ttlMs` after its last addition.
   * @default 10_000
   */
  readonly maxOutcomes?: number;
  /**
   * How long an operation waits for another process's write on the same file, in ms. The store
   * answers synchronously, so the waiting blocks this process's event loop; past it the operation
   * fails with a `StoreError` (`timeout`), and a claim is then a refusal.
   * @default 2_000
   */
  readonly busyTimeoutMs?: number;
  /**
   * The clock that expires values, counters, learned records and settled entries (epoch ms: every
   * process on the file must read the same clock). The ledger's lease uses the `now` passed to
   * `claim` and `settle` instead.
   * @default Date.now
   */
  readonly now?: () => number;
}

/** A {@link SynchronousStore} in an SQLite file: every method answers synchronously. */
export interface SqliteStore extends SynchronousStore {
  /** Closes the file; every later operation fails with a `StoreError` (`unavailable`). */
  close(): void;
}

/**
 * A durable {@link Store} in one SQLite file, on Node's built-in `node:sqlite` (Node 22.13 or
 * later): a process that restarts, and every other process on the machine that opens the same
 * file, sees every claim and settle it answered. The file is in WAL mode; each claim and settle is
 * one transaction that takes the write lock first and is on disk (fsync) before it answers.
 * Values, counters and learned records commit without their own fsync (see `Connections`).
 *
 * @example
 * const store = createSqliteStore({ path: "/var/lib/agent/governor.db" });
 * const governor = createGovernor(policy, { store });
 * // ... at shutdown:
 * store.close();
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  if (typeof options?.path !== "string" || options.path === "") {
    throw invalid(
      `path must be the database file's path (a non-empty string), got ${JSON.stringify(options?.path)}`,
    );
  }
  const retentionMs = positive("retentionMs", options.retentionMs ?? 86_400_000);
  const maxUnsettled = count("maxUnsettled", options.maxUnsettled ?? 10_000);
  const maxOutcomes = count("maxOutcomes", options.maxOutcomes ?? 10_000);
  const busyTimeoutMs = Math.ceil(positive("busyTimeoutMs", options.busyTimeoutMs ?? 2_000));
  if (options.now !== undefined && typeof options.now !== "function") {
    throw invalid(`now must be a function returning epoch ms, got ${typeof options.now}`);
  }
  const clock = options.now ?? Date.now;

  let closed = false;
  const db = attempt("open", () => openConnections(options.path, busyTimeoutMs));
  const ledger = createLedger(db.ledger, { retentionMs, maxUnsettled, clock });
  const values = createValues(db.values, clock);
  const outcomes = createOutcomes(db.values, maxOutcomes, clock);

  /** Runs one operation, turning any failure into a `StoreError` (store-errors.ts). */
  function attempt<T>(operation: string, body: () => T): T {
    if (closed) {
      throw new StoreError({
        reason: "unavailable",
        operation,
        message: `SqliteStore: ${operation} failed: the store was closed.`,
      });
    }
    try {
      return body();
    } catch (error) {
      throw toStoreError(operation, error);
    }
  }

  return {
    get<T>(key: string): T | undefined {
      const json = attempt("get", () => values.get(key));
      return json === undefined ? undefined : (JSON.parse(json) as T);
    },

    set<T>(key: string, value: T, ttlMs?: number): void {
      // JSON's own error for a value it cannot write (a BigInt, a cycle): the caller's, not the
      // store's, as the memory store throws it.
      const json = JSON.stringify(value) as string | undefined;
      const ttl = ttlMs === undefined ? undefined : positive("ttlMs", ttlMs);
      attempt("set", () => values.set(key, json, ttl));
    },

    increment(key: string, by: number, ttlMs: number): number {
      if (!Number.isSafeInteger(by)) {
        throw invalid(`increment: by must be a safe integer, got ${String(by)}`);
      }
      const ttl = positive("ttlMs", ttlMs);
      return attempt("increment", () => values.increment(key, by, ttl));
    },

    claim(key: string, argsHash: string, claim: ClaimOptions): ClaimResult {
      return attempt("claim", () => ledger.claim(key, argsHash, claim));
    },

    settle(key: string, state: Exclude<LedgerState, "pending">, settlement: SettleOptions): void {
      // Serialised before the transaction: a result JSON cannot write is the caller's error, and
      // the entry stays as it was.
      const result = jsonText(settlement.result);
      // The result a conditional settle expects (`SettleOptions.ifSucceeded`), as JSON text too.
      const { ifSucceeded } = settlement;
      const expected =
        ifSucceeded === undefined ? undefined : { text: jsonText(ifSucceeded.result) };
      attempt("settle", () =>
        ledger.settle(
          key,
          state,
          settlement.now,
          result,
          settlement.claimedAt,
          expected,
          settleHoldMs(state, settlement),
        ),
      );
    },

    entry(key: string): LedgerEntry | undefined {
      return attempt("entry", () => ledger.entry(key));
    },

    release(owner: string): void {
      if (typeof owner === "string") attempt("release", () => ledger.release(owner));
    },

    addOutcome(key: string, field: string, add: AddOutcomeOptions): OutcomeRecord {
      const { by, now, halfLifeMs, ttlMs } = checkAddOutcome(field, add);
      return attempt("addOutcome", () => outcomes.add(key, field, by, now, halfLifeMs, ttlMs));
    },

    outcome(key: string): OutcomeRecord | undefined {
      return attempt("outcome", () => outcomes.get(key));
    },

    listOutcomes(limit: number): OutcomeRecord[] {
      const max = count("limit", limit, "listOutcomes");
      return attempt("listOutcomes", () => outcomes.list(max));
    },

    resetOutcomes(prefix?: string): number {
      if (prefix !== undefined && typeof prefix !== "string") {
        throw invalid(`resetOutcomes: prefix must be a string, got ${typeof prefix}`);
      }
      return attempt("resetOutcomes", () => outcomes.reset(prefix));
    },

    close(): void {
      if (closed) return;
      closed = true;
      db.values.close();
      db.ledger.close();
    },
  };
}

function positive(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw invalid(`${name} must be a positive finite number of ms, got ${String(value)}`);
  }
  return value;
}

function count(name: string, value: number, method?: string): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    const where = method === undefined ? "" : `${method}: `;
    throw invalid(`${where}${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

/** A value as the ledger keeps it: JSON text, or undefined for none. */
function jsonText(value: unknown): string | undefined {
  return value === undefined ? undefined : (JSON.stringify(value) as string | undefined);
}
