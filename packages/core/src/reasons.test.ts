import { describe, expect, it } from "vitest";
import {
  ACTIONS,
  adviceOf,
  breakerCounts,
  PERSON_RESOLVABLE,
  REASON_INFO,
  REASONS,
  type Reason,
} from "./reasons.ts";

const reasons = Object.keys(REASON_INFO) as Reason[];

describe("the reason registry", () => {
  it("REASONS and PERSON_RESOLVABLE are read from the records", () => {
    for (const reason of reasons) {
      expect(REASONS[reason], reason).toBe(REASON_INFO[reason].action);
      expect(PERSON_RESOLVABLE.has(reason), reason).toBe(REASON_INFO[reason].personResolvable);
    }
    expect(Object.keys(REASONS)).toEqual(reasons);
  });

  it("every record is complete: an action, a doc line, a certainty, a breaker rule", () => {
    for (const reason of reasons) {
      const info = REASON_INFO[reason];
      expect(ACTIONS, reason).toContain(info.action);
      expect(info.doc.length, reason).toBeGreaterThan(0);
      expect(["not_sent", "failed", "unknown"], reason).toContain(info.certainty);
      expect(["always", "retried"], reason).toContain(info.breaker);
      // The docs say yes exactly where a person can resolve it (or say how, for a cause).
      if (info.personResolvable) expect(info.personDoc, reason).toBe("yes");
    }
  });

  it("only a reason the model can act on, or a stop or host reason, carries advice", () => {
    for (const reason of reasons) {
      const { action, advice, adviceFor } = REASON_INFO[reason];
      if (advice === undefined && adviceFor === undefined) continue;
      expect(action, reason).not.toBe("retry_dependency");
    }
  });

  it("a write's advice says not to repeat it, and only such stops speak of a write", () => {
    const aboutWrite = reasons.filter((r) => REASON_INFO[r].aboutWrite);
    expect(aboutWrite).toEqual(["partial_success", "uncertain_mutation"]);
    for (const reason of aboutWrite) {
      expect(adviceOf("stop", reason)).toMatch(/Do not repeat/);
      expect(PERSON_RESOLVABLE.has(reason)).toBe(true);
    }
  });
  it("learning counts no outcome after a call cut short or a failure that is not the tool's", () => {
    expect(reasons.filter((r) => REASON_INFO[r].noEvidence)).toEqual([
      "aborted",
      "protocol_error",
      "session_expired",
      "store_unavailable",
    ]);
  });
});

describe("breakerCounts", () => {
  it("counts a retried failure whatever its reason", () => {
    for (const reason of reasons) expect(breakerCounts("retry_dependency", reason)).toBe(true);
  });

  it("counts transport_error whatever its action, and nothing else that is not retried", () => {
    for (const action of ACTIONS.filter((a) => a !== "retry_dependency")) {
      expect(reasons.filter((r) => breakerCounts(action, r))).toEqual(["transport_error"]);
    }
  });
});

describe("adviceOf", () => {
  it("gives a reason's advice with its usual action only", () => {
    expect(adviceOf("correct_arguments", "not_found")).toBe(
      "Use an identifier that exists; look it up first if unsure.",
    );
    expect(adviceOf("stop", "not_found")).toBeUndefined();
    expect(adviceOf("switch_tool", "circuit_open")).toBe("This tool is temporarily unavailable.");
    expect(adviceOf("correct_arguments", "unauthorized")).toBeUndefined();
  });

  it("gives a host reason's advice in a stop, the only way the model hears of it", () => {
    expect(adviceOf("stop", "session_expired")).toBe(
      "The session with the tool ended; the host has been told.",
    );
    expect(adviceOf("host", "session_expired")).toBe(
      "The session with the tool ended; the host has been told.",
    );
  });

  it("words a stop's advice from its context for its own reason, never as a cause", () => {
    expect(adviceOf("stop", "repeated_failure", { repeats: 4, certainty: "failed" })).toBe(
      "The same failure happened 4 times.",
    );
    expect(adviceOf("stop", "repeated_failure")).toBeUndefined();
    expect(adviceOf("stop", "store_unavailable", { certainty: "unknown" })).toMatch(
      /the write may have happened/,
    );
    // Without context (as a cause) and when nothing was sent: the fixed advice.
    const fixed =
      "Governor's own storage is unavailable, so the call was not made; the host has been told.";
    expect(adviceOf("stop", "store_unavailable")).toBe(fixed);
    expect(adviceOf("stop", "store_unavailable", { certainty: "not_sent" })).toBe(fixed);
  });
});
