import { LRUCache } from "lru-cache";
import { GovernorError } from "../errors.ts";
import { addToCounts } from "../judge/learned.ts";
import { createLedgerSpace, type EntryRecord } from "./ledger-space.ts";
import {
  type AddOutcomeOptions,
  type ClaimOptions,
  type ClaimResult,
  checkAddOutcome,
  isHeld,
  type LedgerEntry,
  type LedgerState,
  type OutcomeRecord,
  type SettleOptions,
  type SynchronousStore,
  settleHoldMs,
} from "./store.ts";

/** Options of {@link createMemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Most values and counters (`set`, `increment`: breaker state, retry budgets) kept together; the
   * least recently used go first. Ledger entries live apart and never count here, so no amount of
   * ordinary traffic can push a ledger entry out.
   * @default 10_000
   */
  readonly maxEntries?: number;
  /**
   * How long a settled (`succeeded` or `failed`) ledger entry is kept, in ms, measured by the
   * store's clock from the settle. Settled entries go when this has passed, or earlier when
   * nobody can claim their key again (a key a run minted from its instance, for a call without
   * `callId` or without `idempotencyScope`, goes when that run ends: `release`, if it is settled
   * by then), or when `maxLedgerEntries` is reached (the oldest settled first). A `failed` entry
   * freed under a hold (`SettleOptions.holdMs`) is kept until the hold runs out, by retention and
   * cap alike.
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
   * Cap on all ledger entries, settled ones within their retention included (a run's own keys
   * leave when it ends: see `retentionMs`). When it is reached, entries past their retention go,
   * then the oldest settled ones (as in RedisStore): a settled entry never refuses a write. A
   * `failed` one still under its hold (`SettleOptions.holdMs`) is not dropped until the hold runs
   * out (dropped, its key would be free while its holder may still keep an answer there): only
   * when every entry is pending, uncertain or so held do claims of new keys answer `ledger_full`. A host
   * settling a key it never claimed is never refused, and may go past the cap.
   * @default 100_000
   */
  readonly maxLedgerEntries?: number;
  /**
   * Most learned records (`addOutcome`) kept; the least recently used go first. Apart from the
   * values and the ledger: learning can push out neither.
   * @default 10_000
   */
  readonly maxOutcomes?: number;
  /**
   * Most result text the ledger keeps for replays, all `succeeded` entries together, counted as
   * the length of each result's JSON text (one unit per UTF-16 code unit: about a byte for ASCII
   * text). Past it, the oldest kept results go first; a single result longer than the whole budget
   * is not kept. An entry whose result went keeps its state and reads `resultUnavailable: true`:
   * the write is replayed as done, with no result to show, and never runs again.
   * @default 67_108_864 (64 Mi)
   */
  readonly maxResultBytes?: number;
  /**
   * The clock that expires values, counters and settled entries, in ms; any origin, but it must
   * return positive numbers. Inject one in tests. The ledger's lease uses the `now` passed to
   * `claim` and `settle` instead; a hold (`SettleOptions.holdMs`) runs by this clock, as the
   * entry it keeps.
   * @default performance.now
   */
  readonly now?: () => number;
}

/** The store of {@link createMemoryStore}: a {@link SynchronousStore} (every method answers synchronously). */
export type MemoryStore = SynchronousStore;

const DAY_MS = 86_400_000;

/** An object value, held as JSON text so that each `get` answers a copy. */
class JsonText {
  constructor(readonly text: string) {}
}

/**
 * A counter made by `increment`: a box the next increment changes in place, so counting a call
 * (a retry budget's window) sets nothing in the LRU and keeps the deadline it was made with.
 */
class Counter {
  constructor(public value: number) {}
}

/**
 * A flat plain object (a breaker state, say) as JSON would carry it: its own enumerable keys in
 * JSON's order, each value a string, boolean, null or finite number (-0 as 0). Held apart from the
 * caller's object, and every `get` answers a fresh shallow copy: the same value, as mutable and as
 * unshared, as `JSON.parse` of its JSON text, without the text (no stringify, no parse per call).
 */
