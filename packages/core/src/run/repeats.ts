import { hashCanonical } from "../judge/canonical.ts";

/** How many distinct calls a run's loop detector follows; the oldest are forgotten first. */
export const MAX_TRACKED_CALLS = 1_000;

/** What the loop detector knows of one call: its last result's signature, and how often in a row. */
export interface Seen {
  readonly sig: string;
  readonly count: number;
}

/**
 * A run's loop detector: per call key (tool, server and canonical arguments), the last result's
 * signature and how many times in a row it came back. It keeps signatures (a failure's
 * fingerprint, a success's JSON or its hash), never results, and at most `max` calls: when full,
 * the call first seen longest ago goes (a ring of keys, so no scan of the map).
 */
export interface LoopDetector {
  /** What is known of a call key. */
  get(callKey: string): Seen | undefined;
  /** Records a call's result: a failure by its fingerprint, a success by its value. */
  note(callKey: string, result: { failure: string } | { value: unknown }): void;
  /** Forgets everything (the run ended). */
  clear(): void;
}

/** Creates a loop detector following at most `max` calls. */
export function createLoopDetector(max = MAX_TRACKED_CALLS): LoopDetector {
  const seen = new Map<string, Seen>();
  // Keys in the order they were first seen; `next` is the oldest once the ring is full.
  let ring: string[] = [];
  let next = 0;
  return {
    get: (callKey) => seen.get(callKey),
    note(callKey, result) {
      const sig = "failure" in result ? `f:${result.failure}` : `ok:${resultHash(result.value)}`;
      const prev = seen.get(callKey);
      if (prev === undefined) {
        if (ring.length < max) {
          ring.push(callKey);
        } else {
          seen.delete(ring[next] as string);
          ring[next] = callKey;
          next = (next + 1) % max;
        }
      }
      seen.set(callKey, { sig, count: prev?.sig === sig ? prev.count + 1 : 1 });
    },
    clear() {
      seen.clear();
      ring = [];
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
