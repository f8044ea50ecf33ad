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
  /** Forgets everything (the run ended). */
  clear(): void;
}

/** Creates a loop detector following at most `max` calls. */
export function createLoopDetector(max = MAX_TRACKED_CALLS): LoopDetector {
  return new Loops(max);
}

/**
 * What the detector holds once a call was noted. Per slot, in the order calls were first seen
 * (`next` is the oldest once full): the call's server, tool and key, its last result's signature
 * (and whether a success), how often in a row.
 */
interface Table {
  /** server → tool → key → slot: a call is found without a string made of its parts. */
  readonly servers: Map<string, Map<string, Map<string, number>>>;
  readonly serverOf: string[];
  readonly toolOf: string[];
  readonly keys: string[];
  readonly sigs: (string | number)[];
  readonly oks: boolean[];
  readonly counts: number[];
  next: number;
}

/** A class, not closures: every run makes one. Its table is made at the first call noted. */
class Loops implements LoopDetector {
  readonly #max: number;
  #table: Table | undefined = undefined;

  constructor(max: number) {
    this.#max = max;
  }

  #slotOf(key: string, tool: string, server: string): number | undefined {
    return this.#table?.servers.get(server)?.get(tool)?.get(key);
  }

  get(key: string, tool = "", server = ""): Seen | undefined {
    const slot = this.#slotOf(key, tool, server);
    const t = this.#table;
    if (slot === undefined || t === undefined) return undefined;
    const sig = t.sigs[slot];
    return { sig: t.oks[slot] ? `ok:${sig}` : `f:${sig}`, count: t.counts[slot] as number };
  }

  count(key: string, tool = "", server = ""): number {
    const slot = this.#slotOf(key, tool, server);
    return slot === undefined ? 0 : ((this.#table as Table).counts[slot] as number);
  }

  noteSuccess(key: string, value: unknown, tool = "", server = ""): void {
    this.#record(key, true, resultSignature(value), tool, server);
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
  }

  /** A call's result: the same signature again counts one more in a row. */
  #record(key: string, ok: boolean, sig: string | number, tool: string, server: string): void {
    this.#table ??= {
      servers: new Map(),
      serverOf: [],
      toolOf: [],
      keys: [],
      sigs: [],
      oks: [],
      counts: [],
      next: 0,
    };
    const t = this.#table;
    let slot = this.#slotOf(key, tool, server);
    if (slot !== undefined) {
      t.counts[slot] =
        t.oks[slot] === ok && t.sigs[slot] === sig ? (t.counts[slot] as number) + 1 : 1;
      t.sigs[slot] = sig;
      t.oks[slot] = ok;
      return;
    }
    if (t.keys.length < this.#max) {
      slot = t.keys.length;
    } else {
      slot = t.next;
      evict(t, slot);
      t.next = (t.next + 1) % this.#max;
    }
    let byTool = t.servers.get(server);
    if (byTool === undefined) {
      byTool = new Map();
      t.servers.set(server, byTool);
    }
    let calls = byTool.get(tool);
    if (calls === undefined) {
      calls = new Map();
      byTool.set(tool, calls);
    }
    calls.set(key, slot);
    t.serverOf[slot] = server;
    t.toolOf[slot] = tool;
    t.keys[slot] = key;
    t.sigs[slot] = sig;
    t.oks[slot] = ok;
    t.counts[slot] = 1;
  }
}

/** Frees a slot for a new call: its call goes, and maps left empty go with it. */
function evict(t: Table, slot: number): void {
  const server = t.serverOf[slot] as string;
  const tool = t.toolOf[slot] as string;
  const byTool = t.servers.get(server);
  const calls = byTool?.get(tool);
  if (byTool === undefined || calls === undefined) return;
  calls.delete(t.keys[slot] as string);
  if (calls.size > 0) return;
  byTool.delete(tool);
  if (byTool.size === 0) t.servers.delete(server);
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
