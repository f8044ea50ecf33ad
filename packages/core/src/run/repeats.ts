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
  return new Loops(max);
}

/** A class, not closures: every run makes one. Its map is made at the first call noted. */
class Loops implements LoopDetector {
  readonly #max: number;
  #seen: Map<string, Seen> | undefined;
  // Keys in the order they were first seen; `next` is the oldest once the ring is full.
  #ring: string[] = [];
  #next = 0;

  constructor(max: number) {
    this.#max = max;
  }

  get(callKey: string): Seen | undefined {
    return this.#seen?.get(callKey);
  }

  note(callKey: string, result: { failure: string } | { value: unknown }): void {
    const sig = "failure" in result ? `f:${result.failure}` : `ok:${resultHash(result.value)}`;
    this.#seen ??= new Map();
    const seen = this.#seen;
    const prev = seen.get(callKey);
    if (prev === undefined) {
      const ring = this.#ring;
      if (ring.length < this.#max) {
        ring.push(callKey);
      } else {
        seen.delete(ring[this.#next] as string);
        ring[this.#next] = callKey;
        this.#next = (this.#next + 1) % this.#max;
      }
    }
    seen.set(callKey, { sig, count: prev?.sig === sig ? prev.count + 1 : 1 });
  }

  clear(): void {
    this.#seen?.clear();
    this.#ring = [];
    this.#next = 0;
  }
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
