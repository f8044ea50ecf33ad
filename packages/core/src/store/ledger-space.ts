// The memory store's ledger: one record per key in one map, the settled ones queued in settle
// order for their expiry, the kept results queued in keep order for the results' budget, and the
// records of each owner (a run instance) linked together until it is released.
import type { LedgerState } from "./store.ts";

/**
 * A ledger entry as held: one small object per key, changed in place as the key moves from pending
 * to settled (it never leaves the store: callers get copies). The result stays JSON text, made once
 * at the settle and parsed only for a replay: a caller cannot mutate the recorded result, neither
 * through the value it settled nor through a replay it was given, and the value itself is not kept
 * (a run's results can be collected while the ledger holds their text).
 */
export interface EntryRecord {
  readonly key: string;
  argsHash: string;
  state: LedgerState;
  updatedAt: number;
  /** The recorded result as JSON text (succeeded entries that kept one). */
  result: string | undefined;
  /** A succeeded entry whose result was given but not kept (the results' budget). */
  resultUnavailable: boolean;
  /**
   * A pending entry's lease as its holder asked for it (`ClaimOptions.leaseMs`); on a `failed` one
   * freed under a hold (`SettleOptions.holdMs`), the hold's length (it ends at `heldUntil`, by the
   * store's clock, for claims as for the record's keeping); 0 otherwise.
   */
  leaseMs: number;
  /**
   * A `failed` entry freed under a hold: when (by the store's clock) the hold runs out; until then
   * it is kept, whatever the retention, and never dropped to make room. 0 for none.
   */
  heldUntil: number;
  /**
   * The key's latest claim (`ClaimResult.claimedAt`), kept until the next: only a settle naming it
   * may free or mark the key. Ended (moved past every claim given) by a `succeeded` settle;
   * undefined for a key no claim has taken.
   */
  claimedAt: number | undefined;
  /** A settled entry: when (by the store's clock) its retention ends; 0 while unsettled. */
  expiresAt: number;
  /** The settle order's slot that stands for this settled record; 0 for none. */
  expirySlot: number;
  /** The kept results' slot that stands for this record's result; 0 for none. */
  keptSlot: number;
  /** The run instance that claimed the key (`ClaimOptions.owner`) until it is released. */
  owner: string | undefined;
  /** The owner's other records, linked both ways (the owner's newest record heads the list). */
  ownerPrev: EntryRecord | undefined;
  ownerNext: EntryRecord | undefined;
}

/** The bounds of a ledger space (see `MemoryStoreOptions`). */
export interface LedgerBounds {
  readonly retentionMs: number;
  readonly maxUnsettled: number;
  readonly maxLedgerEntries: number;
  readonly maxResultBytes: number;
}

/**
 * Records in the order they were queued, each slot numbered; a record names the slot that stands
 * for it (`expirySlot`, `keptSlot`), 0 for none. A slot its record has left (settled again,
 * claimed again, dropped, its result let go) is stale: skipped when it reaches the front, and
 * compacted away once stale slots outnumber live ones, so a queue stays within about twice its
 * live slots, whatever a host does.
 */
class Queue {
  records: EntryRecord[] = [];
  slots: number[] = [];
  head = 0;
  stale = 0;
  /** Bumped whenever the arrays are rebuilt or shed their front: an index read before is void. */
  layout = 0;
  #next = 0;

  constructor(readonly slotOf: (record: EntryRecord) => number) {}

