import { hashCanonical } from "../judge/canonical.ts";
import { signResultInto } from "./result-signature.ts";

/** How many distinct calls a run's loop detector follows; the oldest are forgotten first. */
export const MAX_TRACKED_CALLS = 1_000;

/** What the loop detector knows of one call: its last result's signature, and how often in a row. */
export interface Seen {
  readonly sig: string;
  readonly count: number;
}

/**
 * A run's loop detector: per call (its server, its tool and a key of its canonical arguments),
 * the last result's signature and how many times in a row it came back. It keeps signatures (a
 * failure's fingerprint, a success's JSON or its hash), never results, and at most `max` calls:
 * when full, the call first seen longest ago goes (a ring of slots, so no scan of the maps).
 * `tool` and `server` default to "": a detector may key calls by one string alone.
 */
export interface LoopDetector {
  /** What is known of a call. */
  get(key: string, tool?: string, server?: string): Seen | undefined;
  /** How many times in a row a call's last result came back (0 when it was never seen). */
  count(key: string, tool?: string, server?: string): number;
  /**
   * Records a call's success by a 53-bit hash of its JSON (see `resultSignature`): what the run
   * notes, with no text made.
   */
  noteSuccess(key: string, value: unknown, tool?: string, server?: string): void;
  /**
   * Records a call's result: a failure by its fingerprint, a success by its JSON, a hash when long
   * (`resultHash`; a call is noted one way or the other, not both).
   */
  note(
    key: string,
    result: { failure: string } | { value: unknown },
    tool?: string,
    server?: string,
  ): void;
  /** Records a call's failure by its fingerprint (as `note` with `{ failure }`, no object made). */
  noteFailure(key: string, fingerprint: string, tool?: string, server?: string): void;
  /** Forgets everything (the run ended). */
  clear(): void;
}

/** Creates a loop detector following at most `max` calls. */
export function createLoopDetector(max = MAX_TRACKED_CALLS): LoopDetector {
  return new Loops(max);
}

/** The calls of one server's tool; dropped when it has none left (many tools stay bounded). */
interface Group {
  readonly server: string;
  readonly tool: string;
  /** Mixed into its calls' hashes: the same key under two tools is two calls. */
  readonly id: number;
  /** Its calls followed now. */
  size: number;
}

/**
 * A success's 53-bit hash on its way to a slot: through a Float64Array, not a parameter, so no
 * heap number is made for it per call.
 */
const SIG = new Float64Array(1);

/** Slots made when a table is made, before it grows (doubling) to its detector's `max`. */
const FIRST_SLOTS = 16;

/**
 * What a detector holds once a call was noted: the calls followed, in slots numbered in the order
 * they were first seen (the ring: once all `max` are taken, `next` is the oldest), found through
 * an open-addressing index of their hashes. Parallel arrays, not an object and a Map entry per
 * call: a call noted takes a slot and an index cell, and allocates nothing once the table has
 * grown; a run's table is kept for the next run's detector when it ends (`clear`).
 */
class Table {
  /** server → tool → group, and the group last looked up (never one that was dropped). */
  readonly servers = new Map<string, Map<string, Group>>();
  last: Group | undefined = undefined;
  groupIds = 0;
  /** Slots in use; once it reaches `max`, `next` is the slot of the call first seen longest ago. */
  used = 0;
  next = 0;
  keys: (string | undefined)[] = [];
  groups: (Group | undefined)[] = [];
  /** A failure's fingerprint or a success's JSON text; undefined for a success's 53-bit hash. */
  texts: (string | undefined)[] = [];
  sigs: Float64Array;
  hashes: Int32Array;
  counts: Int32Array;
  oks: Uint8Array;
  /** Slot + 1 per cell, 0 for an empty cell; at most half full. */
  index: Int32Array;

  constructor(readonly max: number) {
    const slots = Math.min(FIRST_SLOTS, max);
    this.sigs = new Float64Array(slots);
    this.hashes = new Int32Array(slots);
    this.counts = new Int32Array(slots);
    this.oks = new Uint8Array(slots);
    this.index = new Int32Array(indexSize(slots));
  }
}