class FlatObject {
  constructor(readonly fields: Record<string, string | number | boolean | null>) {}
}

/** null as stored: read back without parsing. */
const NULL = new JsonText("null");

/**
 * What the values LRU holds: primitives as they are, flat plain objects copied, other objects as
 * JSON text, counters boxed.
 */
type StoredValue = string | number | boolean | JsonText | FlatObject | Counter;

/**
 * The object as a {@link FlatObject} when JSON would carry it field for field; undefined when it
 * needs JSON's own rules (a prototype, a `toJSON`, a nested object or array, a bigint, a
 * `__proto__` key): those go through JSON text, as before.
 */
function toFlat(value: object): FlatObject | undefined {
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return undefined;
  const fields: Record<string, string | number | boolean | null> = {};
  for (const key of Object.keys(value)) {
    if (key === "__proto__" || key === "toJSON") return undefined;
    const field = (value as Record<string, unknown>)[key];
    switch (typeof field) {
      case "number":
        // As JSON would: NaN and Infinity as null, -0 as 0.
        fields[key] = Number.isFinite(field) ? field + 0 : null;
        break;
      case "string":
      case "boolean":
        fields[key] = field;
        break;
      case "undefined":
      case "function":
      case "symbol":
        // JSON leaves such a field out.
        break;
      case "object":
        if (field !== null) return undefined;
        fields[key] = null;
        break;
      default:
        // A bigint: JSON.stringify throws, and so must set.
        return undefined;
    }
  }
  return new FlatObject(fields);
}

const KEEP_TTL = { noUpdateTTL: true } as const;

/** The options object `lruGet` hands to every read (lru-cache allocates one per read without). */
const GET_OPTIONS: { status?: unknown } = {};

/**
 * `lru.get(key)` without an options object per read. lru-cache writes a status into the options it
 * is given; it is cleared after each read, so every read starts as with fresh options.
 */
function lruGet<V extends {}>(lru: LRUCache<string, V>, key: string): V | undefined {
  try {
    return lru.get(key, GET_OPTIONS as LRUCache.GetOptions<string, V, unknown>);
  } finally {
    GET_OPTIONS.status = undefined;
  }
}

