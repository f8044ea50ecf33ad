import { describe, expect, it } from "vitest";
import { crc16, layout, MAX_BUCKETS, shareOf, slotOf } from "./layout.ts";

describe("layout", () => {
  it("hashes as Redis Cluster does (CRC16-XMODEM; the first non-empty {tag})", () => {
    expect(crc16("123456789")).toBe(0x31c3);
    // Examples of the Redis Cluster specification and CLUSTER KEYSLOT's documentation.
    expect(slotOf("somekey")).toBe(11_058);
    expect(slotOf("{user1000}.following")).toBe(slotOf("user1000"));
    // An empty first tag: the whole key is hashed.
    expect(slotOf("foo{}{bar}")).toBe(crc16("foo{}{bar}") % MAX_BUCKETS);
    expect(slotOf("foo{{bar}}zap")).toBe(slotOf("{bar"));
  });

  it("keeps the key names of one bucket without a tag, as earlier versions wrote them", () => {
    const keys = layout("governor:", 1);
    expect(keys.bucketOf("k").prefix).toBe("governor:");
    expect(keys.bucketOf("k").epoch).toBe("governor:epoch");
    expect(layout("governor:", 1, true).bucketOf("k").prefix).toMatch(/^governor:\{[^}]+\}:$/);
  });

  it("gives each bucket a tag in its share of the slot range, so contiguous ranges split evenly", () => {
    for (const count of [2, 3, 16, 64]) {
      const keys = layout("p:", count);
      keys.buckets.forEach((bucket, index) => {
        const slot = slotOf(bucket.epoch);
        expect(slot).toBeGreaterThanOrEqual(Math.floor((index * MAX_BUCKETS) / count));
        expect(slot).toBeLessThan(Math.floor(((index + 1) * MAX_BUCKETS) / count));
        // A key's entry and its bucket's indexes share the slot, whatever braces the key holds.
        expect(slotOf(`${bucket.prefix}l:{x}y`)).toBe(slot);
      });
    }
    // 16 buckets over three primaries with the ranges redis-cli --cluster create gives.
    const ranges = [
      [0, 5460],
      [5461, 10922],
      [10923, 16383],
    ];
    const perPrimary = ranges.map(
      ([from, to]) =>
        layout("p:", 16).buckets.filter((b) => {
          const slot = slotOf(b.epoch);
          return slot >= (from as number) && slot <= (to as number);
        }).length,
    );
    expect(perPrimary.sort()).toEqual([5, 5, 6]);
  });

  it("spreads keys evenly over the buckets and splits a cap so the shares cover it", () => {
    const keys = layout("p:", 16);
    const counts = new Array(16).fill(0) as number[];
    for (let i = 0; i < 16_000; i++) {
      const index = keys.bucketOf(`job-${i}`).index;
      counts[index] = (counts[index] ?? 0) + 1;
    }
    for (const n of counts) expect(n).toBeGreaterThan(800);
    expect(shareOf(10_000, 16)).toBe(625);
    expect(shareOf(3, 16)).toBe(1);
  });
});
