import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  addToCounts,
  countsAt,
  decayed,
  LEARNING_DEFAULTS,
  learnedDemotion,
  learnedKey,
  learnedPrefix,
  type OutcomeField,
  parseLearnedKey,
} from "./learned.ts";

const H = 1_000;
const settings = { enabled: true, minEvidence: 4, maxPayoffRate: 0.1 };

function counts(partial: Partial<Record<OutcomeField, number>>): Record<OutcomeField, number> {
  return countsAt({ counts: partial, updatedAt: 0 }, 0, H);
}

describe("decay", () => {
  it("halves a count every half-life and never grows it when the clock is behind", () => {
    expect(decayed(8, 0, 1_000, H)).toBe(4);
    expect(decayed(8, 0, 3_000, H)).toBe(1);
    expect(decayed(8, 5_000, 4_000, H)).toBe(8);
  });

  it("decays every field to now before an addition, keeping a later time of the record", () => {
    const first = addToCounts(undefined, "retry_futile", 1, 1_000, H);
    expect(first).toEqual({ counts: { retry_futile: 1 }, updatedAt: 1_000 });
    const second = addToCounts(first, "retry_paid", 2, 2_000, H);
    expect(second).toEqual({ counts: { retry_futile: 0.5, retry_paid: 2 }, updatedAt: 2_000 });
    expect(addToCounts(second, "retry_paid", 1, 1_500, H)).toEqual({
      counts: { retry_futile: 0.5, retry_paid: 3 },
      updatedAt: 2_000,
    });
    expect(countsAt(second, 3_000, H)).toMatchObject({ retry_futile: 0.25, retry_paid: 1 });
    expect(countsAt(undefined, 3_000, H).retry_paid).toBe(0);
  });

  it("property: the total never exceeds the number of additions, and adding in order equals decaying the sum", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 10_000 }), { minLength: 1, maxLength: 30 }),
        (gaps) => {
          let record: ReturnType<typeof addToCounts> | undefined;
          let t = 0;
          const times: number[] = [];
          for (const gap of gaps) {
            t += gap;
            times.push(t);
            record = addToCounts(record, "correct_futile", 1, t, H);
          }
          const total = record?.counts.correct_futile ?? 0;
          const expected = times.reduce((sum, at) => sum + 2 ** (-(t - at) / H), 0);
          expect(total).toBeLessThanOrEqual(gaps.length + 1e-9);
          expect(total).toBeCloseTo(expected, 9);
        },
      ),
    );
  });
});

