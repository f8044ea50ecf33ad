import { describe, expect, it } from "vitest";
import { PrintCounts } from "./print-counts.ts";

describe("PrintCounts", () => {
  it("counts each fingerprint, and gives them as a record in the order first counted", () => {
    const counts = new PrintCounts();
    expect(counts.get("aaaa")).toBeUndefined();
    expect(counts.toRecord()).toEqual({});
    for (const p of ["bbbb", "aaaa", "bbbb", "cccc", "aaaa", "bbbb"]) counts.add(p);
    expect([
      counts.get("aaaa"),
      counts.get("bbbb"),
      counts.get("cccc"),
      counts.get("dddd"),
    ]).toEqual([2, 3, 1, undefined]);
    const record = counts.toRecord();
    expect(record).toStrictEqual({ bbbb: 3, aaaa: 2, cccc: 1 });
    expect(Object.keys(record)).toEqual(["bbbb", "aaaa", "cccc"]);
    // A plain object of its own each time: changing one changes nothing counted.
    record.bbbb = 0;
    expect(counts.toRecord().bbbb).toBe(3);
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
  });

  it("matches a plain object's counting for any sequence (property)", () => {
    const prints = ["0123456789abcdef", "fedcba9876543210", "0000000000000001", "x"];
    for (let seed = 0; seed < 200; seed++) {
      const counts = new PrintCounts();
      const plain: Record<string, number> = {};
      let s = seed;
      for (let i = 0; i < (seed % 9) + 1; i++) {
        s = (s * 1103515245 + 12345) & 0x7fffffff;
        const p = prints[s % prints.length] as string;
        counts.add(p);
        plain[p] = (plain[p] ?? 0) + 1;
        expect(counts.get(p)).toBe(plain[p]);
      }
      expect(Object.entries(counts.toRecord())).toEqual(Object.entries(plain));
    }
  });

  it("a copy starts with the counts and is counted on apart from them", () => {
    const counts = new PrintCounts();
    for (const p of ["aaaa", "bbbb", "aaaa"]) counts.add(p);
    const copy = counts.copy();
    expect(copy.toRecord()).toStrictEqual({ aaaa: 2, bbbb: 1 });
    copy.add("aaaa");
    copy.add("bbbb");
    counts.add("cccc");
    expect(copy.toRecord()).toStrictEqual({ aaaa: 3, bbbb: 2 });
    expect(counts.toRecord()).toStrictEqual({ aaaa: 2, bbbb: 1, cccc: 1 });
    expect(new PrintCounts().copy().toRecord()).toStrictEqual({});
  });
});