/** A value as the store keeps it; undefined for what JSON drops (the key is deleted then). */
function toStored(value: unknown): StoredValue | undefined {
  switch (typeof value) {
    case "number":
      // As JSON would: NaN and Infinity read back as null, -0 as 0 (as from Redis).
      return Number.isFinite(value) ? value + 0 : NULL;
    case "string":
    case "boolean":
      return value;
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  // A breaker closed again is written as null, then read on every success for minutes.
  if (value === null) return NULL;
  const flat = toFlat(value as object);
  if (flat !== undefined) return flat;
  const json = JSON.stringify(value) as string | undefined;
  return json === undefined ? undefined : new JsonText(json);
}

/**
 * The embedded {@link Store}: one process, no I/O, every method answers synchronously.
 *
 * Values and counters live in a bounded LRU (lru-cache). The ledger lives apart, where that LRU
 * cannot reach: pending and uncertain entries until they are settled (hard cap `maxUnsettled`),
 * succeeded and failed ones until their retention ends, until the run that owned them ends
 * (`release`: keys nobody can claim again), or until room is needed under `maxLedgerEntries` (the
 * oldest settled first, but none still under a hold). When pending and uncertain entries (and
 * held ones) fill a cap, claims of new keys answer
 * `ledger_full` (docs/idempotency.md: the ledger is fail-closed); a write in doubt is never
 * forgotten to make room. Objects given to `set` are kept apart from the
 * caller's (flat plain objects as a copy, others as JSON text), so what `get` returns is a fresh
 * copy with JSON's values, as it would be from Redis; numbers and other primitives are kept
 * as they are (a counter costs no JSON). A ledger result is kept as JSON text too.
 *
 * @example
 * const store = createMemoryStore({ retentionMs: 3_600_000 });
 * const claim = store.claim(key, hashArgs(args), { now: Date.now(), allowUncertain: false, leaseMs: 30_000 });
 */
/** The stores {@link createMemoryStore} made. */
const memoryStores = new WeakSet<object>();

/**
 * Whether a store is one {@link createMemoryStore} made: its synchronous answers run no code of a
 * host's and take no time worth a clock reading (a host's own synchronous store may).
 * @internal Not part of the public API.
 */
export function isMemoryStore(store: object): boolean {
  return memoryStores.has(store);
}

export function createMemoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const maxEntries = positiveInteger("maxEntries", options.maxEntries ?? 10_000);
  const maxUnsettled = positiveInteger("maxUnsettled", options.maxUnsettled ?? 10_000);
  const maxLedgerEntries = positiveInteger("maxLedgerEntries", options.maxLedgerEntries ?? 100_000);
  const retentionMs = positiveMs("retentionMs", options.retentionMs ?? DAY_MS);
  const maxOutcomes = positiveInteger("maxOutcomes", options.maxOutcomes ?? 10_000);
  const maxResultBytes = positiveInteger(
    "maxResultBytes",
    options.maxResultBytes ?? 64 * 1024 * 1024,
  );
  const { now } = options;
  if (now !== undefined && typeof now !== "function") {
    throw new GovernorError(
      "invalid_options",
      `createMemoryStore: now must be a function returning ms, got ${typeof now}.`,
    );
  }
  const clock = now ?? (() => performance.now());

  const lru = new LRUCache<string, StoredValue>({
    max: maxEntries,
    // Read the clock on every check: a cached reading would hide an injected clock's steps.
    ttlResolution: 0,
    ...(now !== undefined && { perf: { now } }),
  });
  const ledger = createLedgerSpace(clock, {
    retentionMs,
    maxUnsettled,
    maxLedgerEntries,
    maxResultBytes,
  });
  const outcomes = new LRUCache<string, OutcomeRecord>({
    max: maxOutcomes,
    ttlResolution: 0,
    ...(now !== undefined && { perf: { now } }),
  });

  const store: MemoryStore = {
    get<T>(key: string): T | undefined {
      const stored = lruGet(lru, key);
      if (typeof stored !== "object") return stored as T | undefined;
      if (stored === NULL) return null as T;
      if (stored instanceof FlatObject) return { ...stored.fields } as T;
      return (stored instanceof Counter ? stored.value : JSON.parse(stored.text)) as T;
    },

    set<T>(key: string, value: T, ttlMs?: number): void {
      const stored = toStored(value);
      if (stored === undefined) {
        lru.delete(key);
        return;
      }
      lru.set(key, stored, { ttl: ttlMs === undefined ? 0 : positiveMs("ttlMs", ttlMs) });
    },

    increment(key: string, by: number, ttlMs: number): number {
      if (!Number.isSafeInteger(by)) {
        throw new GovernorError(
          "invalid_options",
          `increment: by must be a safe integer, got ${String(by)}.`,
        );
      }
      const ttl = positiveMs("ttlMs", ttlMs);
      const value = lruGet(lru, key);
      // A counter made here has its deadline already: it changes in place.
      if (value instanceof Counter) {
        value.value += by;
        return value.value;
      }
      let current = 0;
      if (value !== undefined) {
        if (typeof value !== "number" || !Number.isSafeInteger(value)) {
          throw new GovernorError(
            "store_error",
            `increment: the value at "${key}" is not an integer counter; use another key for counters.`,
          );
        }
        current = value;
      }
      const next = new Counter(current + by);
      // A counter expires ttlMs after its creation: increments keep the deadline it has (and give
      // one to a value that had none, like PEXPIRE NX).
      const keepDeadline =
        value !== undefined && lru.getRemainingTTL(key) !== Number.POSITIVE_INFINITY;
      lru.set(key, next, keepDeadline ? KEEP_TTL : { ttl });
      return next.value;
    },

    claim(key: string, argsHash: string, claim: ClaimOptions): ClaimResult {
      const { now: at, allowUncertain, leaseMs } = claim;
      const found = ledger.lookup(key);
      if (found === undefined) {
        if (!ledger.hasRoomFor("new")) return { status: "ledger_full" };
        const owner = typeof claim.owner === "string" ? claim.owner : undefined;
        return claimed(key, ledger.open(key, argsHash, at, leaseMs, owner));
      }
      // An empty hash is a key a host settled by hand without the arguments: it matches any.
      if (found.argsHash !== "" && found.argsHash !== argsHash) {
        return { status: "args_mismatch", entry: toEntry(key, found) };
      }
      switch (found.state) {
        case "succeeded":
          return { status: "succeeded", entry: toEntry(key, found) };
        case "failed": {
          // Freed under a hold (`SettleOptions.holdMs`) that has not run out: its holder may
          // still keep an answer there, unless it handed it over (`ClaimOptions.handedOver`).
          // Read by the store's clock, which keeps the entry as long (`heldUntil`): by the
          // callers' `now`, a wall clock set forward would end it while the entry is kept for it.
          const hold = {
            holdMs: found.leaseMs,
            heldSince: found.heldUntil - found.leaseMs,
            ...(found.claimedAt !== undefined && { claimedAt: found.claimedAt }),
          };
          if (isHeld(hold, clock(), claim.handedOver)) {
            return { status: "in_flight", entry: toEntry(key, found) };
          }
          // The server answered with a failure: no effect, so the key may run again, but it
          // becomes unsettled and so counts against the cap.
          if (!ledger.hasRoomFor("unsettled")) return { status: "ledger_full" };
          return claimed(key, ledger.reopen(found, argsHash, at, leaseMs));
        }
        case "pending":
          // The holder's lease counts, however short this claimer's is: a claimer must not take
          // a key whose attempt may still be running.
          if (at - found.updatedAt < Math.max(leaseMs, found.leaseMs)) {
            return { status: "in_flight", entry: toEntry(key, found) };
          }
          // The lease expired: the attempt that held it died, perhaps after sending.
          if (allowUncertain) return retaken(key, ledger.reopen(found, argsHash, at, leaseMs));
          return {
            status: "uncertain",
            entry: toEntry(key, ledger.reopen(found, undefined, at, 0)),
          };
        case "uncertain":
          if (allowUncertain) return retaken(key, ledger.reopen(found, argsHash, at, leaseMs));
          return { status: "uncertain", entry: toEntry(key, found) };
      }
    },

    settle(key: string, state: Exclude<LedgerState, "pending">, settlement: SettleOptions): void {
      // Serialised once, here: the text is what a replay parses, so later changes to the value
      // the caller settled never reach the record (a value that is not JSON throws, as in Redis).
      const result =
        settlement.result === undefined
          ? undefined
          : (JSON.stringify(settlement.result) as string | undefined);
      const found = ledger.lookup(key);
      if (supersededBy(found, state, settlement)) return;
      if (settlement.ifSucceeded !== undefined && !succeededWith(found, settlement.ifSucceeded)) {
        return;
      }
      // A failed record has no lease: its `leaseMs` holds the hold's length, ended by the store's
      // clock (`heldUntil`).
      ledger.record(key, found, state, settlement.now, result, settleHoldMs(state, settlement));
    },

    entry(key: string): LedgerEntry | undefined {
      const record = ledger.lookup(key);
      if (record === undefined) return undefined;
      const entry = toEntry(key, record);
      if (record.state !== "pending") return entry;
      // A pending entry names its holder's lease (read by `governor.settle`) and claim.
      return {
        ...entry,
        ...(record.leaseMs > 0 && { leaseMs: record.leaseMs }),
        ...(record.claimedAt !== undefined && { claimedAt: record.claimedAt }),
      };
    },

    release(owner: string): void {
      if (typeof owner === "string") ledger.releaseOwner(owner);
    },

    addOutcome(key: string, field: string, add: AddOutcomeOptions): OutcomeRecord {
      const { by, now: at, halfLifeMs, ttlMs } = checkAddOutcome(field, add);
      const next = { key, ...addToCounts(outcomes.get(key), field, by, at, halfLifeMs) };
      outcomes.set(key, next, { ttl: ttlMs });
      return copyRecord(next);
    },

    outcome(key: string): OutcomeRecord | undefined {
      const found = outcomes.get(key);
      return found === undefined ? undefined : copyRecord(found);
    },

    listOutcomes(limit: number): OutcomeRecord[] {
      const max = positiveInteger("limit", limit);
      outcomes.purgeStale();
      const all: OutcomeRecord[] = [];
      for (const record of outcomes.values()) all.push(copyRecord(record));
      return all.sort((a, b) => b.updatedAt - a.updatedAt).slice(0, max);
    },

    resetOutcomes(prefix?: string): number {
      if (prefix !== undefined && typeof prefix !== "string") {
        throw new GovernorError(
          "invalid_options",
          `resetOutcomes: prefix must be a string, got ${typeof prefix}.`,
        );
      }
      outcomes.purgeStale();
      let removed = 0;
      for (const key of [...outcomes.keys()]) {
        if (prefix === undefined || key.startsWith(prefix)) {
          if (outcomes.delete(key)) removed += 1;
        }
      }
      return removed;
    },
  };
  memoryStores.add(store);
  return store;
}

