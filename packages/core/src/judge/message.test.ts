import { describe, expect, it } from "vitest";
import { PERSON_RESOLVABLE, REASONS, type Reason } from "../types.ts";
import type { Decision } from "./decide.ts";
import { composeMessage } from "./message.ts";

const stop = (reason: Reason, extra: Partial<Extract<Decision, { action: "stop" }>> = {}) =>
  ({
    action: "stop",
    reason,
    certainty: "unknown",
    cause: reason,
    personResolvable: false,
    ...extra,
  }) as const;

const say = (decision: Decision, extra: Partial<Parameters<typeof composeMessage>[0]> = {}) =>
  composeMessage({ tool: "create_order", observation: "it failed", decision, ...extra });

describe("composeMessage", () => {
  it("issue 29: a stop whose text says a person must act is one a person can resolve (the summary's personResolvable)", () => {
    const stops = (Object.keys(REASONS) as Reason[]).filter((r) => REASONS[r] === "stop");
    const asking = stops.filter((r) =>
      /\ba person must\b/i.test(say(stop(r, { certainty: "failed" }))),
    );
    expect(asking).toContain("misconfigured");
    expect(asking.filter((r) => !PERSON_RESOLVABLE.has(r))).toEqual([]);
  });

  it("issue 8.1: a partial success says the write happened and must not be repeated", () => {
    expect(say(stop("partial_success"))).toBe(
      "create_order: it failed. The write happened, but a later step failed. Do not repeat the call: it would write again. A person must finish or check the step that failed. The run stops here.",
    );
  });

  it("an uncertain mutation says the write may have happened, whoever answered", () => {
    expect(say(stop("uncertain_mutation", { cause: "unavailable" }))).toBe(
      "create_order: it failed. No answer confirmed the outcome, so the write may have happened. Do not repeat it; a person must check. The run stops here.",
    );
  });

  it("names the rule of the run that stopped it", () => {
    expect(say(stop("repeated_failure", { cause: "not_found" }), { repeats: 3 })).toContain(
      "The same failure happened 3 times.",
    );
    expect(say(stop("budget_exhausted", { budget: "switches" }))).toContain(
      "The run's switches budget is spent.",
    );
    expect(say(stop("retries_exhausted"), { attempts: 1 })).toContain(
      "The service is failing and cannot be retried now.",
    );
    expect(say(stop("retries_exhausted"), { attempts: 3 })).toContain(
      "The service still fails after 3 attempts.",
    );
    // A stop reason without its own text falls back to its cause's.
    expect(say(stop("deadline_exceeded"))).toContain("No time is left before the run's deadline.");
    expect(say(stop("loop_detected", { cause: "forbidden" }))).toContain(
      "The same call was repeated without progress.",
    );
  });

  it("tells the model which tools to use instead, and why", () => {
    const sw = (reason: Reason, alternatives: string[] = ["a", "b"]): Decision => ({
      action: "switch_tool",
      reason,
      certainty: "failed",
      alternatives,
    });
    expect(say(sw("unknown_tool"))).toBe(
      "create_order: it failed. This tool does not exist. Use a or b instead.",
    );
    expect(say(sw("circuit_open", []))).toContain(
      "This tool is temporarily unavailable. Choose another tool.",
    );
    expect(say(sw("denied_by_policy"))).toContain("This tool may not be used in this run.");
    expect(say(sw("unavailable"))).toContain("This tool cannot serve this request now.");
  });

  it("counts repeats only near the limit", () => {
    const fix: Decision = { action: "correct_arguments", reason: "not_found", certainty: "failed" };
    expect(say(fix, { repeats: 1, maxRepeats: 3 })).not.toContain("failure 1");
    expect(say(fix, { repeats: 2, maxRepeats: 3 })).toContain(
      "(failure 2 of 3: the same failure again ends the run)",
    );
    expect(say(fix, { repeats: 2, maxRepeats: 5 })).toContain("(failure 2 of 5)");
    expect(say(fix)).toContain("Use an identifier that exists; look it up first if unsure.");
  });

  it("gives the host's failures no detail", () => {
    expect(say({ action: "host", reason: "protocol_error", certainty: "failed" })).toBe(
      "create_order: the call failed.",
    );
  });
});
