// Run ids (and run instance ids, part of idempotency keys): random UUIDs (version 4), made from a
// pool of random bytes filled 256 ids at a time and written as one flat string. `randomUUID`
// joins 20 pieces into the id, about 600 bytes of intermediate strings for each run.
import { randomFillSync } from "node:crypto";

const IDS_PER_FILL = 256;
const pool = Buffer.allocUnsafe(16 * IDS_PER_FILL);
let next = pool.length;
const out = Buffer.allocUnsafe(36);
/** The ASCII codes of the hex digits. */
const HEX = Buffer.from("0123456789abcdef", "latin1");

/** A random (version 4, RFC 9562) UUID, from the same cryptographic source as `randomUUID`. */
export function newRunId(): string {
  if (next + 16 > pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  let o = 0;
  for (let i = 0; i < 16; i++) {
    let b = pool[next + i] as number;
    // The version (4) and the variant (10xx) bits.
    if (i === 6) b = (b & 0x0f) | 0x40;
    else if (i === 8) b = (b & 0x3f) | 0x80;
    if (i === 4 || i === 6 || i === 8 || i === 10) out[o++] = 0x2d;
    out[o++] = HEX[b >> 4] as number;
    out[o++] = HEX[b & 15] as number;
  }
  // Each id's bytes are used once.
  next += 16;
  return out.toString("latin1", 0, 36);
}
