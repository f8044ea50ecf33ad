import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLoopDetector, resultHash } from "./repeats.ts";
import { resultSignature } from "./result-signature.ts";

/**
 * The loop detector (a hashed index over parallel arrays, tables reused across runs) against a
 * plain model: a list of calls in the order first seen, the oldest dropped when `max` are
 * followed, each with its last signature and how often in a row it came back.
 */
class Model {
  calls: { id: string; sig: string; count: number }[] = [];
  constructor(readonly max: number) {}
  #at(id: string) {
    return this.calls.find((c) => c.id === id);
  }
  note(id: string, sig: string) {
    const seen = this.#at(id);
    if (seen) {
      seen.count = seen.sig === sig ? seen.count + 1 : 1;
      seen.sig = sig;
      return;
    }
    if (this.calls.length === this.max) this.calls.shift();
    this.calls.push({ id, sig, count: 1 });
  }
  get(id: string) {
    const seen = this.#at(id);
    return seen && { sig: seen.sig, count: seen.count };
  }
}

const id = (key: string, tool: string, server: string) => JSON.stringify([server, tool, key]);

// Few keys, tools, servers and results, so calls repeat, collide in tools and get forgotten.
const op = fc.oneof(
  fc.record({
    kind: fc.constantFrom("success", "value", "failure"),
    key: fc.constantFrom("", "a", "b", "c", '{"i":1}', "é€😀", "a".repeat(300)),
    tool: fc.constantFrom("", "t", "u"),
    server: fc.constantFrom("", "s", "t"),
    result: fc.constantFrom(0, 1, "x", null, { a: 1 }, [1, 2]),
  }),
  fc.constant({ kind: "clear" as const }),
);

describe("the loop detector against a model", () => {
  it("answers what the model does for any sequence of notes, lookups and clears", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.array(op, { maxLength: 300 }), (max, ops) => {
        const loops = createLoopDetector(max);
        let model = new Model(max);
        for (const o of ops) {
          if (o.kind === "clear") {
            loops.clear();
            model = new Model(max);
            continue;
          }
          const { key, tool, server, result } = o;
          if (o.kind === "success") {
            loops.noteSuccess(key, result, tool, server);
            model.note(id(key, tool, server), `ok:${resultSignature(result)}`);
          } else if (o.kind === "value") {
            loops.note(key, { value: result }, tool, server);
            model.note(id(key, tool, server), `ok:${resultHash(result)}`);
          } else {
            loops.note(key, { failure: String(result) }, tool, server);
            model.note(id(key, tool, server), `f:${String(result)}`);
          }
          // Every call the model knows, and a few it may have forgotten.
          for (const k of ["a", key]) {
            for (const [t, s] of [
              [tool, server],
              ["t", "s"],
              ["u", ""],
            ] as const) {
              const want = model.get(id(k, t, s));
              expect(loops.get(k, t, s)).toEqual(want);
              expect(loops.count(k, t, s)).toBe(want?.count ?? 0);
            }
          }
        }
        const want = model.calls.map((c) => c.count);
        const got = model.calls.map((c) => {
          const [server, tool, key] = JSON.parse(c.id) as [string, string, string];
          return loops.count(key, tool, server);
        });
        expect(got).toEqual(want);
        loops.clear();
      }),
      { numRuns: 300 },
    );
  });

  it("follows 1,000 distinct calls of many tools through several runs' reused tables", () => {
    for (let run = 0; run < 6; run++) {
      const loops = createLoopDetector();
      const model = new Model(1_000);
      for (let i = 0; i < 2_500; i++) {
        const key = `{"i":${(i * 7919) % 1_300}}`;
        const tool = `tool${i % 13}`;
        const server = i % 3 === 0 ? "" : `s${i % 5}`;
        loops.noteSuccess(key, i % 4, tool, server);
        model.note(id(key, tool, server), `ok:${resultSignature(i % 4)}`);
      }
      for (const c of model.calls) {
        const [server, tool, key] = JSON.parse(c.id) as [string, string, string];
        expect(loops.get(key, tool, server)).toEqual({ sig: c.sig, count: c.count });
      }
      loops.clear();
      expect(loops.count('{"i":0}', "tool0", "")).toBe(0);
    }
  });
});