/**
 * Whether a late settle would free or mark a key whose latest claim is not the settler's (another
 * attempt has claimed it since, or a success ended the claim), or demote a key someone else
 * settled `succeeded` meanwhile (a person, or an attempt that took it over): the write is known
 * done.
 */
function supersededBy(
  found: EntryRecord | undefined,
  state: Exclude<LedgerState, "pending">,
  settlement: SettleOptions,
): boolean {
  return (
    settlement.claimedAt !== undefined &&
    state !== "succeeded" &&
    found !== undefined &&
    (found.state === "succeeded" || found.claimedAt !== settlement.claimedAt)
  );
}

/** Whether the key is `succeeded` with the result a caller read (`SettleOptions.ifSucceeded`). */
function succeededWith(
  found: EntryRecord | undefined,
  expected: { readonly result?: unknown },
): boolean {
  if (found?.state !== "succeeded") return false;
  const text =
    expected.result === undefined
      ? undefined
      : (JSON.stringify(expected.result) as string | undefined);
  return found.result === text;
}

function copyRecord(record: OutcomeRecord): OutcomeRecord {
  return { key: record.key, counts: { ...record.counts }, updatedAt: record.updatedAt };
}

/** A claim's answer for a key it took: the entry as a plain copy (a new claim has no result). */
function claimed(key: string, record: EntryRecord): ClaimResult {
  return {
    status: "claimed",
    entry: { key, argsHash: record.argsHash, state: record.state, updatedAt: record.updatedAt },
    claimedAt: record.claimedAt as number,
  };
}

/** A claim's answer for a key it took over from a write in doubt (`ClaimResult.retaken`). */
function retaken(key: string, record: EntryRecord): ClaimResult {
  return {
    status: "claimed",
    entry: { key, argsHash: record.argsHash, state: record.state, updatedAt: record.updatedAt },
    claimedAt: record.claimedAt as number,
    retaken: true,
  };
}

/** A record as the caller sees it: a copy, its result parsed from the text (a fresh value each time). */
function toEntry(key: string, record: EntryRecord): LedgerEntry {
  if (record.result === undefined) {
    const entry = {
      key,
      argsHash: record.argsHash,
      state: record.state,
      updatedAt: record.updatedAt,
    };
    return record.resultUnavailable ? { ...entry, resultUnavailable: true } : entry;
  }
  return {
    key,
    argsHash: record.argsHash,
    state: record.state,
    updatedAt: record.updatedAt,
    result: JSON.parse(record.result) as unknown,
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
