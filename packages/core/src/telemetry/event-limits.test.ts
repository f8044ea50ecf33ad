import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GovernorError } from "../errors.ts";
import {
  boundEvent,
  boundName,
  eventLine,
  MAX_EVENT_NAME,
  MIN_EVENT_LINE,
} from "./event-limits.ts";
import { createJsonlSink, parseEvents } from "./event-log.ts";
import { eventSchema } from "./event-schema.ts";
import type { DecisionEvent, GovernorEvent, RunEndEvent } from "./events.ts";

const SECRET = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

function decision(fields: Partial<DecisionEvent> = {}): DecisionEvent {
  return {
    v: 1,
    type: "decision",
    at: 1_700_000_000_000,
    runId: "run-1",
    tool: "search",
    attempt: 1,
    action: "correct_arguments",
    reason: "invalid_argument",
    certainty: "failed",
    fingerprint: "0123456789abcdef",
    idempotencyKey: `gk_${"0".repeat(32)}`,
    observed: false,
    ...fields,
  };
}

function runEnd(fingerprints: Record<string, number>, text: string, tool = "pay"): RunEndEvent {
  return {
    v: 1,
    type: "run_end",
    at: 1_700_000_001_000,
    runId: "run-1",
    summary: {
      runId: "run-1",
      reason: "repeated_failure",
      personResolvable: false,
      calls: 3,
      attempts: 3,
      actions: { correct_arguments: 2, retry_dependency: 0, switch_tool: 0, stop: 1, host: 0 },
      retries: 0,
      failures: 3,
      fingerprints,
      durationMs: 1_000,
      lastFailure: { tool, reason: "business_rule", text },
      observeOnly: false,
    },
  };
}

/** 5,000 fingerprints; the one at index i has count i + 1. */
function manyFingerprints(): Record<string, number> {
  const out: Record<string, number> = {};
  for (let i = 0; i < 5_000; i += 1) out[i.toString(16).padStart(16, "0")] = i + 1;
  return out;
}

describe("boundName", () => {
  it("keeps ordinary tool names as they are", () => {
    for (const name of ["get_note", "notes.search", "github__create_issue", "fs/read_file"]) {
      expect(boundName(name)).toBe(name);
    }
  });

  it("issue 9.6: caps a long name and redacts a secret in it; distinct names stay distinct", () => {
    const a = boundName(`${SECRET}_${"a".repeat(100_000)}`);
    const b = boundName(`${SECRET}_${"a".repeat(99_999)}`);
    expect(a.length).toBeLessThanOrEqual(MAX_EVENT_NAME);
    expect(a).not.toContain(SECRET);
    expect(a).toMatch(/#[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
    const short = boundName(`read_${SECRET}`);
    expect(short).not.toContain(SECRET);
    expect(short).toMatch(/#[0-9a-f]{8}$/);
  });

  it("boundEvent returns the event itself when nothing changes, and cuts a long run id", () => {
    const event = decision();
    expect(boundEvent(event)).toBe(event);
    const long = boundEvent(decision({ runId: "r".repeat(1_000), server: `s-${SECRET}` }));
    expect(long.runId.length).toBeLessThanOrEqual(MAX_EVENT_NAME);
    expect(JSON.stringify(long)).not.toContain(SECRET);
  });
});

describe("eventLine", () => {
  it("issue 9.6: an event line has a size limit; fields are cut, the JSON is never broken", () => {
    const event = runEnd(manyFingerprints(), `card declined ${"x".repeat(50_000)}`);
    const whole = JSON.stringify(event);
    expect(whole.length).toBeGreaterThan(100_000);
    const line = eventLine(event, 16_384) as string;
    expect(line.length).toBeLessThanOrEqual(16_384);
    const parsed = eventSchema.parse(JSON.parse(line)) as RunEndEvent;
    expect(parsed.truncated).toBe(true);
    // The most frequent fingerprints are the ones kept.
    const kept = Object.values(parsed.summary.fingerprints);
    expect(kept.length).toBeGreaterThan(0);
    expect(Math.min(...kept)).toBeGreaterThan(5_000 - kept.length - 1);
    expect(parsed.summary.lastFailure?.text.startsWith("card declined")).toBe(true);
    expect(parsed.summary.lastFailure?.text.endsWith("…")).toBe(true);
    // A line that fits is the plain JSON, no flag.
    expect(eventLine(decision(), 16_384)).toBe(JSON.stringify(decision()));
  });

  it("fits any event into the smallest limit, schema-valid", () => {
    const text = fc.string({ maxLength: 20_000, unit: "grapheme" });
    fc.assert(
      fc.property(
        text,
        text,
        text,
        fc.dictionary(fc.stringMatching(/^[0-9a-f]{16}$/), fc.integer({ min: 0, max: 1_000 }), {
          maxKeys: 600,
        }),
        (tool, runId, lastText, fingerprints) => {
          const events: GovernorEvent[] = [
            decision({ tool, runId, server: tool }),
            { ...runEnd(fingerprints, lastText, tool), runId },
          ];
          for (const event of events) {
            const line = eventLine(event, MIN_EVENT_LINE);
            expect(line).toBeDefined();
            expect((line as string).length).toBeLessThanOrEqual(MIN_EVENT_LINE);
            expect(eventSchema.safeParse(JSON.parse(line as string)).success).toBe(true);
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe("createJsonlSink's line limit", () => {
  it("writes every line within maxLineLength, and governor report reads them", async () => {
    const lines: string[] = [];
    const sink = createJsonlSink(
      { write: (line: string) => lines.push(line) },
      {
        maxLineLength: 8_192,
      },
    );
    sink.write(runEnd(manyFingerprints(), "y".repeat(30_000)));
    sink.write(decision({ tool: "z".repeat(20_000) }));
    await sink.close();
    expect(sink.lastError).toBeUndefined();
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.endsWith("\n")).toBe(true);
      expect(line.length - 1).toBeLessThanOrEqual(8_192);
    }
    const { events, errors } = parseEvents(lines.join(""));
    expect(errors).toEqual([]);
    expect(events.map((e) => e.truncated)).toEqual([true, true]);
  });

  it("refuses a limit below 4096, saying what is accepted", () => {
    const make = (maxLineLength: number) => () =>
      createJsonlSink({ write: () => {} }, { maxLineLength });
    for (const bad of [100, 4_095, 5_000.5, Number.NaN]) {
      expect(make(bad)).toThrow(/maxLineLength must be a whole number >= 4096, got /);
      try {
        make(bad)();
      } catch (error) {
        expect(GovernorError.isInstance(error) && error.code).toBe("invalid_options");
      }
    }
    expect(make(4_096)).not.toThrow();
  });
});
