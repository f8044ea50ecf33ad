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
  // server → tool → key → slot: a call is found without a string made of its parts.
  const servers = new Map<string, Map<string, Map<string, number>>>();
  // Per slot, in the order calls were first seen (`next` is the oldest once full): the call's
  // server, tool and key, its last result's signature (and whether a success), how often in a row.
  let serverOf: string[] = [];
  let toolOf: string[] = [];
  let keys: string[] = [];
  let sigs: (string | number)[] = [];
  let oks: boolean[] = [];
  let counts: number[] = [];
  let next = 0;
  const slotOf = (key: string, tool: string, server: string) =>
    servers.get(server)?.get(tool)?.get(key);
  /** Frees a slot for a new call: its call goes, and maps left empty go with it. */
  const evict = (slot: number) => {
    const server = serverOf[slot] as string;
    const tool = toolOf[slot] as string;
    const byTool = servers.get(server);
    const calls = byTool?.get(tool);
    if (byTool === undefined || calls === undefined) return;
    calls.delete(keys[slot] as string);
    if (calls.size > 0) return;
    byTool.delete(tool);
    if (byTool.size === 0) servers.delete(server);
  };
  /** A call's result: the same signature again counts one more in a row. */
  const record = (key: string, ok: boolean, sig: string | number, tool: string, server: string) => {
    let slot = slotOf(key, tool, server);
    if (slot !== undefined) {
      counts[slot] = oks[slot] === ok && sigs[slot] === sig ? (counts[slot] as number) + 1 : 1;
      sigs[slot] = sig;
      oks[slot] = ok;
      return;
    }
    if (keys.length < max) {
      slot = keys.length;
    } else {
      slot = next;
      evict(slot);
      next = (next + 1) % max;
    }
    let byTool = servers.get(server);
    if (byTool === undefined) {
      byTool = new Map();
      servers.set(server, byTool);
    }
    let calls = byTool.get(tool);
    if (calls === undefined) {
      calls = new Map();
      byTool.set(tool, calls);
    }
    calls.set(key, slot);
    serverOf[slot] = server;
    toolOf[slot] = tool;
    keys[slot] = key;
    sigs[slot] = sig;
    oks[slot] = ok;
    counts[slot] = 1;
  };
  return {
    get(key, tool = "", server = "") {
      const slot = slotOf(key, tool, server);
      if (slot === undefined) return undefined;
      const sig = sigs[slot];
      return { sig: oks[slot] ? `ok:${sig}` : `f:${sig}`, count: counts[slot] as number };
    },
    count(key, tool = "", server = "") {
      const slot = slotOf(key, tool, server);
      return slot === undefined ? 0 : (counts[slot] as number);
    },
    noteSuccess(key, value, tool = "", server = "") {
      record(key, true, resultSignature(value), tool, server);
    },
    note(key, result, tool = "", server = "") {
      if ("failure" in result) record(key, false, result.failure, tool, server);
      else record(key, true, resultHash(result.value), tool, server);
    },
    clear() {
      servers.clear();
      serverOf = [];
      toolOf = [];
      keys = [];
      sigs = [];
      oks = [];
      counts = [];
      next = 0;
    },
  };
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
