/**
 * A bounded memo of what a pure function made of a text: judging a failure reads the same texts
 * again and again (a retried call, a loop, a tool failing the same way in every run), and the
 * rules, the normalizer and the redactor cost far more than a lookup. Bounded twice: by entries
 * and by the characters of the texts and values it holds (a value's size is what `size` says),
 * so a stream of distinct, long texts cannot grow it; the oldest entries go first. A text longer
 * than `maxTextLength` is not kept at all.
 *
 * A text is kept as a copy of its own: a slice of a larger string (a line cut from a tool's long
 * answer) would keep the whole of that string alive.
 *
 * Only for pure functions: the memo never changes a result, it only skips recomputing one.
 * @internal Not part of the public API.
 */
export class TextMemo<V> {
  private readonly map = new Map<string, V>();
  /**
   * The texts held, oldest first from `oldest`, in a ring: evicting reads one slot (a Map's own
   * order would make every eviction skip the holes earlier deletions left at its front).
   */
  private readonly ring: (string | undefined)[];
  private oldest = 0;
  private chars = 0;

  constructor(
    /** Most entries held. */
    readonly maxEntries: number,
    /** Most characters held, texts and values together. */
    readonly maxChars: number,
    /** Longer texts are not kept. */
    readonly maxTextLength: number,
    /** The characters a value holds (0 for a value that holds none of its own). */
    private readonly size: (value: V) => number = () => 0,
  ) {
    if (
      !(Number.isInteger(maxEntries) && maxEntries >= 1 && maxChars >= maxTextLength) ||
      !(maxTextLength >= 0)
    ) {
      throw new RangeError(
        `TextMemo: maxEntries must be an integer of at least 1 and maxChars at least maxTextLength (got ${maxEntries}, ${maxChars}, ${maxTextLength})`,
      );
    }
    this.ring = new Array<string | undefined>(maxEntries).fill(undefined);
  }

  /** How many entries are held. */
  get entries(): number {
    return this.map.size;
  }

  /** How many characters are held, texts and values together. */
  get heldChars(): number {
    return this.chars;
  }

  get(text: string): V | undefined {
    return this.map.get(text);
  }

  /** Keeps `value` for `text` unless the text is too long; evicts the oldest entries to fit. */
  set(text: string, value: V): void {
    if (text.length > this.maxTextLength || this.map.has(text)) return;
    const cost = text.length + this.size(value);
    if (cost > this.maxChars) return;
    const { ring, map } = this;
    const n = ring.length;
    // Full: the oldest goes, then older ones while the characters do not fit.
    if (map.size === n) this.evictOldest();
    while (this.chars + cost > this.maxChars && map.size > 0) this.evictOldest();
    const own = ownCopy(text);
    // The entries fill the ring from the oldest on: the next slot after the newest.
    ring[(this.oldest + map.size) % n] = own;
    map.set(own, value);
    this.chars += cost;
  }

  private evictOldest(): void {
    const text = this.ring[this.oldest] as string;
    this.ring[this.oldest] = undefined;
    this.oldest = (this.oldest + 1) % this.ring.length;
    const value = this.map.get(text) as V;
    this.map.delete(text);
    this.chars -= text.length + this.size(value);
  }

  clear(): void {
    this.map.clear();
    this.ring.fill(undefined);
    this.oldest = 0;
    this.chars = 0;
  }
}

/**
 * A copy of a text that holds no reference to another string: the concatenation is flattened into
 * a new string of the text's own length before the slice is taken.
 */
function ownCopy(text: string): string {
  return ` ${text}`.slice(1);
}
