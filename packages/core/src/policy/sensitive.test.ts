import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redact } from "../judge/redact.ts";
import { SENSITIVE_PATH, sensitiveValues } from "./sensitive.ts";

describe("sensitiveValues", () => {
  const args = {
    path: "/notes/a.md",
    edits: [
      { oldText: "my old secret text", newText: "fine" },
      { oldText: "second secret", newText: "also fine" },
    ],
    auth: { token: "t0k3n-abc", user: "bob", nested: { token: "deep-t0k3n" } },
    pin: 482913,
    count: 3,
  };

  it("issue 8.9: a nested value (edits[].oldText) is collected", () => {
    expect(sensitiveValues(args, ["edits[].oldText"])).toEqual([
      "my old secret text",
      "second secret",
    ]);
  });

  it("issue 8.9: a dotted path (auth.token) is read from the top", () => {
    expect(sensitiveValues(args, ["auth.token"])).toEqual(["t0k3n-abc"]);
    expect(sensitiveValues(args, ["auth.nested.token"])).toEqual(["deep-t0k3n"]);
    expect(sensitiveValues(args, ["nested.token"])).toEqual([]);
  });

  it("issue 8.9: a bare name matches that key at any depth", () => {
    expect(sensitiveValues(args, ["token"])).toEqual(["t0k3n-abc", "deep-t0k3n"]);
    expect(sensitiveValues(args, ["oldText"])).toEqual(["my old secret text", "second secret"]);
  });

  it("reads one element, or every element through a key", () => {
    expect(sensitiveValues(args, ["edits[1].oldText"])).toEqual(["second secret"]);
    expect(sensitiveValues(args, ["edits[7].oldText"])).toEqual([]);
    expect(sensitiveValues(args, ["edits.oldText"])).toEqual([
      "my old secret text",
      "second secret",
    ]);
    expect(sensitiveValues({ m: [[1234, [5678]]] }, ["m[][]"])).toEqual(["1234", "5678"]);
  });

  it("takes an object or array whole, numbers as their decimal text", () => {
    expect(sensitiveValues(args, ["auth"])).toEqual(["t0k3n-abc", "bob", "deep-t0k3n"]);
    expect(sensitiveValues(args, ["pin"])).toEqual(["482913"]);
    expect(sensitiveValues({ a: [true, null, 12n, Number.NaN, 1.5] }, ["a"])).toEqual([
      "12",
      "1.5",
    ]);
  });

  it("keeps the top-level behavior: a top-level string or number", () => {
    expect(sensitiveValues({ token: "abc123", other: "x" }, ["token"])).toEqual(["abc123"]);
    expect(sensitiveValues({ id: 42 }, ["id"])).toEqual(["42"]);
    expect(sensitiveValues({ "a.b": "literal key" }, ["a.b"])).toEqual(["literal key"]);
  });

  it("never throws: cycles, odd arguments, odd names, prototype keys", () => {
    const cyclic: Record<string, unknown> = { token: "loop-secret" };
    cyclic.self = cyclic;
    cyclic.list = [cyclic, { token: "inner-secret" }];
    expect(sensitiveValues(cyclic, ["token", "self.token", "list[].token", "self"])).toEqual([
      "loop-secret",
      "inner-secret",
    ]);
    for (const odd of [null, undefined, "str", 42, ["a", { token: "in-array" }]]) {
      expect(() => sensitiveValues(odd, ["token", "a.b", "x[]"])).not.toThrow();
    }
    expect(sensitiveValues(["a", { token: "in-array" }], ["token"])).toEqual(["in-array"]);
    expect(sensitiveValues({ a: 1 }, ["", "a..b", "[0]", "constructor", "__proto__"])).toEqual([]);
    const parsed = JSON.parse('{"__proto__": {"token": "proto-secret"}}') as unknown;
    expect(sensitiveValues(parsed, ["token"])).toEqual(["proto-secret"]);
  });

  it("is bounded: deep and wide arguments stop, not overflow", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 10_000; i++) deep = { token: deep };
    expect(() => sensitiveValues(deep, ["token"])).not.toThrow();
    const wide = { token: Array.from({ length: 100_000 }, (_, i) => `value-${i}`) };
    expect(sensitiveValues(wide, ["token"]).length).toBeLessThanOrEqual(10_000);
  });

  it("a path is what the policy schema accepts", () => {
    for (const ok of ["token", "x-api-key", "auth.token", "edits[].oldText", "a[0][1].b", "m[]"]) {
      expect(SENSITIVE_PATH.test(ok)).toBe(true);
    }
    for (const bad of ["", ".a", "a.", "a..b", "a[x]", "a[", "a]", "[0]"]) {
      expect(SENSITIVE_PATH.test(bad)).toBe(false);
    }
  });

  // A JSON-like tree with a value planted at a random path: that path, written every way that
  // reaches it, collects the value; and redaction with the collected values removes it.
  const key = fc.string({ unit: fc.constantFrom(..."abcdefgh_-"), minLength: 1, maxLength: 6 });
  const leaf = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null));
  const tree = fc.letrec<{ node: unknown }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leaf,
      fc.array(tie("node"), { maxLength: 3 }),
      fc.dictionary(key, tie("node"), { maxKeys: 3 }),
    ),
  })).node;
  const segment = fc.oneof(
    key.map((k) => ({ key: k })),
    fc.nat(3).map((i) => ({ index: i })),
  );

  it("a value planted at any path is found by that path, and redacted", () => {
    fc.assert(
      fc.property(
        fc.tuple(key, fc.array(segment, { maxLength: 4 })),
        tree,
        fc.string({ unit: fc.constantFrom(..."QWXZ0123456789"), minLength: 8, maxLength: 16 }),
        ([first, rest], base, secret) => {
          // Build the arguments along the path, keeping what `base` holds elsewhere.
          const root: Record<string, unknown> =
            typeof base === "object" && base !== null && !Array.isArray(base)
              ? { ...(base as Record<string, unknown>) }
              : {};
          let holder: Record<string, unknown> | unknown[] = root;
          let slot: string | number = first;
          let path = first;
          for (const step of rest) {
            const next: Record<string, unknown> | unknown[] =
              "key" in step ? {} : new Array<unknown>(step.index + 1).fill(0);
            (holder as Record<string | number, unknown>)[slot] = next;
            holder = next;
            slot = "key" in step ? step.key : step.index;
            path += "key" in step ? `.${step.key}` : `[${step.index}]`;
          }
          (holder as Record<string | number, unknown>)[slot] = `S${secret}`;
          expect(sensitiveValues(root, [path])).toContain(`S${secret}`);
          const wild = path.replace(/\[\d+\]/g, "[]");
          expect(sensitiveValues(root, [wild])).toContain(`S${secret}`);
          const last = path.split(".").at(-1)?.replace(/\[.*$/, "") ?? first;
          if (!/\[\d+\]$/.test(path)) {
            expect(sensitiveValues(root, [last])).toContain(`S${secret}`);
          }
          const text = `update failed: ${JSON.stringify(root)}`;
          const out = redact(text, {
            maxLength: 100_000,
            sensitiveValues: sensitiveValues(root, [path]),
          });
          expect(out).not.toContain(`S${secret}`);
        },
      ),
      { numRuns: 500 },
    );
  });
});
