import { describe, expect, it } from "vitest";
import { createLoopDetector, resultHash } from "./repeats.ts";

describe("createLoopDetector", () => {
  it("counts the same result in a row, and starts over when it changes", () => {
    const loops = createLoopDetector();
    loops.note("k", { value: { a: 1 } });
    loops.note("k", { value: { a: 1 } });
    expect(loops.get("k")).toEqual({ sig: 'ok:{"a":1}', count: 2 });
    loops.note("k", { failure: "abc" });
    expect(loops.get("k")).toEqual({ sig: "f:abc", count: 1 });
  });

  it("follows at most max calls: the one first seen longest ago goes, whatever was noted since", () => {
    const loops = createLoopDetector(3);
    for (const key of ["a", "b", "c"]) loops.note(key, { value: 1 });
    // Noting "a" again does not make it younger: it was first seen first.
    loops.note("a", { value: 1 });
    loops.note("d", { value: 1 });
    expect(loops.get("a")).toBeUndefined();
    expect(loops.get("b")?.count).toBe(1);
    loops.note("e", { value: 1 });
    expect(loops.get("b")).toBeUndefined();
    expect([loops.get("c"), loops.get("d"), loops.get("e")].map((s) => s?.count)).toEqual([
      1, 1, 1,
    ]);
  });

  it("forgets everything on clear, and fills again from empty", () => {
    const loops = createLoopDetector(2);
    for (const key of ["a", "b", "c"]) loops.note(key, { value: 1 });
    loops.clear();
    expect(loops.get("b")).toBeUndefined();
    for (const key of ["x", "y"]) loops.note(key, { value: 1 });
    expect([loops.get("x"), loops.get("y")].every((s) => s?.count === 1)).toBe(true);
  });
});

describe("resultHash", () => {
  it("is the JSON of a short result, a hash of a long one, a fixed word for what has none", () => {
    expect(resultHash({ ok: true })).toBe('{"ok":true}');
    expect(resultHash("x".repeat(100))).toMatch(/^[0-9a-f]{32}$/);
    expect(resultHash(undefined)).toBe("null");
    expect(resultHash({ n: 1n })).toBe("unhashable");
  });
});
