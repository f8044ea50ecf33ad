/** What the prefilter needs of a rule: its pattern. (The rule table itself is in rules.ts.) */
export interface PatternRule {
  readonly pattern: RegExp;
}

/**
 * The rule table's prefilter: most rules cannot match most texts, and proving it is cheaper than
 * running them. Used by `matchBuiltinRules`; its results equal running every pattern in order
 * (prefilter.test.ts checks that, and that every shortcut is needed).
 */

// Prefilter: most rules cannot match most texts, and proving it is cheaper than running them.
//
// Each alternative of a pattern is read for literal words its every match contains: a match of
// `\bno such tool\b` holds `such` and `tool`, one of `\b(?:quota|limit)\b…per (?:second|minute)`
// holds `quota` or `limit`, and `per`, and `second` or `minute`. One pass over the lowercased text
// finds which of these words it holds; only alternatives whose every condition holds are run,
// each compiled alone (a pattern matches where one of its alternatives does). The words hold no
// space and no `_`, so a word in the identifier-split copy is in the text as written too; they are
// ASCII, and a case-insensitive pattern without the `u` flag matches an ASCII letter only with its
// ASCII case variants, so the lowercased text holds every word a match holds. What this reading
// does not understand gets no conditions and always runs. The tables are made on the first match.

/** A literal character that may be part of a word: printable ASCII, no space, no `_`. */
function isWordChar(ch: string): boolean {
  const code = ch.charCodeAt(0);
  return code > 32 && code < 127 && ch !== "_";
}

/** Words one of which a match holds. Usable when every word has two characters or more. */
type AnyOf = readonly string[];

function usable(words: AnyOf): boolean {
  return words.length > 0 && words.every((w) => w.length >= 2);
}

/** Orders conditions likeliest to fail first: longest shortest word, then fewest words. */
function byStrength(a: AnyOf, b: AnyOf): number {
  const shortest = (words: AnyOf) => Math.min(...words.map((w) => w.length));
  return shortest(b) - shortest(a) || a.length - b.length;
}

/** Of several conditions, the one likeliest to fail. */
function strongest(conditions: readonly AnyOf[]): AnyOf | undefined {
  return [...conditions].sort(byStrength)[0];
}

class UnsupportedPattern extends Error {}

/**
 * Reads a regex source for the literal words its matches must hold. Conservative: a construct it
 * does not fully understand throws {@link UnsupportedPattern}.
 */
class LiteralReader {
  pos = 0;
  constructor(readonly src: string) {}

  /** The top-level alternatives: each one's source and the conditions all its matches meet. */
  alternatives(): { source: string; conditions: AnyOf[] }[] {
    const out: { source: string; conditions: AnyOf[] }[] = [];
    for (;;) {
      const start = this.pos;
      const conditions = this.sequence();
      out.push({ source: this.src.slice(start, this.pos), conditions });
      if (this.pos >= this.src.length) return out;
      if (this.src[this.pos] !== "|") throw new UnsupportedPattern(this.src);
      this.pos++;
    }
  }

  /** A group's alternatives, up to its `)`: all conditions of a single one, else one union. */
  private disjunction(): AnyOf[] {
    const branches: AnyOf[][] = [];
    for (;;) {
      branches.push(this.sequence());
      if (this.src[this.pos] !== "|") break;
      this.pos++;
    }
    if (branches.length === 1) return branches[0] as AnyOf[];
    const union: string[] = [];
    for (const conditions of branches) {
      const best = strongest(conditions);
      if (best === undefined) return [];
      union.push(...best);
    }
    return [[...new Set(union)]];
  }

  /** A sequence of terms up to `|`, `)` or the end: the conditions every match of it meets. */
  private sequence(): AnyOf[] {
    const conditions: AnyOf[] = [];
    let run = "";
    const flush = () => {
      if (run.length >= 2) conditions.push([run]);
      run = "";
    };
    const src = this.src;
    while (this.pos < src.length && src[this.pos] !== "|" && src[this.pos] !== ")") {
      const atom = this.atom();
      const min = this.quantifier();
      if (typeof atom === "string" && isWordChar(atom)) {
        if (min === 0) {
          flush();
          continue;
        }
        run += atom.toLowerCase();
        // Repeated: the characters after it may be more of it.
        if (min !== 1) flush();
        continue;
      }
      flush();
      if (typeof atom !== "string" && min > 0) conditions.push(...atom.filter(usable));
    }
    flush();
    return conditions;
  }

