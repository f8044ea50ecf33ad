// A success's signature for the loop detector: a 53-bit hash of the text `JSON.stringify` gives
// the result, computed by walking plain data with no string made (a success is noted on every
// call; most calls are never repeated, so its JSON would be garbage at once).

/** The signature of a result `JSON.stringify` cannot write (a cycle, a BigInt): one for all. */
export const UNHASHABLE = -1;

/** Deeper than this, the text is made and hashed instead (a cycle throws there). */
const MAX_DEPTH = 32;

// Two 32-bit lanes (FNV-1a and a second multiplier), fed one UTF-16 unit at a time.
let a = 0;
let b = 0;

function unit(c: number): void {
  a = Math.imul(a ^ c, 0x01000193);
  b = Math.imul(b ^ c, 0x5bd1e995);
  b ^= b >>> 15;
}

function text(s: string): void {
  // The lanes in locals while a run of characters is fed (module variables stay in memory).
  let x = a;
  let y = b;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    x = Math.imul(x ^ c, 0x01000193);
    y = Math.imul(y ^ c, 0x5bd1e995);
    y ^= y >>> 15;
  }
  a = x;
  b = y;
}

const HEX = "0123456789abcdef";

/** A string as JSON writes it: quoted, with its escapes (well-formed: lone surrogates escaped). */
function quoted(s: string): void {
  unit(0x22);
  let x = a;
  let y = b;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c && (c < 0xd800 || c > 0xdfff)) {
      x = Math.imul(x ^ c, 0x01000193);
      y = Math.imul(y ^ c, 0x5bd1e995);
      y ^= y >>> 15;
      continue;
    }
    // An escape: fed through `unit`, with the lanes written back first and read again after.
    a = x;
    b = y;
    if (c === 0x22 || c === 0x5c) {
      unit(0x5c);
      unit(c);
    } else if (c === 0x08) {
      unit(0x5c);
      unit(0x62);
    } else if (c === 0x09) {
      unit(0x5c);
      unit(0x74);
    } else if (c === 0x0a) {
      unit(0x5c);
      unit(0x6e);
    } else if (c === 0x0c) {
      unit(0x5c);
      unit(0x66);
    } else if (c === 0x0d) {
      unit(0x5c);
      unit(0x72);
    } else if (c < 0x20) {
      escaped(c);
    } else if (c <= 0xdbff && i + 1 < s.length) {
      // A high surrogate: kept with the low one after it, escaped alone.
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        unit(c);
        unit(d);
        i++;
      } else {
        escaped(c);
      }
    } else {
      escaped(c);
    }
    x = a;
    y = b;
  }
  a = x;
  b = y;
  unit(0x22);
}

/** `\uXXXX` with lowercase hex digits, as JSON writes a control character or a lone surrogate. */
function escaped(c: number): void {
  unit(0x5c);
  unit(0x75);
  for (let shift = 12; shift >= 0; shift -= 4) unit(HEX.charCodeAt((c >> shift) & 0xf));
}

/** A number as JSON writes it; a small integer's digits with no string made. */
function number(n: number): void {
  if (!Number.isFinite(n)) {
    text("null");
    return;
  }
  if (!Number.isInteger(n) || n > 2_147_483_647 || n < -2_147_483_647) {
    text(String(n));
    return;
  }
  if (n < 0) {
    unit(0x2d);
    n = -n;
  }
  let div = 1;
  while (div * 10 <= n) div *= 10;
  for (; div >= 1; div /= 10) unit(0x30 + (((n / div) | 0) % 10));
}

/**
 * Hashes `value` as JSON writes it, where it is plain data (primitives, plain objects and arrays
 * without `toJSON`, not too deep). False: something else was met (the hash is then unusable).
 */
function plain(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
      quoted(value);
      return true;
    case "number":
      // -0 is written 0.
      number(value === 0 ? 0 : value);
      return true;
    case "boolean":
      text(value ? "true" : "false");
      return true;
    case "object":
      break;
    default:
      // A BigInt (it may have a `toJSON`), a function, a symbol or undefined at this level.
      return false;
  }
  if (value === null) {
    text("null");
    return true;
  }
  if (depth >= MAX_DEPTH || "toJSON" in value) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (Array.isArray(value)) {
    if (proto !== Array.prototype) return false;
    unit(0x5b);
    for (let i = 0; i < value.length; i++) {
      if (i > 0) unit(0x2c);
      if (!member(value[i], depth, true)) return false;
    }
    unit(0x5d);
    return true;
  }
  if (proto !== Object.prototype && proto !== null) return false;
  const record = value as Record<string, unknown>;
  unit(0x7b);
  let first = true;
  for (const name in record) {
    if (!Object.hasOwn(record, name)) continue;
    const v = record[name];
    const t = typeof v;
    // What JSON drops from an object.
    if (t === "undefined" || t === "function" || t === "symbol") continue;
    if (!first) unit(0x2c);
    first = false;
    quoted(name);
    unit(0x3a);
    if (!member(v, depth, false)) return false;
  }
  unit(0x7d);
  return true;
}

/** An array element or an object member: in an array, what JSON drops becomes `null`. */
function member(v: unknown, depth: number, inArray: boolean): boolean {
  const t = typeof v;
  if (inArray && (t === "undefined" || t === "function" || t === "symbol")) {
    text("null");
    return true;
  }
  return plain(v, depth + 1);
}

/**
 * A success's signature: a 53-bit hash of `JSON.stringify(value ?? null) ?? "null"`, equal for
 * results whose JSON is equal; {@link UNHASHABLE} when `JSON.stringify` throws.
 */
export function resultSignature(value: unknown): number {
  return hashValue(value) ? digest() : UNHASHABLE;
}

/**
 * {@link resultSignature} written into `out[0]`: a number returned from a call that is not
 * inlined is a new heap number, one written into a Float64Array is not.
 */
export function signResultInto(value: unknown, out: Float64Array): void {
  // The digest written here, not returned by `digest()`: its result would be a heap number.
  out[0] = hashValue(value) ? (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff) : UNHASHABLE;
}

/** Hashes the JSON of `value ?? null` into the lanes; false when `JSON.stringify` throws. */
function hashValue(value: unknown): boolean {
  a = 0x811c9dc5;
  b = 0x9747b28c;
  const v = value ?? null;
  let done: boolean;
  try {
    done = plain(v, 0);
  } catch {
    // A getter or a proxy threw: JSON.stringify decides (it throws too, most likely).
    done = false;
  }
  if (done) return true;
  let json: string;
  try {
    json = JSON.stringify(v) ?? "null";
  } catch {
    return false;
  }
  a = 0x811c9dc5;
  b = 0x9747b28c;
  text(json);
  return true;
}

/** The signature of a JSON text: what {@link resultSignature} gives a value with this JSON. */
export function textSignature(json: string): number {
  a = 0x811c9dc5;
  b = 0x9747b28c;
  text(json);
  return digest();
}

function digest(): number {
  return (a >>> 0) * 0x200000 + ((b >>> 0) & 0x1fffff);
}
