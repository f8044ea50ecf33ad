import { describe, expect, it } from "vitest";
import type { Reason } from "../types.ts";
import type { Decision } from "./decide.ts";
import { composeMessage, type MessageInput } from "./message.ts";

// What the model reads decides what it does next. These tests pin the words that carry the
// meaning (who can fix it, whether to call again, whether a write may have happened), not whole
// sentences, so rewording keeps them green while a lost or swapped text fails them.

const stop = (reason: Reason, extra: Partial<Extract<Decision, { action: "stop" }>> = {}) =>
  ({
    action: "stop",
    reason,
    certainty: "failed",
    cause: reason,
    personResolvable: false,
    ...extra,
  }) as const satisfies Decision;

const msg = (decision: Decision, extra: Partial<MessageInput> = {}) =>
  composeMessage({ tool: "get_note", observation: "No note with id <x>", decision, ...extra });

describe("composeMessage: the head", () => {
  it("names the tool and the observation as one sentence", () => {
    const text = msg({
      action: "correct_arguments",
      reason: "invalid_argument",
      certainty: "failed",
    });
    expect(text.startsWith("get_note: No note with id <x>. ")).toBe(true);
  });

  it("ends the observation with exactly one period, whatever it ended with", () => {
    const d = {
      action: "correct_arguments",
      reason: "invalid_argument",
      certainty: "failed",
    } as const;
    for (const observation of ["Bad id...", "Bad id. . ", "Bad id \n", "  Bad id"]) {
      expect(composeMessage({ tool: "t", observation, decision: d })).toMatch(/^t: Bad id\. \S/);
    }
    // Only trailing dots and spaces go: the ones inside stay.
    expect(composeMessage({ tool: "t", observation: "v1.2 is bad", decision: d })).toMatch(
      /^t: v1\.2 is bad\. /,
    );
  });

  it("says the call failed when the observation is empty", () => {
    const d = {
      action: "correct_arguments",
      reason: "invalid_argument",
      certainty: "failed",
    } as const;
    for (const observation of ["", "   ", " . "]) {
      expect(composeMessage({ tool: "t", observation, decision: d })).toMatch(
        /^t: the call failed\. /,
      );
    }
  });

  it("adds a policy hint as its own sentence, and nothing without one", () => {
    const d = {
      action: "correct_arguments",
      reason: "invalid_argument",
      certainty: "failed",
    } as const;
    expect(msg(d, { hint: "Dates are YYYY-MM-DD" })).toContain(
      "No note with id <x>. Dates are YYYY-MM-DD. ",
    );
    expect(msg(d, { hint: "" })).not.toContain("the call failed");
    expect(msg(d)).not.toContain("the call failed");
    expect(msg(stop("forbidden"), { hint: "Ask the admin" })).toContain("Ask the admin.");
    expect(
      msg(
        { action: "switch_tool", reason: "not_supported", certainty: "failed", alternatives: [] },
        {
          hint: "Ask the admin",
        },
      ),
    ).toContain("Ask the admin.");
  });
});

describe("composeMessage: correct_arguments", () => {
  const correct = (reason: Reason) =>
    msg({ action: "correct_arguments", reason, certainty: "failed" });

  it("tells the model to fix the arguments and call again", () => {
    const text = correct("invalid_argument");
    expect(text).toMatch(/change the arguments/i);
    expect(text).toMatch(/call again/i);
  });

  it("says to use an identifier that exists for not_found", () => {
    const text = correct("not_found");
    expect(text).toMatch(/identifier that exists/i);
    expect(text).toMatch(/look it up/i);
  });

  it("says to read the current state first for a conflict", () => {
    const text = correct("conflict");
    expect(text).toMatch(/current state/i);
    expect(text).toMatch(/adjust the arguments/i);
  });
});

describe("composeMessage: switch_tool", () => {
  const sw = (reason: Reason, alternatives: string[] = ["list_notes"]) =>
    msg({ action: "switch_tool", reason, certainty: "failed", alternatives });

  it("names every alternative", () => {
    expect(sw("not_supported", ["a", "b"])).toContain("Use a or b instead.");
    expect(sw("not_supported", ["a"])).toContain("Use a instead.");
  });

  it("asks for another tool when there is no alternative", () => {
    const text = sw("not_supported", []);
    expect(text).toMatch(/another tool/i);
    expect(text).not.toMatch(/Use\s+instead/);
  });

  it("says why the tool cannot serve", () => {
    expect(sw("unknown_tool")).toMatch(/does not exist/i);
    expect(sw("circuit_open")).toMatch(/temporarily unavailable/i);
    expect(sw("denied_by_policy")).toMatch(/may not be used/i);
    expect(sw("not_supported")).toMatch(/cannot serve this request/i);
    expect(sw("retries_exhausted")).toMatch(/cannot serve this request/i);
  });
});