  /**
   * The minimum count of the quantifier after an atom: 1 when there is none (exactly once), 2
   * standing for "at least once, maybe more".
   */
  private quantifier(): number {
    const src = this.src;
    const ch = src[this.pos];
    let min: number;
    if (ch === "?" || ch === "*") {
      min = 0;
      this.pos++;
    } else if (ch === "+") {
      min = 2;
      this.pos++;
    } else if (ch === "{") {
      const m = /^\{(\d+)(?:(,)(\d*))?\}/.exec(src.slice(this.pos, this.pos + 24));
      if (m === null) throw new UnsupportedPattern(src);
      const low = Number(m[1]);
      const exactlyOnce = low === 1 && (m[2] === undefined || m[3] === "1");
      min = low === 0 ? 0 : exactlyOnce ? 1 : 2;
      this.pos += m[0].length;
    } else {
      return 1;
    }
    if (src[this.pos] === "?") this.pos++;
    return min;
  }

  /** A literal character, or the conditions of a group (none for anything else). */
  private atom(): string | AnyOf[] {
    const src = this.src;
    const ch = src[this.pos] as string;
    this.pos++;
    if (ch === "\\") {
      const e = src[this.pos];
      this.pos++;
      if (e === undefined) throw new UnsupportedPattern(src);
      if ("bBsSwWdDntrfv".includes(e)) return [];
      if ("\\^$.*+?()[]{}|/-'\"`:=#&!,<>@%~;".includes(e)) return e;
      throw new UnsupportedPattern(src);
    }
    if (ch === "[") {
      while (this.pos < src.length && src[this.pos] !== "]") {
        if (src[this.pos] === "\\") this.pos++;
        this.pos++;
      }
      if (src[this.pos] !== "]") throw new UnsupportedPattern(src);
      this.pos++;
      return [];
    }
    if (ch === "(") {
      let lookaround = false;
      if (src.startsWith("?:", this.pos)) this.pos += 2;
      else if (src.startsWith("?=", this.pos) || src.startsWith("?!", this.pos)) {
        lookaround = true;
        this.pos += 2;
      } else if (src.startsWith("?<=", this.pos) || src.startsWith("?<!", this.pos)) {
        lookaround = true;
        this.pos += 3;
      } else if (src[this.pos] === "?") throw new UnsupportedPattern(src);
      const conditions = this.disjunction();
      if (src[this.pos] !== ")") throw new UnsupportedPattern(src);
      this.pos++;
      return lookaround ? [] : conditions;
    }
    if (ch === "." || ch === "^" || ch === "$") return [];
    if ("*+?{}])|".includes(ch)) throw new UnsupportedPattern(src);
    return ch;
  }
}

/**
 * A pattern's top-level alternatives, each with the words its matches must hold (one of each
 * list), or `undefined` when the pattern cannot be read that way (then it runs whole, always).
 * @internal Exported for tests; not part of the public API.
 */
export function patternAlternatives(
  pattern: RegExp,
): { pattern: RegExp; conditions: readonly (readonly string[])[] }[] | undefined {
  const flags = pattern.flags;
  if (/[guvy]/.test(flags)) return undefined;
  try {
    return new LiteralReader(pattern.source)
      .alternatives()
      .map(({ source, conditions }) => ({ pattern: new RegExp(source, flags), conditions }));
  } catch (error) {
    if (error instanceof UnsupportedPattern) return undefined;
    throw error;
  }
}

/** One alternative of a rule's pattern, ready to run. */
export interface Alternative<R extends PatternRule = PatternRule> {
  readonly rule: R;
  readonly pattern: RegExp;
  /** Runs only on a text with a number that may be an HTTP error status. */
  readonly status: boolean;
  /**
   * Each entry: ids of words, one of which the text must hold. The first is the likeliest to fail:
   * it indexes the alternative.
   */
  readonly conditions: readonly (readonly number[])[];
}

