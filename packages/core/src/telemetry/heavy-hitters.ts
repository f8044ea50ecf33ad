// The most frequent keys of a stream in bounded memory: the Space-Saving algorithm (Metwally,
// Agrawal, El Abbadi, "Efficient Computation of Frequent and Top-k Elements in Data Streams",
// 2005). At most `capacity` keys are tracked; a new key past it takes the place of the least
// counted one and inherits its count as its error. Every key whose true count exceeds N/capacity
// (N: all counts added) is tracked, and a tracked key's count is over its true count by at most
// its `error` (itself at most N/capacity), never under.

/** One tracked key. */
export interface Hitter<V> {
  /** Read-only to callers: a replaced entry is reused for the key that takes its place. */
  key: string;
  /** At least the key's true count, at most `error` more. */
  count: number;
  /** How much of `count` may belong to keys this one replaced: 0 while none was. */
  error: number;
  /** What the caller keeps with the key (`reuse`d when the key takes another's place). */
  value: V;
}

interface Slot<V> {
  entry: Hitter<V>;
  /** `entry.count` when the slot was last placed in the heap (counts only grow). */
  placed: number;
}

/** Space-Saving over string keys, with a value of the caller's per tracked key. */
export class HeavyHitters<V> {
  readonly #entries = new Map<string, Hitter<V>>();
  /** A min-heap of the tracked keys by their count when placed (fixed lazily on eviction). */
  readonly #heap: Slot<V>[] = [];
  #total = 0;

  /**
   * @param make a new key's value
   * @param reuse the replaced key's value made fit for the new key (cleared in place: a long
   *   stream of new keys then allocates nothing per key)
   * @default reuse: a new value from `make`
   */
  constructor(
    readonly capacity: number,
    private readonly make: () => V,
    private readonly reuse: (old: V) => V = make,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`capacity must be a whole number >= 1, got ${String(capacity)}`);
    }
  }

  /** Counts `by` more of `key`; answers its entry and whether it was just (re)admitted. */
  add(key: string, by = 1): { entry: Hitter<V>; fresh: boolean } {
    this.#total += by;
    const known = this.#entries.get(key);
    if (known !== undefined) {
      known.count += by;
      return { entry: known, fresh: false };
    }
    if (this.#entries.size < this.capacity) {
      const entry: Hitter<V> = { key, count: by, error: 0, value: this.make() };
      this.#entries.set(key, entry);
      this.#push({ entry, placed: entry.count });
      return { entry, fresh: true };
    }
    // The least counted key gives its place, its entry and heap slot to the new one.
    const slot = this.#minSlot();
    const { entry } = slot;
    this.#entries.delete(entry.key);
    entry.key = key;
    entry.error = entry.count;
    entry.count += by;
    entry.value = this.reuse(entry.value);
    this.#entries.set(key, entry);
    slot.placed = entry.count;
    this.#siftDown(0);
    return { entry, fresh: true };
  }

  get(key: string): Hitter<V> | undefined {
    return this.#entries.get(key);
  }

  /** Keys tracked now. */
  get size(): number {
    return this.#entries.size;
  }

  /** All counts added (N). */
  get total(): number {
    return this.#total;
  }

  /** The largest error any tracked count may carry: 0 while every key was kept. */
  get maxError(): number {
    let max = 0;
    for (const e of this.#entries.values()) if (e.error > max) max = e.error;
    return max;
  }

  /** The tracked keys, the most counted first (ties by key). */
  top(n = this.capacity): Hitter<V>[] {
    return [...this.#entries.values()]
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1))
      .slice(0, Math.max(0, n));
  }

  /**
   * The heap's top once it is fresh: slots whose count grew since they were placed are placed
   * again at their count first. Left at the top: its caller places it again.
   */
  #minSlot(): Slot<V> {
    for (;;) {
      const slot = this.#heap[0] as Slot<V>;
      if (slot.placed === slot.entry.count) return slot;
      slot.placed = slot.entry.count;
      this.#siftDown(0);
    }
  }

  #push(slot: Slot<V>): void {
    const heap = this.#heap;
    heap.push(slot);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((heap[parent] as Slot<V>).placed <= slot.placed) break;
      heap[i] = heap[parent] as Slot<V>;
      i = parent;
    }
    heap[i] = slot;
  }

  #siftDown(start: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const slot = heap[start] as Slot<V>;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child =
        right < n && (heap[right] as Slot<V>).placed < (heap[left] as Slot<V>).placed
          ? right
          : left;
      if ((heap[child] as Slot<V>).placed >= slot.placed) break;
      heap[i] = heap[child] as Slot<V>;
      i = child;
    }
    heap[i] = slot;
  }
}
