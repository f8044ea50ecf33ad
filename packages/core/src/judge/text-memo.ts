/**
 * A bounded memo of what a pure function made of a text: judging a failure reads the same texts
 * again and again (a retried call, a loop, a tool failing the same way in every run), and the
 * rules, the normalizer and the redactor cost far more than a lookup.
 *
 * - Bounded twice: by entries and by the characters of the texts and values it holds (a value's
 *   size is what `size` says), so a stream of distinct, long texts cannot grow it; the oldest
 *   entries go first. A text longer than `maxTextLength` is not kept at all.
 * - A text is kept the second time it is offered, not the first: most texts that carry a request
 *   id or a timestamp are seen once, and keeping each of them would only make the garbage
 *   collector copy what dies soon after. A table of 8192 hashes remembers what was offered once,
 *   each text in one of two slots; a collision only keeps a text sooner.
 * - A text is kept as a copy of its own: a slice of a larger string (a line cut from a tool's
 *   long answer) would keep the whole of that string alive.
 *
 * Only for pure functions: the memo never changes a result, it only skips recomputing one.
 * @internal Not part of the public API.
 */
export interface TextMemoOptions<V> {
  /** Most entries held. */
  readonly maxEntries: number;
  /** Most characters held, texts and values together. */
  readonly maxChars: number;
  /** Longer texts are not kept. */
  readonly maxTextLength: number;
  /**
   * The characters a value holds.
   * @default () => 0
   */
  readonly size?: (value: V) => number;
  /**
   * Keep a text the first time it is offered.
   * @default false (the second time)
   */
  readonly keepFirstSight?: boolean;
}

/** Slots of the first-sight table (a power of two). */
const SIGHTINGS = 8192;
/** Characters hashed at each end of a long text, and in its middle. */
const EDGE = 32;

export class TextMemo<V> {
  readonly maxEntries: number;
  readonly maxChars: number;
  readonly maxTextLength: number;
  private readonly size: (value: V) => number;
  private readonly map = new Map<string, V>();
  /**
   * The texts held, oldest first from `oldest`, in a ring: evicting reads one slot (a Map's own
   * order would make every eviction skip the holes earlier deletions left at its front).
   */
  private readonly ring: (string | undefined)[];
  private oldest = 0;
  private chars = 0;
  /** Hashes of texts offered once, by their low bits; `undefined` when every text is kept. */
  private readonly sighted: Int32Array | undefined;

  constructor(options: TextMemoOptions<V>) {
    const { maxEntries, maxChars, maxTextLength } = options;
    if (
      !(Number.isInteger(maxEntries) && maxEntries >= 1) ||
      !(maxTextLength >= 0) ||
      !(maxChars >= maxTextLength)
    ) {
      throw new RangeError(
        `TextMemo: maxEntries must be an integer of at least 1, maxTextLength at least 0 and maxChars at least maxTextLength (got ${maxEntries}, ${maxTextLength}, ${maxChars})`,
      );
    }
    this.maxEntries = maxEntries;
    this.maxChars = maxChars;
    this.maxTextLength = maxTextLength;
    this.size = options.size ?? (() => 0);
    this.ring = new Array<string | undefined>(maxEntries).fill(undefined);
    this.sighted = options.keepFirstSight === true ? undefined : new Int32Array(SIGHTINGS);
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

  /**
   * Offers `value` for `text`: kept unless the text is too long or seen for the first time; the
   * oldest entries are evicted to fit.
   */
  set(text: string, value: V): void {
    if (text.length > this.maxTextLength || this.map.has(text)) return;
    const cost = text.length + this.size(value);
    if (cost > this.maxChars || !this.secondSight(text)) return;
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

  /** Whether the text was offered before (or every text is kept); remembers it if not. */
  private secondSight(text: string): boolean {
    const sighted = this.sighted;
    if (sighted === undefined) return true;
    // 0 marks an empty slot: a hash of 0 reads as 1. Two slots a text may take, from bits of the
    // hash apart from each other and from the low one: a text whose slot another text keeps
    // taking (two texts of a cycle, in turn) would else never be seen twice.
    const hash = hashText(text) | 1;
    const first = (hash >>> 1) & (SIGHTINGS - 1);
    const second = (hash >>> 17) & (SIGHTINGS - 1);
    if (sighted[first] === hash || sighted[second] === hash) return true;
    // The first slot is kept by the text that took it; the second is the one that turns over.
    if (sighted[first] === 0) sighted[first] = hash;
    else sighted[second] = hash;
    return false;
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
    this.sighted?.fill(0);
    this.oldest = 0;
    this.chars = 0;
  }
}

/**
 * FNV-1a over the text's length and characters; of a text longer than 96 characters, its first
 * and last 32 and 32 spread over the middle (texts that differ elsewhere hash the same: such a
 * text is kept sooner, no more).
 */
function hashText(text: string): number {
  // The memos of one judgement are offered the same text one after another: hash it once. (The
  // last text is held until the next: one string, of at most a memo's maxTextLength.)
  if (text === lastText) return lastHash;
  lastHash = fnv(text);
  lastText = text;
  return lastHash;
}

let lastText: string | undefined;
let lastHash = 0;

function fnv(text: string): number {
  let h = (0x811c9dc5 ^ text.length) | 0;
  const n = text.length;
  if (n <= 3 * EDGE) {
    for (let i = 0; i < n; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
    return h;
  }
  // The ends, where ids and times mostly are, and characters spread over the middle.
  for (let i = 0; i < EDGE; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  const step = (n - 2 * EDGE) / EDGE;
  for (let k = 0; k < EDGE; k++) {
    h = Math.imul(h ^ text.charCodeAt(EDGE + Math.floor(k * step)), 0x01000193);
  }
  for (let i = n - EDGE; i < n; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h;
}

/**
 * A copy of a text that holds no reference to another string: the concatenation is flattened into
 * a new string of the text's own length before the slice is taken.
 */
function ownCopy(text: string): string {
  return ` ${text}`.slice(1);
}