/**
 * The prefilter of the rule table. Words are read in the lowercased text by an Aho-Corasick
 * automaton: one table lookup per character finds every word it holds, overlapping ones too.
 */
export interface Prefilter<R extends PatternRule = PatternRule> {
  /** Every alternative of every rule, in the order of the rules. */
  readonly alternatives: readonly Alternative<R>[];
  /** Character classes of the automaton, by ASCII code; 0 for a character no word holds. */
  readonly charClass: Uint8Array;
  readonly classes: number;
  /** `next[state * classes + class]`: the state after a character; state 0 is the start. */
  readonly next: Uint16Array;
  /** States from this one on are those where a word ends; the start (0) is not one. */
  readonly firstEnding: number;
  /**
   * The words that end at each state (its own, and those of its suffixes):
   * `endIds[endStart[state] .. endStart[state + 1]]`. Flat typed arrays: the scan reads them at
   * every character, and a list per state cost it a third more.
   */
  readonly endStart: Int32Array;
  readonly endIds: Int32Array;
  /**
   * By word id, the alternatives whose first condition names the word:
   * `indexIds[indexStart[id] .. indexStart[id + 1]]`.
   */
  readonly indexStart: Int32Array;
  readonly indexIds: Int32Array;
  /** One bit per alternative: those without conditions. */
  readonly unconditional: Int32Array;
  /** One bit per alternative: the candidates of the text being matched. */
  readonly candidates: Int32Array;
  /** `seen[id] === generation`: the text being matched holds word `id`. */
  readonly seen: Int32Array;
}

let generation = 0;

export function buildPrefilter<R extends PatternRule>(
  rules: readonly R[],
  isStatus: (pattern: RegExp) => boolean,
): Prefilter<R> {
  const words: string[] = [];
  const ids = new Map<string, number>();
  const wordId = (word: string): number => {
    let id = ids.get(word);
    if (id === undefined) {
      id = words.push(word) - 1;
      ids.set(word, id);
    }
    return id;
  };
  const alternatives: Alternative<R>[] = [];
  for (const rule of rules) {
    const status = isStatus(rule.pattern);
    const read = patternAlternatives(rule.pattern) ?? [{ pattern: rule.pattern, conditions: [] }];
    for (const { pattern, conditions } of read) {
      alternatives.push({
        rule,
        pattern,
        status,
        conditions: [...conditions].sort(byStrength).map((anyOf) => anyOf.map(wordId)),
      });
    }
  }

  const unconditional = new Int32Array(Math.ceil(alternatives.length / 32));
  const indexedBy: number[][] = words.map(() => []);
  for (const [i, alternative] of alternatives.entries()) {
    const first = alternative.conditions[0];
    if (first === undefined) {
      unconditional[i >> 5] = (unconditional[i >> 5] as number) | (1 << (i & 31));
    } else {
      for (const id of first) (indexedBy[id] as number[]).push(i);
    }
  }

  const charClass = new Uint8Array(128);
  let classes = 1;
  for (const word of words) {
    for (let i = 0; i < word.length; i++) {
      const code = word.charCodeAt(i);
      if (charClass[code] === 0) charClass[code] = classes++;
    }
  }
  // The trie of the words, written in the table (0: no edge; no edge leads to the start), then
  // the fallbacks, breadth first: a state's fallback is shallower, so its row is complete when
  // the state's row is filled.
  let states = 1;
  for (const word of words) states += word.length;
  const table = new Uint16Array(states * classes);
  const ending: number[][] = [[]];
  states = 1;
  for (const [id, word] of words.entries()) {
    let state = 0;
    for (let i = 0; i < word.length; i++) {
      const at = state * classes + (charClass[word.charCodeAt(i)] as number);
      if (table[at] === 0) {
        table[at] = states++;
        ending.push([]);
      }
      state = table[at] as number;
    }
    (ending[state] as number[]).push(id);
  }
  if (states > 0xffff) throw new Error("rules: too many words for the prefilter");
  const fallback = new Uint16Array(states);
  const queue: number[] = [0];
  for (let q = 0; q < queue.length; q++) {
    const state = queue[q] as number;
    const back = fallback[state] as number;
    if (state !== 0) (ending[state] as number[]).push(...(ending[back] as number[]));
    for (let cls = 1; cls < classes; cls++) {
      const at = state * classes + cls;
      const child = table[at] as number;
      const viaBack = state === 0 ? 0 : (table[back * classes + cls] as number);
      if (child === 0) {
        table[at] = viaBack;
      } else {
        fallback[child] = viaBack;
        queue.push(child);
      }
    }
  }
  // States renumbered: those where no word ends first (the start among them, still 0), then those
  // where one does, each group breadth first. The scan reads a state's words only at or past
  // `firstEnding`: one comparison for most characters instead of two reads of `endStart`.
  const endless = queue.filter((state) => (ending[state] as number[]).length === 0);
  const order = [...endless, ...queue.filter((state) => (ending[state] as number[]).length > 0)];
  const firstEnding = endless.length;
  const renumbered = new Uint16Array(states);
  for (let q = 0; q < states; q++) renumbered[order[q] as number] = q;
  const next = new Uint16Array(states * classes);
  for (let q = 0; q < states; q++) {
    const from = (order[q] as number) * classes;
    for (let cls = 0; cls < classes; cls++) {
      next[q * classes + cls] = renumbered[table[from + cls] as number] as number;
    }
  }
  const [endStart, endIds] = flatten(order.map((state) => ending[state] as number[]));
  const [indexStart, indexIds] = flatten(indexedBy);

  return {
    alternatives,
    charClass,
    classes,
    next,
    firstEnding,
    endStart,
    endIds,
    indexStart,
    indexIds,
    unconditional,
    candidates: new Int32Array(unconditional.length),
    seen: new Int32Array(words.length),
  };
}

