/**
 * Where the store's keys live. The ledger is split into `buckets`: a logical key's entry, its
 * result, and its bucket's unsettled set, settled index, epoch and learned-outcome index share
 * one hash tag, so every script touches one Redis Cluster slot, and the buckets' tags are spread
 * over the whole slot range, so a cluster's primaries share the ledger. With one bucket on a
 * single server (its default) there is no tag and the keys are the ones earlier versions wrote.
 */

/** The most buckets a prefix may have (one per cluster slot). */
export const MAX_BUCKETS = 16_384;

/** The key names of one bucket. */
export interface Bucket {
  readonly index: number;
  /** The prefix of every key of this bucket (the store's prefix, then its hash tag, if any). */
  readonly prefix: string;
  readonly unsettled: string;
  readonly settled: string;
  readonly epoch: string;
  readonly outcomes: string;
}

/** The store's key layout for one prefix and bucket count. */
export interface Layout {
  readonly buckets: readonly Bucket[];
  /** The bucket of a logical key (a ledger entry or a learned record). */
  bucketOf(key: string): Bucket;
  /** A plain value or counter: one key, so it needs no tag and spreads by its own hash. */
  valueKey(key: string): string;
  /** Where the bucket count is recorded, so that workers with another count are refused. */
  readonly layoutKey: string;
}

/**
 * The layout of `count` buckets under `prefix`; `tagged` (a cluster) gives even one bucket its
 * hash tag, since a script's keys must share a slot.
 */
export function layout(prefix: string, count: number, tagged = count > 1): Layout {
  const buckets = Array.from({ length: count }, (_, index): Bucket => {
    const base = tagged ? `${prefix}{${tagOf(index, count)}}:` : prefix;
    return {
      index,
      prefix: base,
      unsettled: `${base}unsettled`,
      settled: `${base}settled`,
      epoch: `${base}epoch`,
      outcomes: `${base}outcomes`,
    };
  });
  return {
    buckets,
    bucketOf: (key) => buckets[count === 1 ? 0 : crc16(key) % count] as Bucket,
    valueKey: (key) => `${prefix}v:${key}`,
    layoutKey: `${prefix}layout`,
  };
}

/**
 * The hash tag of bucket `index` of `count`: the first of `"<index>"`, `"<index>.1"`, … whose
 * slot lies in the bucket's share of the slot range. `redis-cli --cluster create` and most
 * managed services give each primary a contiguous range, so consecutive buckets land on
 * consecutive primaries and every primary gets its share.
 */
function tagOf(index: number, count: number): string {
  const from = Math.floor((index * MAX_BUCKETS) / count);
  const to = Math.floor(((index + 1) * MAX_BUCKETS) / count);
  for (let n = 0; ; n++) {
    const tag = n === 0 ? String(index) : `${index}.${n}`;
    const slot = crc16(tag) % MAX_BUCKETS;
    if (slot >= from && slot < to) return tag;
  }
}

/** Redis Cluster's key hash: CRC16-CCITT (XMODEM) of the UTF-8 bytes. */
export function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text, "utf8")) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
  }
  return crc;
}

/** The cluster slot of a key: the CRC16 of its hash tag (the first non-empty `{…}`), or of all of it. */
export function slotOf(key: string): number {
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) return crc16(key.slice(open + 1, close)) % MAX_BUCKETS;
  }
  return crc16(key) % MAX_BUCKETS;
}

/** A share of `total` for each of `count` buckets (at least 1), summing to at least `total`. */
export function shareOf(total: number, count: number): number {
  return Math.max(1, Math.ceil(total / count));
}
