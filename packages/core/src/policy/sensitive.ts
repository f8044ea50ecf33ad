/**
 * The values of a call's arguments that the policy marks sensitive (`sensitiveArgs`), wherever
 * they sit in the arguments, so redaction can remove them from model-facing text.
 *
 * A name in `sensitiveArgs` is either
 * - a bare key (`token`): that key at any depth, in objects and in arrays of objects;
 * - a path from the top of the arguments, with keys joined by `.` and `[]` (every element) or
 *   `[N]` (element N) after a key: `auth.token`, `edits[].oldText`, `edits[0].oldText`. A key
 *   step applied to an array applies to each of its elements, so `edits.oldText` reads like
 *   `edits[].oldText`.
 *
 * What a name reaches is collected whole: a string, a number (as its decimal text), or every
 * string and number inside an object or array. Pure and bounded: cycles are visited once, the
 * walk stops at a depth of 64 and after 10,000 nodes.
 */

/** One step of a path: a key, one element, or every element. */
type Step =
  | { readonly kind: "key"; readonly key: string }
  | { readonly kind: "index"; readonly index: number }
  | { readonly kind: "every" };

/**
 * What a name in `sensitiveArgs` may be: a key without `.`, `[` or `]`, then any of `.key`, `[]`
 * and `[N]`.
 * @internal Exported for the policy schema; not part of the public API.
 */
export const SENSITIVE_PATH = /^[^.[\]]+(?:\[\d*\])*(?:\.[^.[\]]+(?:\[\d*\])*)*$/;

/**
 * What the policy schema says of a name that {@link SENSITIVE_PATH} refuses.
 * @internal Exported for the policy schema; not part of the public API.
 */
export const SENSITIVE_PATH_MESSAGE =
  "must be an argument name (`token`, matched at any depth) or a path of names joined by `.`, each optionally followed by `[]` (every element) or `[N]` (element N), such as `auth.token` or `edits[].oldText`";

const MAX_DEPTH = 64;
const MAX_NODES = 10_000;

/** The steps of a path, or undefined for a name that is not one (see {@link SENSITIVE_PATH}). */
function parsePath(path: string): Step[] | undefined {
  if (!SENSITIVE_PATH.test(path)) return undefined;
  const steps: Step[] = [];
  for (const part of path.split(".")) {
    const open = part.indexOf("[");
    steps.push({ kind: "key", key: open < 0 ? part : part.slice(0, open) });
    if (open < 0) continue;
    for (const [, digits] of part.slice(open).matchAll(/\[(\d*)\]/g)) {
      steps.push(digits === "" ? { kind: "every" } : { kind: "index", index: Number(digits) });
    }
  }
  return steps;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function ownValue(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The walk's state: what was found, what was visited, how much work is left. */
class Collector {
  readonly values = new Set<string>();
  /** Objects already read whole, and objects already searched for a key (for this name). */
  private collected = new WeakSet<object>();
  private searched = new WeakSet<object>();
  private nodes = 0;

  /** Starts the walk of another name: the node budget stays spent. */
  nextName(): void {
    this.collected = new WeakSet<object>();
    this.searched = new WeakSet<object>();
  }

  /** Counts one node; false once the budget is spent. */
  private spend(): boolean {
    if (this.nodes >= MAX_NODES) return false;
    this.nodes++;
    return true;
  }

  /** Every string and number in `value`, at any depth. */
  collect(value: unknown, depth: number): void {
    if (depth > MAX_DEPTH || !this.spend()) return;
    if (typeof value === "string") {
      this.values.add(value);
      return;
    }
    if (typeof value === "number") {
      if (Number.isFinite(value)) this.values.add(String(value));
      return;
    }
    if (typeof value === "bigint") {
      this.values.add(String(value));
      return;
    }
    if (typeof value !== "object" || value === null || this.collected.has(value)) return;
    this.collected.add(value);
    const children = Array.isArray(value) ? value : Object.values(value);
    for (const child of children) this.collect(child, depth + 1);
  }

  /** The values under `key` wherever it sits in `value`. */
  findKey(value: unknown, key: string, depth: number): void {
    if (depth > MAX_DEPTH || typeof value !== "object" || value === null) return;
    if (this.searched.has(value) || !this.spend()) return;
    this.searched.add(value);
    if (Array.isArray(value)) {
      for (const element of value) this.findKey(element, key, depth + 1);
      return;
    }
    for (const [k, child] of Object.entries(value)) {
      if (k === key) this.collect(child, depth + 1);
      else this.findKey(child, key, depth + 1);
    }
  }

  /** The values at the end of `steps` from `value`. */
  follow(value: unknown, steps: readonly Step[], at: number, depth: number): void {
    const step = steps[at];
    if (step === undefined) {
      this.collect(value, depth);
      return;
    }
    if (depth > MAX_DEPTH || !this.spend()) return;
    if (step.kind === "key") {
      if (Array.isArray(value)) {
        for (const element of value) this.follow(element, steps, at, depth + 1);
      } else if (isRecord(value)) {
        this.follow(ownValue(value, step.key), steps, at + 1, depth + 1);
      }
      return;
    }
    if (!Array.isArray(value)) return;
    if (step.kind === "index") {
      if (step.index < value.length) this.follow(value[step.index], steps, at + 1, depth + 1);
      return;
    }
    for (const element of value) this.follow(element, steps, at + 1, depth + 1);
  }
}

/**
 * The string values (and numbers, as their decimal text) that the names of a policy's
 * `sensitiveArgs` point to in a call's arguments: a bare name (`token`) matches that key at any
 * depth; a path (`auth.token`, `edits[].oldText`, `edits[0].oldText`) is read from the top. What
 * a name reaches is taken whole: every string and number inside an object or array. A name that
 * is not a valid path (the policy schema refuses those) is read as one literal top-level key.
 *
 * Pure: never throws, whatever `args` is (cycles, prototypes and getters aside: own enumerable
 * keys only). Each value appears once, in the order found.
 *
 * @example
 * sensitiveValues({ edits: [{ oldText: "a secret", newText: "x" }], auth: { token: "t0k3n" } },
 *   ["edits[].oldText", "token"])
 * // → ["a secret", "t0k3n"]
 */
export function sensitiveValues(args: unknown, names: readonly string[]): string[] {
  const collector = new Collector();
  for (const name of names) {
    if (typeof name !== "string" || name === "") continue;
    collector.nextName();
    const steps = parsePath(name);
    if (steps === undefined || (isRecord(args) && Object.hasOwn(args, name))) {
      // A literal top-level key, such as `a.b` written as one key.
      if (isRecord(args)) collector.collect(ownValue(args, name), 1);
      if (steps === undefined) continue;
    }
    const [first] = steps;
    if (steps.length === 1 && first?.kind === "key") {
      collector.findKey(args, first.key, 0);
    } else {
      collector.follow(args, steps, 0, 0);
    }
  }
  return [...collector.values];
}

/**
 * Every string and number in a call's arguments, at any depth (bounded as
 * {@link sensitiveValues} is): what the model itself sent, which redaction may leave as written
 * (`RedactOptions.keepValues`). Pure; never throws.
 */
export function argumentStrings(args: unknown): string[] {
  const collector = new Collector();
  collector.collect(args, 0);
  return [...collector.values];
}
