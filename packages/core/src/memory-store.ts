import { LRUCache } from "lru-cache";
import { GovernorError } from "./errors.ts";
import type { ClaimOptions, ClaimResult, LedgerEntry, LedgerState, Store } from "./store.ts";

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Most values, counters and settled ledger entries kept together; the least recently used go
   * first. Pending and uncertain entries do not count and are never evicted.
   * @default 10_000
   */
  readonly maxEntries?: number;
  /**
   * How long a settled (`succeeded` or `failed`) ledger entry is kept, in ms, measured by the
   * store's clock from the settle.
   * @default 86_400_000 (24 h)
   */
  readonly retentionMs?: number;
  /**
   * Hard cap on unsettled (`pending` or `uncertain`) ledger entries. When it is reached, claims of
   * new keys answer `ledger_full` rather than forget old entries (fail-closed).
   * @default 10_000
   */
  readonly maxUnsettled?: number;
  /**
   * The clock that expires values, counters and settled entries, in ms; any origin, but it must
   * return positive numbers. Inject one in tests. The ledger's lease uses the `now` passed to
   * `claim` and `settle` instead.
   * @default performance.now
   */
  readonly now?: () => number;
}

/** The {@link Store} of {@link createMemoryStore}: every method answers synchronously. */
export interface MemoryStore extends Store {
  get<T>(key: string): T | undefined;
  set<T>(key: string, value: T, ttlMs?: number): void;
  increment(key: string, by: number, ttlMs: number): number;
  claim(key: string, argsHash: string, options: ClaimOptions): ClaimResult;
  settle(
    key: string,
    state: Exclude<LedgerState, "pending">,
    options: { readonly now: number; readonly result?: unknown },
  ): void;
  entry(key: string): LedgerEntry | undefined;
}

/** A ledger entry as held: the result stays JSON text, so a caller cannot mutate it. */
interface EntryRecord {
  readonly argsHash: string;
  readonly state: LedgerState;
  readonly updatedAt: number;
  readonly result?: string;
}

/** Values and counters are JSON text (as in Redis); settled ledger entries share the LRU. */
type Slot = { readonly json: string } | { readonly record: EntryRecord };

const DAY_MS = 86_400_000;