/** Lists as one array of their items and the offset where each starts (and one past the last). */
function flatten(lists: readonly (readonly number[])[]): [Int32Array, Int32Array] {
  const start = new Int32Array(lists.length + 1);
  const items: number[] = [];
  for (const [i, list] of lists.entries()) {
    start[i] = items.length;
    items.push(...list);
  }
  start[lists.length] = items.length;
  return [start, Int32Array.from(items)];
}

/**
 * Reads the lowercased text: marks in `seen` the words it holds and in `candidates` the
 * alternatives worth running. Returns the generation of the marks.
 */
export function scan(p: Prefilter, lower: string): number {
  const { next, firstEnding, endStart, endIds, indexStart, indexIds, charClass, classes } = p;
  const { candidates, seen } = p;
  if (++generation === 0x7fffffff) {
    seen.fill(0);
    generation = 1;
  }
  const mark = generation;
  candidates.set(p.unconditional);
  let state = 0;
  for (let i = 0; i < lower.length; i++) {
    const code = lower.charCodeAt(i);
    const cls = code < 128 ? (charClass[code] as number) : 0;
    // A character no word holds leads back to the start, where no word ends.
    if (cls === 0) {
      state = 0;
      continue;
    }
    state = next[state * classes + cls] as number;
    if (state < firstEnding) continue;
    const end = endStart[state + 1] as number;
    for (let k = endStart[state] as number; k < end; k++) {
      const id = endIds[k] as number;
      if (seen[id] === mark) continue;
      seen[id] = mark;
      const last = indexStart[id + 1] as number;
      for (let j = indexStart[id] as number; j < last; j++) {
        const alt = indexIds[j] as number;
        candidates[alt >> 5] = (candidates[alt >> 5] as number) | (1 << (alt & 31));
      }
    }
  }
  return mark;
}

/** Whether the text holds a word of each condition but the first (which made it a candidate). */
export function holds(
  seen: Int32Array,
  conditions: readonly (readonly number[])[],
  mark: number,
): boolean {
  for (let c = 1; c < conditions.length; c++) {
    const ids = conditions[c] as readonly number[];
    let any = false;
    for (let i = 0; i < ids.length; i++) {
      if (seen[ids[i] as number] === mark) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  return true;
}
