/**
 * How many times each fingerprint was counted, in the order first counted. Most runs count one
 * fingerprint, or none: the first is held in two fields, and a map is made only for a second.
 */
export class PrintCounts {
  #first: string | undefined = undefined;
  #firstCount = 0;
  #rest: Map<string, number> | undefined = undefined;

  /** The count of a fingerprint (undefined: never counted). */
  get(print: string): number | undefined {
    if (print === this.#first) return this.#firstCount;
    return this.#rest?.get(print);
  }

  /** One more of a fingerprint. */
  add(print: string): void {
    if (this.#first === undefined) {
      this.#first = print;
      this.#firstCount = 1;
    } else if (print === this.#first) {
      this.#firstCount += 1;
    } else {
      this.#rest ??= new Map();
      this.#rest.set(print, (this.#rest.get(print) ?? 0) + 1);
    }
  }

  /** A copy: counted on apart from this one (a run that goes on from another, `RunOptions.continues`). */
  copy(): PrintCounts {
    const out = new PrintCounts();
    out.#first = this.#first;
    out.#firstCount = this.#firstCount;
    if (this.#rest !== undefined) out.#rest = new Map(this.#rest);
    return out;
  }

  /** The counts as a plain object, keys in the order first counted. */
  toRecord(): Record<string, number> {
    const out: Record<string, number> = {};
    if (this.#first === undefined) return out;
    out[this.#first] = this.#firstCount;
    if (this.#rest !== undefined) for (const [print, n] of this.#rest) out[print] = n;
    return out;
  }
}
