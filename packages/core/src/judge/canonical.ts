import * as nodeCrypto from "node:crypto";

/**
 * The SHA-256 of a string's UTF-8 bytes, in hex: the one-shot `crypto.hash` where Node has it
 * (20.12+; about half the cost of a `Hash` object for the short texts hashed per call), else a
 * `Hash` object. Both give the same digest.
 * @internal
 */
export const sha256Hex: (text: string) => string =
  typeof nodeCrypto.hash === "function"
    ? (text) => nodeCrypto.hash("sha256", text, "hex")
    : (text) => nodeCrypto.createHash("sha256").update(text, "utf8").digest("hex");

/**
 * Stable JSON: the text `JSON.stringify` would give, with every object's keys sorted (by UTF-16
 * code units), so two argument objects that differ only in key order give the same text.
 *
 * Follows `JSON.stringify` where it has a rule: `toJSON` is honored (a `Date` becomes its ISO
 * string), `undefined`, functions and symbols are dropped from objects and become `null` in
 * arrays, non-finite numbers become `null`, `-0` becomes `0`. Where it throws, this does not:
 * a `bigint` becomes its decimal string, and a top-level `undefined` becomes `null` (a call
 * without arguments). A cycle is a bug in the caller and throws a `TypeError` naming its path.
 *
 * @example
 * canonicalJson({ b: 1, a: [true, undefined] }); // '{"a":[true,null],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  // Most arguments are already canonical (plain data, keys in order): JSON.stringify writes them
  // in one native pass. Anything else takes the walk below.
  if (alreadyCanonical(value, 0)) {
    try {
      return JSON.stringify(value) ?? "null";
    } catch {
      // A getter that answered differently the second time: the walk decides.
    }
  }
  return write(value, "", [], []) ?? "null";
}

/** Deeper than this, the walk checks for a cycle. */
const FAST_DEPTH = 32;

/**
 * Whether `JSON.stringify` writes `value` exactly as the walk would: primitives other than
 * bigint, and plain objects (keys already sorted, no `toJSON`) and arrays of them, not too deep.
 */
function alreadyCanonical(value: unknown, depth: number): boolean {
  if (typeof value !== "object") return typeof value !== "bigint";
  if (value === null) return true;
  if (depth >= FAST_DEPTH || "toJSON" in value) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!alreadyCanonical(value[i], depth + 1)) return false;
    }
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  const record = value as Record<string, unknown>;
  // `for…in` walks the own keys in `Object.keys` order with no array made. Keys enumerable on a
  // prototype come after them: they can only fail the checks (the walk then decides), never pass
  // own keys that are out of order.
  let previous: string | undefined;
  for (const name in record) {
    if (previous !== undefined && !(previous < name)) return false;
    if (!alreadyCanonical(record[name], depth + 1)) return false;
    previous = name;
  }
  return true;
}

/**
 * The hash an idempotency key is stored with: the first 32 hex characters (128 bits) of the
 * SHA-256 of {@link canonicalJson}. Key order never changes it; any other difference does.
 *
 * @example
 * hashArgs({ amount: 5, to: "acct_1" }) === hashArgs({ to: "acct_1", amount: 5 }); // true
 */
export function hashArgs(args: unknown): string {
  return hashCanonical(canonicalJson(args));
}

/**
 * The hash of a text already made by {@link canonicalJson} (or any text): the first 32 hex
 * characters of its SHA-256. For callers that hold the canonical text, so it is not built twice.
 */
export function hashCanonical(text: string): string {
  return flatPrefix32("", sha256Hex(text));
}

/**
 * `prefix` and the first 32 characters of `hex` as one flat string. A `slice` of 32 characters
 * would be a view that keeps the whole 64-character digest alive, and a `+` a pair that keeps both
 * halves: a hash kept for long (a ledger entry's key and argument hash) would hold about three
 * times its size. Joining copies the characters once.
 * @internal
 */
export function flatPrefix32(prefix: string, hex: string): string {
  return [prefix, hex.slice(0, 16), hex.slice(16, 32)].join("");
}

/**
 * Returns undefined for what JSON drops (undefined, functions, symbols). `parents` are the
 * containers above `input` and `keys` the key of each step down (a path is spelled out only for a
 * cycle's error).
 */
function write(
  input: unknown,
  key: string | number,
  parents: object[],
  keys: (string | number)[],
): string | undefined {
  let value = input;
  if (typeof value === "object" && value !== null && "toJSON" in value) {
    const toJSON = (value as { toJSON: unknown }).toJSON;
    if (typeof toJSON === "function") value = toJSON.call(value, String(key));
  }
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
    case "number":
      // JSON.stringify turns NaN and ±Infinity into null and -0 into 0.
      return JSON.stringify(value);
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      return JSON.stringify(value.toString());
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
  }
  if (value === null) return "null";
  const object = value as object;
  if (parents.includes(object)) {
    throw new TypeError(
      `canonicalJson: the value has a cycle at ${pathOf(parents, keys)}; arguments must be plain JSON (no object may contain itself).`,
    );
  }
  parents.push(object);
  let text: string;
  if (Array.isArray(object)) {
    text = "[";
    for (let index = 0; index < object.length; index++) {
      keys.push(index);
      text += `${index === 0 ? "" : ","}${write(object[index], index, parents, keys) ?? "null"}`;
      keys.pop();
    }
    text += "]";
  } else {
    const record = object as Record<string, unknown>;
    text = "{";
    let first = true;
    for (const name of Object.keys(record).sort()) {
      keys.push(name);
      const member = write(record[name], name, parents, keys);
      keys.pop();
      if (member === undefined) continue;
      text += `${first ? "" : ","}${JSON.stringify(name)}:${member}`;
      first = false;
    }
    text += "}";
  }
  parents.pop();
  return text;
}

/** `$`, then `.name` per object step and `[index]` per array step. */
function pathOf(parents: readonly object[], keys: readonly (string | number)[]): string {
  let path = "$";
  for (let i = 0; i < keys.length; i++) {
    path += Array.isArray(parents[i]) ? `[${keys[i]}]` : `.${String(keys[i])}`;
  }
  return path;
}