describe("composeMessage: stop", () => {
  it("always says the run stops", () => {
    for (const reason of [
      "forbidden",
      "not_found",
      "uncertain_mutation",
      "budget_exhausted",
    ] as const) {
      expect(msg(stop(reason))).toMatch(/The run stops here\.$/);
    }
  });

  it("says an uncertain write may have happened, must not be repeated, and needs a person", () => {
    const text = msg(stop("uncertain_mutation", { cause: "timeout", certainty: "unknown" }));
    expect(text).toMatch(/may have happened/i);
    expect(text).toMatch(/do not repeat/i);
    expect(text).toMatch(/person must check/i);
  });

  it.each<[Reason, RegExp[]]>([
    ["unauthorized", [/authentication failed/i, /renew the credentials/i]],
    ["forbidden", [/grant access/i, /do not retry/i]],
    ["quota_exceeded", [/quota/i, /raise it/i, /reset/i]],
    ["business_rule", [/refuses/i, /do not repeat/i]],
    ["misconfigured", [/misconfigured/i, /person must fix/i]],
    ["loop_detected", [/same call/i, /without progress/i]],
    ["deadline_exceeded", [/no time is left/i, /deadline/i]],
    ["aborted", [/cancelled/i]],
    ["not_approved", [/did not approve/i]],
    ["protocol_error", [/host has been told/i, /nothing in this conversation/i]],
    ["session_expired", [/session/i, /host has been told/i]],
    ["malformed_response", [/malformed/i, /host has been told/i]],
    ["transport_error", [/could not be reached/i, /host has been told/i]],
    ["elicitation_required", [/input from the user/i, /host has been told/i]],
  ])("a stop for %s says what it means", (reason, words) => {
    const text = msg(stop(reason));
    for (const w of words) expect(text).toMatch(w);
  });

  it("explains a rule of the run by the failure's own cause when the rule has no text", () => {
    // A stop whose reason has no text of its own reads its cause's.
    expect(msg(stop("not_found", { cause: "forbidden" }))).toMatch(/grant access/i);
    expect(msg(stop("not_found"))).toMatch(/nobody in this run can fix it/i);
    // The reason's own text comes before the cause's.
    const text = msg(stop("deadline_exceeded", { cause: "forbidden" }));
    expect(text).toMatch(/deadline/i);
    expect(text).not.toMatch(/grant access/i);
  });

  it("names the budget that ran out", () => {
    expect(msg(stop("budget_exhausted", { budget: "switches" }))).toMatch(
      /run's switches budget is spent/i,
    );
    expect(msg(stop("budget_exhausted"))).toMatch(/run's call budget is spent/i);
  });

  it("counts repeated failures", () => {
    expect(msg(stop("repeated_failure"), { repeats: 3, maxRepeats: 3 })).toMatch(
      /same failure happened 3 times/i,
    );
    expect(msg(stop("repeated_failure"), { maxRepeats: 4 })).toMatch(/happened 4 times/i);
    expect(msg(stop("repeated_failure"))).toMatch(/happened several times/i);
  });

  it("says how many attempts a failing service had", () => {
    expect(msg(stop("retries_exhausted"), { attempts: 1 })).toMatch(/cannot be retried now/i);
    const three = msg(stop("retries_exhausted"), { attempts: 3 });
    expect(three).toMatch(/still fails after 3 attempts/i);
    expect(three).not.toMatch(/cannot be retried now/i);
    expect(msg(stop("retries_exhausted"))).toMatch(/after several attempts/i);
  });
});

describe("composeMessage: retry and host", () => {
  it("says a retried call is being retried", () => {
    const text = msg({
      action: "retry_dependency",
      reason: "unavailable",
      certainty: "failed",
      delayMs: 5,
    });
    expect(text.startsWith("get_note: No note with id <x>. ")).toBe(true);
    expect(text).toMatch(/temporarily failing/i);
    expect(text).toMatch(/being retried/i);
  });

  it("gives the model nothing of a host failure but the tool's name", () => {
    const text = msg(
      { action: "host", reason: "protocol_error", certainty: "unknown" },
      {
        hint: "secret hint",
      },
    );
    expect(text).toMatch(/^get_note: /);
    expect(text).toMatch(/failed/i);
    expect(text).not.toContain("No note");
    expect(text).not.toContain("secret hint");
  });
});

describe("composeMessage: the repeat note", () => {
  const correct = {
    action: "correct_arguments",
    reason: "not_found",
    certainty: "failed",
  } as const;
  const note = (repeats?: number, maxRepeats?: number) =>
    msg(correct, {
      ...(repeats !== undefined && { repeats }),
      ...(maxRepeats !== undefined && { maxRepeats }),
    });

  it("says nothing on a first failure, nor without both counts", () => {
    // The advice sentence ends the text: nothing follows it.
    const advice = /look it up first if unsure\.$/;
    expect(note(1, 5)).toMatch(advice);
    expect(note(2)).toMatch(advice);
    expect(note(undefined, 5)).toMatch(advice);
    expect(note()).toMatch(advice);
  });

  it("counts from the second failure on", () => {
    expect(note(2, 5)).toMatch(/\(failure 2 of 5\)$/);
    expect(note(3, 5)).toMatch(/\(failure 3 of 5\)$/);
  });

  it("warns when the same failure once more ends the run", () => {
    expect(note(4, 5)).toMatch(/\(failure 4 of 5: the same failure again ends the run\)$/);
    expect(note(2, 3)).toMatch(/failure 2 of 3: the same failure again ends the run/);
    expect(note(1, 2)).toMatch(/failure 1 of 2: the same failure again ends the run/);
    expect(note(3, 3)).toMatch(/ends the run/);
  });

  it("appears on switches too", () => {
    expect(
      msg(
        { action: "switch_tool", reason: "not_supported", certainty: "failed", alternatives: [] },
        {
          repeats: 2,
          maxRepeats: 3,
        },
      ),
    ).toMatch(/ends the run\)$/);
  });
});