/** The index's size for `slots` slots: a power of two, at least twice as many cells. */
function indexSize(slots: number): number {
  let size = 4;
  while (size < slots * 2) size *= 2;
  return size;
}

/** Tables of ended runs, for the next runs' detectors (bounded: each holds up to `max` slots). */
const spare: Table[] = [];
const MAX_SPARE = 4;

function takeTable(max: number): Table {
  for (let i = spare.length - 1; i >= 0; i--) {
    const t = spare[i] as Table;
    if (t.max !== max) continue;
    spare.splice(i, 1);
    return t;
  }
  return new Table(max);
}

/** A table emptied (it keeps no key, group or text of its run) and kept for another run. */
function giveBack(t: Table): void {
  if (spare.length >= MAX_SPARE) return;
  t.keys.fill(undefined, 0, t.used);
  t.groups.fill(undefined, 0, t.used);
  t.texts.fill(undefined, 0, t.used);
  t.index.fill(0);
  t.used = 0;
  t.next = 0;
  t.servers.clear();
  t.last = undefined;
  spare.push(t);
}

/**
 * A class, not closures: every run makes one. Most runs note one call (or none): that call is
 * held in fields of its own, and a table is taken when a second call is noted.
 */
class Loops implements LoopDetector {
  readonly #max: number;
  #table: Table | undefined = undefined;
  /** The one call noted while there is no table (`#oneKey` undefined: none). */
  #oneKey: string | undefined = undefined;
  #oneTool = "";
  #oneServer = "";
  #oneOk = false;
  /** Its result's text, or (undefined) its 53-bit hash in `#oneSig`. */
  #oneText: string | undefined = undefined;
  #oneSig = 0;
  #oneCount = 0;
  /**
   * The key hashed last, its group's id and its hash: a call's key is hashed by preflight's count,
   * then again to note its result (looked up, then added): hashed once for all three.
   */
  #hashedKey: string | undefined = undefined;
  #hashedGroup = 0;
  #hashed = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Whether the one call held in fields is this call. */
  #isOne(key: string, tool: string, server: string): boolean {
    return this.#oneKey === key && this.#oneTool === tool && this.#oneServer === server;
  }

  /** The slot of a call in the table, or -1. */
  #slotOf(key: string, tool: string, server: string): number {
    const t = this.#table;
    if (t === undefined) return -1;
    const group = findGroup(t, server, tool);
    return group === undefined ? -1 : find(t, key, group, this.#hashOf(key, group.id));
  }

  /** {@link hashOf}, answered from the last key hashed when it is the same key in the same group. */
  #hashOf(key: string, groupId: number): number {
    if (this.#hashedKey === key && this.#hashedGroup === groupId) return this.#hashed;
    const h = hashOf(key, groupId);
    this.#hashedKey = key;
    this.#hashedGroup = groupId;
    this.#hashed = h;
    return h;
  }

  get(key: string, tool = "", server = ""): Seen | undefined {
    if (this.#table === undefined) {
      if (!this.#isOne(key, tool, server)) return undefined;
      const sig = this.#oneText ?? this.#oneSig;
      return { sig: this.#oneOk ? `ok:${sig}` : `f:${sig}`, count: this.#oneCount };
    }
    const s = this.#slotOf(key, tool, server);
    if (s === -1) return undefined;
    const t = this.#table as Table;
    const sig = t.texts[s] ?? t.sigs[s];
    return { sig: t.oks[s] === 1 ? `ok:${sig}` : `f:${sig}`, count: t.counts[s] as number };
  }

  count(key: string, tool = "", server = ""): number {
    if (this.#table === undefined) return this.#isOne(key, tool, server) ? this.#oneCount : 0;
    const s = this.#slotOf(key, tool, server);
    return s === -1 ? 0 : ((this.#table as Table).counts[s] as number);
  }

  noteSuccess(key: string, value: unknown, tool = "", server = ""): void {
    signResultInto(value, SIG);
    this.#record(key, true, undefined, tool, server);
  }

  noteFailure(key: string, fingerprint: string, tool = "", server = ""): void {
    this.#record(key, false, fingerprint, tool, server);
  }

  note(
    key: string,
    result: { failure: string } | { value: unknown },
    tool = "",
    server = "",
  ): void {
    if ("failure" in result) this.#record(key, false, result.failure, tool, server);
    else this.#record(key, true, resultHash(result.value), tool, server);
  }

  clear(): void {
    const t = this.#table;
    this.#table = undefined;
    if (t !== undefined) giveBack(t);
    this.#forgetOne();
    this.#hashedKey = undefined;
  }

  #forgetOne(): void {
    this.#oneKey = undefined;
    this.#oneTool = "";
    this.#oneServer = "";
    this.#oneText = undefined;
  }

  /**
   * A call's result (`text`, or `SIG[0]` when text is undefined): the same again counts one more
   * in a row.
   */
  #record(key: string, ok: boolean, text: string | undefined, tool: string, server: string): void {
    const sig = text === undefined ? (SIG[0] as number) : 0;
    if (this.#table === undefined) {
      if (this.#oneKey === undefined || this.#isOne(key, tool, server)) {
        const again =
          this.#oneKey !== undefined &&
          this.#oneOk === ok &&
          this.#oneText === text &&
          (text !== undefined || this.#oneSig === sig);
        this.#oneCount = again ? this.#oneCount + 1 : 1;
        this.#oneKey = key;
        this.#oneTool = tool;
        this.#oneServer = server;
        this.#oneOk = ok;
        this.#oneText = text;
        this.#oneSig = sig;
        return;
      }
      // A second call: a table, with the first call in its first slot.
      const first = takeTable(this.#max);
      this.#table = first;
      SIG[0] = this.#oneSig;
      this.#add(first, this.#oneKey, this.#oneOk, this.#oneText, this.#oneTool, this.#oneServer);
      SIG[0] = sig;
      first.counts[0] = this.#oneCount;
      this.#forgetOne();
    }
    const t = this.#table;
    const seenGroup = findGroup(t, server, tool);
    const seen =
      seenGroup === undefined ? -1 : find(t, key, seenGroup, this.#hashOf(key, seenGroup.id));
    const okBit = ok ? 1 : 0;
    if (seen !== -1) {
      const same =
        t.oks[seen] === okBit &&
        t.texts[seen] === text &&
        (text !== undefined || t.sigs[seen] === sig);
      t.counts[seen] = same ? (t.counts[seen] as number) + 1 : 1;
      t.oks[seen] = okBit;
      t.texts[seen] = text;
      t.sigs[seen] = sig;
      return;
    }
    this.#add(t, key, ok, text, tool, server);
  }

  /** A call not followed yet, counted once (its result's hash, when it has no text, in `SIG[0]`). */
  #add(
    t: Table,
    key: string,
    ok: boolean,
    text: string | undefined,
    tool: string,
    server: string,
  ): void {
    let s: number;
    if (t.used < this.#max) {
      s = t.used;
      t.used += 1;
      if (s === t.hashes.length) grow(t);
    } else {
      // Full: the slot of the call first seen longest ago is taken over (forgotten first, so a
      // group it leaves empty is gone before this call's group is looked up).
      s = t.next;
      t.next = (t.next + 1) % this.#max;
      forget(t, s);
    }
    const group = groupOf(t, server, tool);
    group.size += 1;
    const h = this.#hashOf(key, group.id);
    t.keys[s] = key;
    t.groups[s] = group;
    t.texts[s] = text;
    t.sigs[s] = text === undefined ? (SIG[0] as number) : 0;
    t.hashes[s] = h;
    t.counts[s] = 1;
    t.oks[s] = ok ? 1 : 0;
    place(t, s, h);
  }
}

/**
 * A key's hash within its group (FNV-1a over its UTF-16 units, then the group's id): equal keys
 * of one group hash alike; a lookup still compares the key itself.
 */
function hashOf(key: string, groupId: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return Math.imul(h ^ groupId, 0x5bd1e995) ^ (h >>> 15);
}

/** The slot of `key` in `group`, or -1. */
function find(t: Table, key: string, group: Group, h: number): number {
  const { index } = t;
  const mask = index.length - 1;
  for (let i = h & mask; ; i = (i + 1) & mask) {
    const cell = index[i] as number;
    if (cell === 0) return -1;
    const s = cell - 1;
    if (t.hashes[s] === h && t.groups[s] === group && t.keys[s] === key) return s;
  }
}

/** Indexes slot `s` (not indexed yet) under hash `h`. */
function place(t: Table, s: number, h: number): void {
  const { index } = t;
  const mask = index.length - 1;
  let i = h & mask;
  while (index[i] !== 0) i = (i + 1) & mask;
  index[i] = s + 1;
}

/** A copy of a typed array with room for `length` elements. */
function widened<A extends Float64Array | Int32Array | Uint8Array>(array: A, length: number): A {
  const wider = new (array.constructor as new (length: number) => A)(length);
  wider.set(array);
  return wider;
}

/** More slots (doubling, up to `max`), and an index to match. */
function grow(t: Table): void {
  const slots = Math.min(t.hashes.length * 2, t.max);
  t.sigs = widened(t.sigs, slots);
  t.hashes = widened(t.hashes, slots);
  t.counts = widened(t.counts, slots);
  t.oks = widened(t.oks, slots);
  t.index = new Int32Array(indexSize(slots));
  for (let s = 0; s < t.used - 1; s++) place(t, s, t.hashes[s] as number);
}

/**
 * Slot `s`'s call goes: out of the index (the cells after it in its run moved back, so every
 * lookup still finds its call with no tombstone), and its group with it when left empty.
 */
function forget(t: Table, s: number): void {
  const { index } = t;
  const mask = index.length - 1;
  let i = (t.hashes[s] as number) & mask;
  while (index[i] !== s + 1) i = (i + 1) & mask;
  // Backward shift: a later cell of the run moves into the hole unless its home lies after the
  // hole (cyclically, in (hole, cell]).
  for (let j = (i + 1) & mask; index[j] !== 0; j = (j + 1) & mask) {
    const home = (t.hashes[(index[j] as number) - 1] as number) & mask;
    const stays = i <= j ? i < home && home <= j : i < home || home <= j;
    if (stays) continue;
    index[i] = index[j] as number;
    i = j;
  }
  index[i] = 0;
  const group = t.groups[s] as Group;
  t.keys[s] = undefined;
  t.groups[s] = undefined;
  t.texts[s] = undefined;
  group.size -= 1;
  if (group.size > 0) return;
  if (t.last === group) t.last = undefined;
  const byTool = t.servers.get(group.server);
  if (byTool?.get(group.tool) !== group) return;
  byTool.delete(group.tool);
  if (byTool.size === 0) t.servers.delete(group.server);
}

/** The group of a server's tool, if it has a call followed. */
function findGroup(t: Table, server: string, tool: string): Group | undefined {
  // An agent loop mostly calls the tool it called last: its group is found without a lookup.
  const last = t.last;
  if (last !== undefined && last.tool === tool && last.server === server) return last;
  const group = t.servers.get(server)?.get(tool);
  if (group !== undefined) t.last = group;
  return group;
}

/** The group of a server's tool, made when its first call is noted. */
function groupOf(t: Table, server: string, tool: string): Group {
  const found = findGroup(t, server, tool);
  if (found !== undefined) return found;
  let byTool = t.servers.get(server);
  if (byTool === undefined) {
    byTool = new Map();
    t.servers.set(server, byTool);
  }
  t.groupIds += 1;
  const group: Group = { server, tool, id: t.groupIds, size: 0 };
  byTool.set(tool, group);
  t.last = group;
  return group;
}

/** A success's signature: its JSON (a hash when long), or a fixed word when it has none. */
export function resultHash(value: unknown): string {
  try {
    const json = JSON.stringify(value ?? null) ?? "null";
    return json.length <= 64 ? json : hashCanonical(json);
  } catch {
    return "unhashable";
  }
}
