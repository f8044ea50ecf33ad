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
/** A memo's bounds, checked the same way for {@link TextMemo} and {@link TextFacts}. */
function checkBounds<O extends { maxEntries: number; maxChars: number; maxTextLength: number }>(
  name: string,
  options: O,
): O {
  const { maxEntries, maxChars, maxTextLength } = options;
  if (
    !(Number.isInteger(maxEntries) && maxEntries >= 1) ||
    !(maxTextLength >= 0) ||
    !(maxChars >= maxTextLength)
  ) {
    throw new RangeError(
      `${name}: maxEntries must be an integer of at least 1, maxTextLength at least 0 and maxChars at least maxTextLength (got ${maxEntries}, ${maxTextLength}, ${maxChars})`,
    );
  }
  return options;
}

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
    const { maxEntries, maxChars, maxTextLength } = checkBounds("TextMemo", options);
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

/** Options of a {@link TextFacts}. */
export interface TextFactsOptions {
  /** Most texts held. */
  readonly maxEntries: number;
  /** Most characters held, texts and values together. */
  readonly maxChars: number;
  /** Longer texts are not kept. */
  readonly maxTextLength: number;
}

/** One text's facts: a value per slot (undefined: not known yet), and the characters they take. */
class Facts {
  chars: number;
  readonly values: unknown[] = [];
  constructor(chars: number) {
    this.chars = chars;
  }
}

/**
 * What several pure functions made of recent texts, in one entry per text: judging a failure asks
 * the rules, the normalizer, the redactor and the call evidence about the same text, and one
 * lookup (a pointer comparison when they ask in turn with the same string) serves them all.
 * Each function has its slot ({@link TextFacts.slot}); a slot's value is kept under the rules of a
 * {@link TextMemo}, one per slot: the second time that slot is offered the text (a text judged once
 * is not kept), bounded by entries and by the characters of texts and values (the oldest text goes
 * first, with all its values), never a text longer than `maxTextLength`, and as a copy of its own.
 * @internal Not part of the public API.
 */
export class TextFacts {
  readonly maxEntries: number;
  readonly maxChars: number;
  readonly maxTextLength: number;
  readonly #sizes: ((value: never) => number)[] = [];
  readonly #map = new Map<string, Facts>();
  /** The texts held, oldest first from `#oldest`, in a ring (as in TextMemo). */
  readonly #ring: (string | undefined)[];
  #oldest = 0;
  #chars = 0;
  /** Hashes of (slot, text) pairs offered once, by their low bits. */
  readonly #sighted = new Int32Array(SIGHTINGS * 2);
  /** The text last found or kept, as the caller passed it, and its facts. */
  #lastText: string | undefined;
  #last: Facts | undefined;

  constructor(options: TextFactsOptions) {
    const { maxEntries, maxChars, maxTextLength } = checkBounds("TextFacts", options);
    this.maxEntries = maxEntries;
    this.maxChars = maxChars;
    this.maxTextLength = maxTextLength;
    this.#ring = new Array<string | undefined>(maxEntries).fill(undefined);
  }

  /** A new slot: `size` says the characters a value holds (default 0). */
  slot<V>(size: (value: V) => number = () => 0): FactSlot<V> {
    this.#sizes.push(size as (value: never) => number);
    return new FactSlot<V>(this, this.#sizes.length - 1);
  }

  /** How many texts are held. */
  get entries(): number {
    return this.#map.size;
  }

  /** How many characters are held, texts and values together. */
  get heldChars(): number {
    return this.#chars;
  }

  #find(text: string): Facts | undefined {
    if (text === this.#lastText) return this.#last;
    const facts = this.#map.get(text);
    if (facts !== undefined) {
      this.#lastText = text;
      this.#last = facts;
    }
    return facts;
  }

  /** @internal What the slot holds for the text. */
  get(slot: number, text: string): unknown {
    return this.#find(text)?.values[slot];
  }

  /** @internal Offers a slot's value for the text (see the class). */
  set(slot: number, text: string, value: unknown): void {
    if (text.length > this.maxTextLength || value === undefined) return;
    const size = (this.#sizes[slot] as (value: unknown) => number)(value);
    let facts = this.#find(text);
    if (facts !== undefined) {
      if (facts.values[slot] !== undefined) return;
      if (facts.chars + size > this.maxChars) return;
      if (!this.#secondSight(slot, text)) return;
      facts.values[slot] = value;
      facts.chars += size;
      this.#chars += size;
      // The text itself may be the oldest: it goes too when nothing else is left to free.
      while (this.#chars > this.maxChars && this.#map.size > 0) this.#evictOldest();
      return;
    }
    const cost = text.length + size;
    if (cost > this.maxChars || !this.#secondSight(slot, text)) return;
    const ring = this.#ring;
    const map = this.#map;
    const n = ring.length;
    if (map.size === n) this.#evictOldest();
    while (this.#chars + cost > this.maxChars && map.size > 0) this.#evictOldest();
    const own = ownCopy(text);
    ring[(this.#oldest + map.size) % n] = own;
    facts = new Facts(cost);
    facts.values[slot] = value;
    map.set(own, facts);
    this.#chars += cost;
    this.#lastText = text;
    this.#last = facts;
  }

  /** Forgets every value of a slot (its function changed: a redactor with other options). */
  clearSlot(slot: number): void {
    const size = this.#sizes[slot] as (value: unknown) => number;
    for (const facts of this.#map.values()) {
      const value = facts.values[slot];
      if (value === undefined) continue;
      const n = size(value);
      facts.values[slot] = undefined;
      facts.chars -= n;
      this.#chars -= n;
    }
  }

  /** Whether the slot was offered the text before; remembers it if not (as TextMemo does). */
  #secondSight(slot: number, text: string): boolean {
    const sighted = this.#sighted;
    // Each slot is offered a text once per judgement: a pair of slot and text is what is counted.
    const hash = (hashText(text) ^ Math.imul(slot + 1, 0x9e3779b1)) | 1;
    const mask = sighted.length - 1;
    const first = (hash >>> 1) & mask;
    const second = (hash >>> 15) & mask;
    if (sighted[first] === hash || sighted[second] === hash) return true;
    if (sighted[first] === 0) sighted[first] = hash;
    else sighted[second] = hash;
    return false;
  }

  #evictOldest(): void {
    const ring = this.#ring;
    const text = ring[this.#oldest] as string;
    ring[this.#oldest] = undefined;
    this.#oldest = (this.#oldest + 1) % ring.length;
    const facts = this.#map.get(text) as Facts;
    this.#map.delete(text);
    this.#chars -= facts.chars;
    if (facts === this.#last) {
      this.#last = undefined;
      this.#lastText = undefined;
    }
  }

  clear(): void {
    this.#map.clear();
    this.#ring.fill(undefined);
    this.#sighted.fill(0);
    this.#oldest = 0;
    this.#chars = 0;
    this.#last = undefined;
    this.#lastText = undefined;
  }
}

/** One function's slot of a {@link TextFacts}. @internal */
export class FactSlot<V> {
  readonly #facts: TextFacts;
  readonly #slot: number;
  constructor(facts: TextFacts, slot: number) {
    this.#facts = facts;
    this.#slot = slot;
  }
  /** What the function made of the text, when it is held. */
  get(text: string): V | undefined {
    return this.#facts.get(this.#slot, text) as V | undefined;
  }
  /** Offers what the function made of the text. */
  set(text: string, value: V): void {
    this.#facts.set(this.#slot, text, value);
  }
  /** Forgets the slot's values. */
  clear(): void {
    this.#facts.clearSlot(this.#slot);
  }
}