describe("learnedDemotion", () => {
  const base = { settings, hasAlternatives: false, switchUnsafe: false };

  it("demotes a retry that never recovers to stop, or to switch when alternatives exist", () => {
    const futile = counts({ retry_futile: 5 });
    expect(learnedDemotion({ ...base, action: "retry_dependency", counts: futile })).toEqual({
      from: "retry_dependency",
      to: "stop",
      paid: 0,
      futile: 5,
    });
    expect(
      learnedDemotion({
        ...base,
        action: "retry_dependency",
        counts: futile,
        hasAlternatives: true,
      }),
    ).toMatchObject({ to: "switch_tool" });
  });

  it("stops instead of switching when switching is unsafe or switches never paid off either", () => {
    const input = { ...base, action: "retry_dependency" as const, hasAlternatives: true };
    expect(
      learnedDemotion({ ...input, counts: counts({ retry_futile: 5 }), switchUnsafe: true }),
    ).toMatchObject({ to: "stop" });
    expect(
      learnedDemotion({ ...input, counts: counts({ retry_futile: 5, switch_futile: 4 }) }),
    ).toMatchObject({ to: "stop" });
  });

  it("demotes a correction or a switch that never pays off to stop", () => {
    expect(
      learnedDemotion({
        ...base,
        action: "correct_arguments",
        counts: counts({ correct_futile: 4 }),
      }),
    ).toEqual({ from: "correct_arguments", to: "stop", paid: 0, futile: 4 });
    expect(
      learnedDemotion({ ...base, action: "switch_tool", counts: counts({ switch_futile: 6 }) }),
    ).toMatchObject({ from: "switch_tool", to: "stop" });
  });

  it("keeps a decision below the evidence minimum, or one that pays off sometimes", () => {
    const retry = { ...base, action: "retry_dependency" as const };
    expect(learnedDemotion({ ...retry, counts: counts({ retry_futile: 3.9 }) })).toBeUndefined();
    // Four outcomes recorded moments ago weigh a hair less than 4: they count.
    expect(learnedDemotion({ ...retry, counts: counts({ retry_futile: 3.99 }) })).toMatchObject({
      to: "stop",
    });
    expect(
      learnedDemotion({ ...retry, counts: counts({ retry_futile: 8, retry_paid: 1 }) }),
    ).toBeUndefined();
    expect(
      learnedDemotion({ ...retry, counts: counts({ retry_futile: 9, retry_paid: 1 }) }),
    ).toMatchObject({ to: "stop" });
    // Other decisions' evidence does not count.
    expect(learnedDemotion({ ...retry, counts: counts({ correct_futile: 50 }) })).toBeUndefined();
  });

  it("does nothing when learning is off, and never touches stop or host", () => {
    const all = counts({ retry_futile: 9, correct_futile: 9, switch_futile: 9 });
    const off = { ...base, settings: { ...settings, enabled: false } };
    for (const action of ["retry_dependency", "correct_arguments", "switch_tool"] as const) {
      expect(learnedDemotion({ ...off, action, counts: all })).toBeUndefined();
    }
    for (const action of ["stop", "host"] as const) {
      expect(learnedDemotion({ ...base, action, counts: all })).toBeUndefined();
    }
  });

  it("property: a demotion only ever moves toward stopping, never to a retry", () => {
    const field = fc.double({ min: 0, max: 50, noNaN: true });
    fc.assert(
      fc.property(
        fc.constantFrom(
          "retry_dependency",
          "correct_arguments",
          "switch_tool",
          "stop",
          "host",
        ) as fc.Arbitrary<
          "retry_dependency" | "correct_arguments" | "switch_tool" | "stop" | "host"
        >,
        fc.record({
          retry_paid: field,
          retry_futile: field,
          correct_paid: field,
          correct_futile: field,
          switch_paid: field,
          switch_futile: field,
        }),
        fc.boolean(),
        fc.boolean(),
        (action, c, hasAlternatives, switchUnsafe) => {
          const out = learnedDemotion({
            action,
            counts: c,
            settings: LEARNING_DEFAULTS,
            hasAlternatives,
            switchUnsafe,
          });
          if (out === undefined) return;
          expect(out.from).toBe(action);
          expect(["switch_tool", "stop"]).toContain(out.to);
          if (out.to === "switch_tool") {
            expect(action).toBe("retry_dependency");
            expect(hasAlternatives && !switchUnsafe).toBe(true);
          }
        },
      ),
    );
  });
});

describe("learned keys", () => {
  it("round-trips server, tool and fingerprint, with any characters in them", () => {
    for (const [server, tool] of [
      ["github", "search/code"],
      [undefined, "a b%c"],
      ["a/b", "x"],
    ] as const) {
      const key = learnedKey(server, tool, "0123456789abcdef");
      expect(parseLearnedKey(key)).toEqual({ server, tool, fingerprint: "0123456789abcdef" });
      expect(key.startsWith(learnedPrefix(server))).toBe(true);
      expect(key.startsWith(learnedPrefix(server, tool))).toBe(true);
    }
    // A server's prefix does not select a server whose name starts the same.
    expect(learnedKey("gitlab", "t", "f").startsWith(learnedPrefix("git"))).toBe(false);
    expect(parseLearnedKey("no-slashes")).toBeUndefined();
    expect(parseLearnedKey("a/%E0%A4%A/x")).toBeUndefined();
  });

  it("bounds a tool or server name a model invents, as events do: capped, redacted, distinct", () => {
    const long = `x${"a".repeat(100_000)}`;
    const key = learnedKey("srv", long, "0123456789abcdef");
    expect(key.length).toBeLessThan(400);
    expect(key.startsWith(learnedPrefix("srv", long))).toBe(true);
    expect(learnedKey("srv", `${long}b`, "0123456789abcdef")).not.toBe(key);
    const secret = "sk-proj-0123456789abcdefghijklmnop";
    const keyed = learnedKey(secret, secret, "0123456789abcdef");
    expect(keyed).not.toContain("0123456789abcdefghijklmnop");
    expect(keyed.startsWith(learnedPrefix(secret, secret))).toBe(true);
    // A name that fits and carries nothing to redact is kept as it is.
    expect(parseLearnedKey(learnedKey("github", "search_code", "f"))).toMatchObject({
      server: "github",
      tool: "search_code",
    });
  });
});