/**
 * The embedded {@link Store}: one process, no I/O, every method answers synchronously.
 *
 * Values, counters and settled ledger entries live in a bounded LRU (lru-cache). Pending and
 * uncertain entries live in a plain map that eviction cannot reach, with a hard cap: when it is
 * full, claims of new keys answer `ledger_full` (DESIGN.md §4: the ledger is fail-closed).
 * Values are kept as JSON text, so what `get` returns is a copy, as it would be from Redis.
 *
 * @example
 * const store = createMemoryStore({ retentionMs: 3_600_000 });
 * const claim = store.claim(key, hashArgs(args), { now: Date.now(), allowUncertain: false, leaseMs: 30_000 });
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const maxEntries = positiveInteger("maxEntries", options.maxEntries ?? 10_000);
  const maxUnsettled = positiveInteger("maxUnsettled", options.maxUnsettled ?? 10_000);
  const retentionMs = positiveMs("retentionMs", options.retentionMs ?? DAY_MS);
  const { now } = options;
  if (now !== undefined && typeof now !== "function") {
    throw new GovernorError(
      "invalid_options",
      `createMemoryStore: now must be a function returning ms, got ${typeof now}.`,
    );
  }

  const lru = new LRUCache<string, Slot>({
    max: maxEntries,
    // Read the clock on every check: a cached reading would hide an injected clock's steps.
    ttlResolution: 0,
    ...(now !== undefined && { perf: { now } }),
  });
  const unsettled = new Map<string, EntryRecord>();
  const valueKey = (key: string) => `v:${key}`;
  const entryKey = (key: string) => `l:${key}`;

  function lookup(key: string): EntryRecord | undefined {
    const open = unsettled.get(key);
    if (open !== undefined) return open;
    const slot = lru.get(entryKey(key));
    return slot !== undefined && "record" in slot ? slot.record : undefined;
  }

  /** Puts a record where its state belongs: the map when unsettled, the LRU when settled. */
  function put(key: string, record: EntryRecord): LedgerEntry {
    if (record.state === "pending" || record.state === "uncertain") {
      lru.delete(entryKey(key));
      unsettled.set(key, record);
    } else {
      unsettled.delete(key);
      lru.set(entryKey(key), { record }, { ttl: retentionMs });
    }
    return toEntry(key, record);
  }

  return {
    get<T>(key: string): T | undefined {
      const slot = lru.get(valueKey(key));
      return slot !== undefined && "json" in slot ? (JSON.parse(slot.json) as T) : undefined;
    },

    set<T>(key: string, value: T, ttlMs?: number): void {
      const json = JSON.stringify(value) as string | undefined;
      if (json === undefined) {
        lru.delete(valueKey(key));
        return;
      }
      lru.set(
        valueKey(key),
        { json },
        { ttl: ttlMs === undefined ? 0 : positiveMs("ttlMs", ttlMs) },
      );
    },

    increment(key: string, by: number, ttlMs: number): number {
      if (!Number.isSafeInteger(by)) {
        throw new GovernorError(
          "invalid_options",
          `increment: by must be a safe integer, got ${String(by)}.`,
        );
      }
      const ttl = positiveMs("ttlMs", ttlMs);
      const k = valueKey(key);
      const slot = lru.get(k);
      let current = 0;
      if (slot !== undefined && "json" in slot) {
        const value: unknown = JSON.parse(slot.json);
        if (typeof value !== "number" || !Number.isSafeInteger(value)) {
          throw new GovernorError(
            "store_error",
            `increment: the value at "${key}" is not an integer counter; use another key for counters.`,
          );
        }
        current = value;
      }
      const next = current + by;
      // A counter expires ttlMs after its creation: increments keep the deadline it has (and give
      // one to a value that had none, like PEXPIRE NX).
      const keepDeadline =
        slot !== undefined && lru.getRemainingTTL(k) !== Number.POSITIVE_INFINITY;
      lru.set(k, { json: String(next) }, keepDeadline ? { noUpdateTTL: true } : { ttl });
      return next;
    },

    claim(key: string, argsHash: string, claim: ClaimOptions): ClaimResult {
      const { now: at, allowUncertain, leaseMs } = claim;
      const found = lookup(key);
      const pending: EntryRecord = { argsHash, state: "pending", updatedAt: at };
      if (found === undefined) {
        if (unsettled.size >= maxUnsettled) return { status: "ledger_full" };
        return { status: "claimed", entry: put(key, pending) };
      }
      // An empty hash is a key a host settled by hand without the arguments: it matches any.
      if (found.argsHash !== "" && found.argsHash !== argsHash) {
        return { status: "args_mismatch", entry: toEntry(key, found) };
      }
      switch (found.state) {
        case "succeeded":
          return { status: "succeeded", entry: toEntry(key, found) };
        case "failed":
          // The server answered with a failure: no effect, so the key may run again, but it
          // becomes unsettled and so counts against the cap.
          if (unsettled.size >= maxUnsettled) return { status: "ledger_full" };
          return { status: "claimed", entry: put(key, pending) };
        case "pending":
          if (at - found.updatedAt < leaseMs) {
            return { status: "in_flight", entry: toEntry(key, found) };
          }
          // The lease expired: the attempt that held it died, perhaps after sending.
          if (allowUncertain) return { status: "claimed", entry: put(key, pending) };
          return {
            status: "uncertain",
            entry: put(key, { argsHash: found.argsHash, state: "uncertain", updatedAt: at }),
          };
        case "uncertain":
          if (allowUncertain) return { status: "claimed", entry: put(key, pending) };
          return { status: "uncertain", entry: toEntry(key, found) };
      }
    },

    settle(
      key: string,
      state: Exclude<LedgerState, "pending">,
      settlement: { readonly now: number; readonly result?: unknown },
    ): void {
      const result =
        settlement.result === undefined
          ? undefined
          : (JSON.stringify(settlement.result) as string | undefined);
      put(key, {
        // A host settling a key it never claimed (by hand) does not know the arguments.
        argsHash: lookup(key)?.argsHash ?? "",
        state,
        updatedAt: settlement.now,
        ...(result !== undefined && { result }),
      });
    },

    entry(key: string): LedgerEntry | undefined {
      const record = lookup(key);
      return record === undefined ? undefined : toEntry(key, record);
    },
  };
}

function toEntry(key: string, record: EntryRecord): LedgerEntry {
  return {
    key,
    argsHash: record.argsHash,
    state: record.state,
    updatedAt: record.updatedAt,
    ...(record.result !== undefined && { result: JSON.parse(record.result) as unknown }),
  };
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new GovernorError(
      "invalid_options",
      `createMemoryStore: ${name} must be a positive integer, got ${String(value)}.`,
    );
  }
  return value;
}

function positiveMs(name: string, value: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new GovernorError(
      "invalid_options",
      `Memory store: ${name} must be a positive finite number of ms, got ${String(value)}.`,
    );
  }
  return value;
}
