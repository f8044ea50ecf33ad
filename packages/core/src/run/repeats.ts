import { hashCanonical } from "../judge/canonical.ts";
import { resultSignature } from "./result-signature.ts";

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

/** The calls of one server's tool: found by their key. */
interface Group {
  readonly server: string;
  readonly tool: string;
  readonly calls: Map<string, Slot>;
}

/** One call followed: its last result's signature (and whether a success), how often in a row. */
interface Slot {
  group: Group;
  key: string;
  ok: boolean;
  sig: string | number;
  count: number;
}

/** What the detector holds once a call was noted. */
interface Table {
  /** server → tool → the tool's calls: a call is found without a string made of its parts. */
  readonly servers: Map<string, Map<string, Group>>;
  /** Slots in the order their calls were first seen; `next` is the oldest once it is full. */
  readonly ring: Slot[];
  next: number;
  /** The group last looked up (never one that was dropped). */
  last: Group | undefined;
}

/**
 * A class, not closures: every run makes one. Most runs note one call (or none): that call is
 * held in fields of its own, and the table is made when a second call is noted.
 */
class Loops implements LoopDetector {
  readonly #max: number;
  #table: Table | undefined = undefined;
  /** The one call noted while there is no table (`#oneKey` undefined: none). */
  #oneKey: string | undefined = undefined;
  #oneTool = "";
  #oneServer = "";
  #oneOk = false;
  #oneSig: string | number = "";
  #oneCount = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Whether the one call held in fields is this call. */
  #isOne(key: string, tool: string, server: string): boolean {
    return this.#oneKey === key && this.#oneTool === tool && this.#oneServer === server;
  }

  #slotOf(key: string, tool: string, server: string): Slot | undefined {
    const t = this.#table;
    if (t === undefined) return undefined;
    // An agent loop mostly calls the tool it called last: its group is found without a lookup.
    const last = t.last;
    const group =
      last !== undefined && last.tool === tool && last.server === server
        ? last
        : t.servers.get(server)?.get(tool);
    if (group === undefined) return undefined;
    t.last = group;
    return group.calls.get(key);
  }

  get(key: string, tool = "", server = ""): Seen | undefined {
    if (this.#table === undefined) {
      if (!this.#isOne(key, tool, server)) return undefined;
      const sig = this.#oneSig;
      return { sig: this.#oneOk ? `ok:${sig}` : `f:${sig}`, count: this.#oneCount };
    }
    const slot = this.#slotOf(key, tool, server);
    if (slot === undefined) return undefined;
    return { sig: slot.ok ? `ok:${slot.sig}` : `f:${slot.sig}`, count: slot.count };
  }

  count(key: string, tool = "", server = ""): number {
    if (this.#table === undefined) return this.#isOne(key, tool, server) ? this.#oneCount : 0;
    return this.#slotOf(key, tool, server)?.count ?? 0;
  }

  noteSuccess(key: string, value: unknown, tool = "", server = ""): void {
    this.#record(key, true, resultSignature(value), tool, server);
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
    this.#table = undefined;
    this.#oneKey = undefined;
    this.#oneTool = "";
    this.#oneServer = "";
    this.#oneSig = "";
  }

  /** A call's result: the same signature again counts one more in a row. */
  #record(key: string, ok: boolean, sig: string | number, tool: string, server: string): void {
    if (this.#table === undefined) {
      if (this.#oneKey === undefined || this.#isOne(key, tool, server)) {
        const again = this.#oneKey !== undefined && this.#oneOk === ok && this.#oneSig === sig;
        this.#oneCount = again ? this.#oneCount + 1 : 1;
        this.#oneKey = key;
        this.#oneTool = tool;
        this.#oneServer = server;
        this.#oneOk = ok;
        this.#oneSig = sig;
        return;
      }
      // A second call: the table, with the first call in its first slot.
      const first = this.#oneKey;
      this.#table = { servers: new Map(), ring: [], next: 0, last: undefined };
      this.#add(this.#table, first, this.#oneOk, this.#oneSig, this.#oneTool, this.#oneServer);
      (this.#table.ring[0] as Slot).count = this.#oneCount;
      this.#oneKey = undefined;
      this.#oneTool = "";
      this.#oneServer = "";
      this.#oneSig = "";
    }
    const t = this.#table;
    const seen = this.#slotOf(key, tool, server);
    if (seen !== undefined) {
      seen.count = seen.ok === ok && seen.sig === sig ? seen.count + 1 : 1;
      seen.sig = sig;
      seen.ok = ok;
      return;
    }
    this.#add(t, key, ok, sig, tool, server);
  }

  /** A call not followed yet, counted once. */
  #add(t: Table, key: string, ok: boolean, sig: string | number, tool: string, server: string) {
    let slot: Slot;
    if (t.ring.length < this.#max) {
      slot = { group: groupOf(t, server, tool), key, ok, sig, count: 1 };
      t.ring.push(slot);
    } else {
      // Full: the slot of the call first seen longest ago is taken over (forgotten first, so a
      // group it leaves empty is gone before this call's group is looked up).
      slot = t.ring[t.next] as Slot;
      t.next = (t.next + 1) % this.#max;
      forget(t, slot);
      slot.group = groupOf(t, server, tool);
      slot.key = key;
      slot.ok = ok;
      slot.sig = sig;
      slot.count = 1;
    }
    const { group } = slot;
    group.calls.set(key, slot);
  }
}

/** The group of a server's tool, made when its first call is noted. */
function groupOf(t: Table, server: string, tool: string): Group {
  let byTool = t.servers.get(server);
  if (byTool === undefined) {
    byTool = new Map();
    t.servers.set(server, byTool);
  }
  let group = byTool.get(tool);
  if (group === undefined) {
    group = { server, tool, calls: new Map() };
    byTool.set(tool, group);
  }
  return group;
}

/** A slot's call goes, and maps left empty go with it. */
function forget(t: Table, slot: Slot): void {
  const { group } = slot;
  group.calls.delete(slot.key);
  if (group.calls.size > 0) return;
  if (t.last === group) t.last = undefined;
  const byTool = t.servers.get(group.server);
  if (byTool?.get(group.tool) !== group) return;
  byTool.delete(group.tool);
  if (byTool.size === 0) t.servers.delete(group.server);
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
