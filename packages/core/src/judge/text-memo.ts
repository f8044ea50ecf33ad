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
    if (!(maxEntries >= 1 && maxChars >= maxTextLength && maxTextLength >= 0)) {
      throw new RangeError(
        `TextMemo: maxEntries must be at least 1 and maxChars at least maxTextLength (got ${maxEntries}, ${maxChars}, ${maxTextLength})`,
      );
    }
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
    while (this.map.size >= this.maxEntries || this.chars + cost > this.maxChars) {
      const oldest = this.map.entries().next().value;
      if (oldest === undefined) break;
      this.map.delete(oldest[0]);
      this.chars -= oldest[0].length + this.size(oldest[1]);
    }
    this.map.set(ownCopy(text), value);
    this.chars += cost;
  }

  clear(): void {
    this.map.clear();
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