  /** Queues a record at the back; its slot's number, for the record to keep. */
  push(record: EntryRecord): number {
    this.#next += 1;
    this.records.push(record);
    this.slots.push(this.#next);
    return this.#next;
  }

  /** Whether the front slot still stands for its record (there must be one). */
  frontLive(): boolean {
    return this.slotOf(this.records[this.head] as EntryRecord) === this.slots[this.head];
  }

  /** A record left its slot; compacts when stale slots outnumber the live ones. */
  left(): void {
    this.stale += 1;
    this.compact();
  }

  /** Drops the stale slots once they outnumber the live ones (and are 64 or more). */
  compact(): void {
    const queued = this.records.length - this.head;
    if (this.stale < 64 || this.stale * 2 < queued) return;
    const records: EntryRecord[] = [];
    const slots: number[] = [];
    for (let i = this.head; i < this.records.length; i++) {
      const record = this.records[i] as EntryRecord;
      const slot = this.slots[i] as number;
      if (this.slotOf(record) === slot) {
        records.push(record);
        slots.push(slot);
      }
    }
    this.records = records;
    this.slots = slots;
    this.head = 0;
    this.stale = 0;
    this.layout += 1;
  }

  /** Drops the front slot (after a look at it); the arrays shed their front now and then. */
  shift(wasStale: boolean): void {
    this.head += 1;
    if (wasStale) this.stale -= 1;
    if (this.head === this.records.length) {
      this.records.length = 0;
      this.slots.length = 0;
      this.head = 0;
      this.layout += 1;
    } else if (this.head >= 1024 && this.head * 2 >= this.records.length) {
      this.records.splice(0, this.head);
      this.slots.splice(0, this.head);
      this.head = 0;
      this.layout += 1;
    }
  }
}

/**
 * The ledger's own space: unsettled entries until settled, settled ones until their retention
 * ends, both under hard caps, and the kept results under their budget. Every record lives in one
 * map; the settled ones are also queued in settle order, so those past their retention are always
 * at the front, and the kept results in keep order, so the oldest go first. `oldest` is at most
 * the front's expiry (a lower value only costs a look): a settle looks at the front only when
 * something may have expired.
 */
export function createLedgerSpace(clockNow: () => number, bounds: LedgerBounds) {
  const { retentionMs, maxUnsettled, maxLedgerEntries, maxResultBytes } = bounds;
  const entries = new Map<string, EntryRecord>();
  let unsettled = 0;
  const expiring = new Queue((record) => record.expirySlot);
  let oldest = Number.POSITIVE_INFINITY;
  const kept = new Queue((record) => record.keptSlot);
  let keptBytes = 0;
  /** Each owner's newest record; the others follow it through `ownerNext`. */
  const owned = new Map<string, EntryRecord>();
  /**
   * Where the cap's scan (`dropOldestSettled`) starts again: the settle order's slots from its
   * head to `passedTo` were held until `passedUntil` at least, or stale, when it last passed them
   * (in its `passedLayout`). A live slot's record keeps its hold (a settle or claim that changes
   * it leaves the slot), so they need no second look until then.
   */
  let passedTo = 0;
  let passedUntil = 0;
  let passedLayout = -1;

  /** Takes a record out of its owner's list (it leaves the map, or its owner was released). */
  function unlink(record: EntryRecord): void {
    const { owner, ownerPrev, ownerNext } = record;
    if (owner === undefined) return;
    if (ownerNext !== undefined) ownerNext.ownerPrev = ownerPrev;
    if (ownerPrev !== undefined) ownerPrev.ownerNext = ownerNext;
    else if (ownerNext !== undefined) owned.set(owner, ownerNext);
    else owned.delete(owner);
    record.owner = undefined;
    record.ownerPrev = undefined;
    record.ownerNext = undefined;
  }

  /** Lets go of a record's result text (its state stays); `unavailable` marks it as lost. */
  function release(record: EntryRecord, unavailable: boolean, atFront = false): void {
    if (record.result === undefined) return;
    keptBytes -= record.result.length;
    record.result = undefined;
    record.resultUnavailable = unavailable;
    record.keptSlot = 0;
    if (!atFront) kept.left();
  }

  /** Keeps a settled record's result within the budget, the oldest kept results going first. */
  function keep(record: EntryRecord, result: string): void {
    if (result.length > maxResultBytes) {
      record.resultUnavailable = true;
      return;
    }
    while (keptBytes + result.length > maxResultBytes && kept.head < kept.records.length) {
      const live = kept.frontLive();
      if (live) release(kept.records[kept.head] as EntryRecord, true, true);
      kept.shift(!live);
    }
    record.result = result;
    keptBytes += result.length;
    record.keptSlot = kept.push(record);
  }

  /** Drops a settled record: gone from the map, its result's room given back. */
  function drop(record: EntryRecord, atFront: boolean): void {
    release(record, false);
    unlink(record);
    entries.delete(record.key);
    record.expirySlot = 0;
    if (!atFront) expiring.left();
  }

  function dropExpired(at: number): void {
    if (!(oldest < at)) return;
    while (expiring.head < expiring.records.length) {
      const live = expiring.frontLive();
      const record = expiring.records[expiring.head] as EntryRecord;
      if (live && record.expiresAt >= at) {
        oldest = record.expiresAt;
        return;
      }
      if (live) drop(record, true);
      expiring.shift(!live);
    }
    oldest = Number.POSITIVE_INFINITY;
  }

  /**
   * Drops settled records, the oldest settle first, until the ledger is below its cap. One still
   * under its hold is not dropped (forgotten, its key would be free while its holder may still
   * keep an answer there): it keeps its place, and the scan goes past it, so a ledger whose
   * settled records are all held has no room (a claim of a new key answers `ledger_full` until a
   * hold runs out). The slots of records dropped behind a held one go stale where they are. The
   * held ones passed are not looked at again until the first of their holds runs out.
   */
  function dropOldestSettled(): void {
    const at = clockNow();
    const resume = passedLayout === expiring.layout && at < passedUntil && passedTo > expiring.head;
    let i = resume ? passedTo : expiring.head;
    let until = resume ? passedUntil : Number.POSITIVE_INFINITY;
    while (entries.size >= maxLedgerEntries && i < expiring.records.length) {
      const record = expiring.records[i] as EntryRecord;
      const live = record.expirySlot === expiring.slots[i];
      const heldUntil = live ? record.heldUntil : 0;
      if (heldUntil > at) {
        if (heldUntil < until) until = heldUntil;
        i += 1;
      } else if (i === expiring.head) {
        if (live) drop(record, true);
        expiring.shift(!live);
        i = expiring.head;
      } else {
        if (live) {
          drop(record, true);
          expiring.stale += 1;
        }
        i += 1;
      }
    }
    // Before the compaction, which voids these indices if it rebuilds the queue.
    passedTo = i;
    passedUntil = until;
    passedLayout = expiring.layout;
    expiring.compact();
    if (expiring.head >= expiring.records.length) oldest = Number.POSITIVE_INFINITY;
  }

  /** Puts a record whose state changed where that state belongs. */
  function place(record: EntryRecord, wasSettled: boolean): void {
    // A settled record leaves its place in the settle order, whatever it becomes now.
    if (wasSettled) {
      record.expirySlot = 0;
      expiring.left();
    }
    if (record.state === "pending" || record.state === "uncertain") {
      record.expiresAt = 0;
      if (wasSettled) unsettled += 1;
      return;
    }
    if (!wasSettled) unsettled -= 1;
    const at = clockNow();
    dropExpired(at);
    record.expiresAt = at + retentionMs;
    if (record.expiresAt < oldest) oldest = record.expiresAt;
    record.expirySlot = expiring.push(record);
  }

  return {
    lookup(key: string): EntryRecord | undefined {
      const record = entries.get(key);
      if (record === undefined || record.expiresAt === 0) return record;
      if (record.expiresAt >= clockNow()) return record;
      drop(record, false);
      return undefined;
    },

    /**
     * Whether a claim may add a new key ("new") or reopen a failed one ("unsettled"). At the cap
     * of all entries, those past their retention go, then the oldest settled ones not under a hold
     * (`dropOldestSettled`): a settled entry
     * never refuses a write (as in RedisStore); only pending and uncertain ones fill the ledger.
     */
    hasRoomFor(kind: "new" | "unsettled"): boolean {
      if (unsettled >= maxUnsettled) return false;
      if (kind === "unsettled") return true;
      if (entries.size < maxLedgerEntries) return true;
      dropExpired(clockNow());
      dropOldestSettled();
      return entries.size < maxLedgerEntries;
    },

    /** A new key, claimed (`lookup` found nothing, so the map holds none), for its owner if any. */
    open(
      key: string,
      argsHash: string,
      at: number,
      leaseMs: number,
      owner: string | undefined,
    ): EntryRecord {
      const record = newRecord(key, argsHash, "pending", at, leaseMs);
      record.claimedAt = at;
      entries.set(key, record);
      unsettled += 1;
      if (owner !== undefined) {
        const next = owned.get(owner);
        record.owner = owner;
        record.ownerNext = next;
        if (next !== undefined) next.ownerPrev = record;
        owned.set(owner, record);
      }
      return record;
    },

    /**
     * The owner ended: its settled records go now (nobody can claim their keys again); its pending
     * and uncertain ones stay as they are, no longer its own, until settled and their retention
     * ends like any other.
     */
    releaseOwner(owner: string): void {
      let record = owned.get(owner);
      owned.delete(owner);
      while (record !== undefined) {
        const next: EntryRecord | undefined = record.ownerNext;
        record.owner = undefined;
        record.ownerPrev = undefined;
        record.ownerNext = undefined;
        if (isSettled(record.state)) drop(record, false);
        record = next;
      }
    },

    /**
     * A held key claimed again (`pending`, for the claimer's arguments: a new claim, marked past
     * the one before) or, without arguments, found uncertain (its arguments and claim kept): its
     * record, changed in place.
     */
    reopen(
      record: EntryRecord,
      argsHash: string | undefined,
      at: number,
      leaseMs: number,
    ): EntryRecord {
      const wasSettled = isSettled(record.state);
      if (argsHash !== undefined) {
        record.argsHash = argsHash;
        record.claimedAt = nextClaim(record.claimedAt, at);
      }
      record.state = argsHash === undefined ? "uncertain" : "pending";
      record.updatedAt = at;
      release(record, false);
      record.resultUnavailable = false;
      record.leaseMs = leaseMs;
      record.heldUntil = 0;
      place(record, wasSettled);
      return record;
    },

    /**
     * A settle: the held record changed in place, or a new one for a key nobody claimed. `holdMs`
     * (`settleHoldMs`: 0 for none) holds the held record's key for its claim: its length in
     * `leaseMs`, its end by the store's clock in `heldUntil`, which claims read and which keeps the
     * record at least that long. A new record frees no claim: it holds nothing.
     */
    record(
      key: string,
      found: EntryRecord | undefined,
      state: Exclude<LedgerState, "pending">,
      at: number,
      result: string | undefined,
      holdMs = 0,
    ): void {
      let record = found;
      let wasSettled = false;
      if (record === undefined) {
        // A host settling a key it never claimed (by hand) does not know the arguments. It
        // counts as unsettled until placed; a settle by hand is never refused for room.
        record = newRecord(key, "", state, at, 0);
        entries.set(key, record);
        unsettled += 1;
      } else {
        wasSettled = isSettled(record.state);
        record.state = state;
        record.updatedAt = at;
        release(record, false);
        record.resultUnavailable = false;
        record.leaseMs = 0;
        record.heldUntil = 0;
      }
      // The write is done: no claim may free or mark the key any more.
      if (state === "succeeded" && record.claimedAt !== undefined) record.claimedAt += 1;
      place(record, wasSettled);
      if (result !== undefined) keep(record, result);
      if (found !== undefined && holdMs > 0) {
        record.leaseMs = holdMs;
        record.heldUntil = clockNow() + holdMs;
        // Kept while held, whatever the retention: forgotten, the record would be free.
        if (record.heldUntil > record.expiresAt) record.expiresAt = record.heldUntil;
      }
    },
  };
}

/**
 * A new claim's mark: its `now`, or just past the key's claim before when that is not earlier
 * (a claimer whose clock is behind), so that no two claims of a key share one.
 */
function nextClaim(before: number | undefined, at: number): number {
  return before === undefined || at > before ? at : before + 1;
}

function isSettled(state: LedgerState): boolean {
  return state === "succeeded" || state === "failed";
}

function newRecord(
  key: string,
  argsHash: string,
  state: LedgerState,
  updatedAt: number,
  leaseMs: number,
): EntryRecord {
  return {
    key,
    argsHash,
    state,
    updatedAt,
    result: undefined,
    resultUnavailable: false,
    leaseMs,
    heldUntil: 0,
    claimedAt: undefined,
    expiresAt: 0,
    expirySlot: 0,
    keptSlot: 0,
    owner: undefined,
    ownerPrev: undefined,
    ownerNext: undefined,
  };
}
