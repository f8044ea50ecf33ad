import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import type { Effect } from "../types.ts";
import { assessFailure } from "./assess.ts";
import { classify, MODEL_DISPUTE_STOP_OVER, modelDisputesCorrection } from "./classify.ts";
import { stopsGuessedWrite } from "./decide.ts";
import { explainClassification } from "./explain.ts";
import { firstDecision, read, textFailure, tool } from "./judge-text.support.ts";
import { MODEL_CLASSES } from "./text-model.ts";

// A correction on a write that names nothing the model could change stops with a text a person
// can read (docs/decisions.md, the asymmetry of harm). Every text here is written for the test.

/** What the run does on the first failure of a call to a tool of `effect`. */
const run = (text: string, effect: Effect) => firstDecision(text, effect);

describe("a conflict read from a bare status or word is no correction of a write", () => {
  it.each([
    "Request failed with status code 409",
    "API error (409): Conflict",
    "HTTP 412 Precondition Failed",
    "status 409: a run of this pipeline is already underway",
    '{"error": {"code": "conflict", "status": 409}}',
  ])("%s: corrected on a read, stopped on a write", (text) => {
    const c = read(text);
    expect(c).toMatchObject({
      action: "correct_arguments",
      reason: "conflict",
      source: "rule",
      bareConflict: true,
    });
    expect(stopsGuessedWrite(c, "mutating")).toBe(true);
    expect(run(text, "read_only").action).toBe("correct_arguments");
    expect(run(text, "idempotent").action).toBe("correct_arguments");
    expect(run(text, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
      cause: "conflict",
      personResolvable: true,
    });
  });

  it.each([
    ["409 Conflict: a project named 'billing' already exists", "conflict"],
    ["status 409: duplicate value for the email field", "conflict"],
    ["412 Precondition Failed: the page was modified since you read it", "conflict"],
    ["Cannot merge because the branch has conflicts", "conflict"],
    ["Conflict: the slug spring-sale conflicts with an existing page", "conflict"],
    ["409 Conflict: value of 'version' must be the latest revision number", "invalid_argument"],
  ])("%s: what conflicts is named, the write goes back to the model", (text, reason) => {
    const c = read(text);
    expect(c).toMatchObject({ action: "correct_arguments", reason });
    expect(c.bareConflict).toBeUndefined();
    expect(stopsGuessedWrite(c, "mutating")).toBe(false);
    expect(run(text, "mutating").action).toBe("correct_arguments");
  });

  it.each(["Request failed with status code 400", "422 Unprocessable Entity", "Invalid request"])(
    "%s: a bare refusal of the call's input still goes back to the model on a write",
    (text) => {
      const c = read(text);
      expect(c).toMatchObject({ action: "correct_arguments", reason: "invalid_argument" });
      expect(c.bareConflict).toBeUndefined();
      expect(run(text, "mutating").action).toBe("correct_arguments");
    },
  );

  it("a bare conflict that echoes the call's own id keeps its mark: the id names the target, not a fix", () => {
    const text = "POST /v1/invoices/inv_20931/pay: Request failed with status code 409";
    const c = classify(textFailure(text), tool, {
      args: { invoice_id: "inv_20931" },
      inputSchema: { type: "object", properties: { invoice_id: { type: "string" } } },
    });
    expect(c.evidence?.argument).toEqual({ name: "invoice_id", by: "value" });
    expect(c).toMatchObject({
      action: "correct_arguments",
      reason: "conflict",
      bareConflict: true,
    });
    expect(stopsGuessedWrite(c, "mutating")).toBe(true);
  });

  it("--explain says a bare conflict stops a write, as it says of the other marks", () => {
    const detail = (text: string) =>
      explainClassification(textFailure(text), tool, read(text)).detail;
    expect(detail("Request failed with status code 409")).toContain(
      "a conflict read from a bare status or word names nothing to change: a mutating tool stops",
    );
    expect(detail("409 Conflict: a project named 'billing' already exists")).not.toContain(
      "bare status",
    );
  });

  it("a 409 beside a named transient or person-only condition reads as that condition", () => {
    expect(read("409: the account is suspended").action).toBe("stop");
    expect(read("status 409 - service temporarily unavailable").action).toBe("retry_dependency");
  });

  it("a policy rule's correction stays a correction on a write", () => {
    const policy = loadPolicy({
      tools: { t: { rules: [{ code: 409, action: "correct_arguments" }] } },
    });
    const c = classify(
      { ...textFailure("Request failed with status code 409"), httpStatus: 409 },
      resolveToolPolicy(policy, "t"),
    );
    expect(c.source).toBe("policy");
    expect(stopsGuessedWrite(c, "mutating")).toBe(false);
  });
});

describe("a rule's correction the learned model reads as a stop is no correction of a write", () => {
  // Texts where a built-in rule reads a correction from one phrasing ("invalid …") and the learned
  // model, reading the whole text, finds a stop at least MODEL_DISPUTE_STOP_OVER times likelier.
  it.each([
    "Invalid TenantAccessToken for this workspace",
    "Invalid signing secret. Make sure you are using the secret of the right workspace",
  ])("%s: corrected on a read, stopped on a write", (text) => {
    const c = read(text);
    expect(c).toMatchObject({
      action: "correct_arguments",
      reason: "invalid_argument",
      source: "rule",
      disputedByModel: true,
    });
    expect(stopsGuessedWrite(c, "mutating")).toBe(true);
    expect(stopsGuessedWrite(c, "idempotent")).toBe(false);
    expect(run(text, "read_only").action).toBe("correct_arguments");
    expect(run(text, "idempotent").action).toBe("correct_arguments");
    expect(run(text, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
      cause: "invalid_argument",
      personResolvable: true,
    });
  });

  it.each([
    // The model reads a stop, but under three times a correction: a near call stays the rule's.
    "Invalid ServiceAccountToken",
    "Invalid license key",
    // The model agrees with the rule.
    "The bucket name must be lowercase",
    "Error: the field 'name' is required",
  ])("%s: the model does not dispute the correction, the write goes back to the model", (text) => {
    const c = read(text);
    expect(c).toMatchObject({ action: "correct_arguments", source: "rule" });
    expect(c.disputedByModel).toBeUndefined();
    expect(run(text, "mutating").action).toBe("correct_arguments");
  });

  it("is read only where the tool may write: not for a tool the policy declares read_only or idempotent", () => {
    // A second model read per rule correction is spent only where a decision can read its mark.
    const disputed = "Invalid TenantAccessToken for this workspace";
    const whole = "status 400: a review hook prevented the operation";
    const declared = (effect: Effect) =>
      resolveToolPolicy(loadPolicy({ tools: { t: { effect } } }), "t");
    for (const text of [disputed, whole]) {
      const f = textFailure(text);
      const undeclared = classify(f, tool);
      const marks = (c: ReturnType<typeof classify>) => [c.disputedByModel, c.wholeOperation];
      expect(marks(undeclared).filter(Boolean)).toHaveLength(1);
      expect(marks(classify(f, declared("mutating")))).toEqual(marks(undeclared));
      for (const effect of ["read_only", "idempotent"] as const) {
        const c = classify(f, declared(effect));
        expect(marks(c)).toEqual([undefined, undefined]);
        // The same classification otherwise, and the same decision.
        const { disputedByModel: _, wholeOperation: __, ...rest } = undeclared;
        expect(c).toEqual(rest);
        expect(firstDecision(text, effect).action).toBe("correct_arguments");
      }
      // assessFailure judges with the effect it is given, whatever the policy declares.
      const policy = loadPolicy({ tools: { t: { effect: "read_only" } } });
      const asWrite = assessFailure(f, { policy, tool: declared("read_only"), effect: "mutating" });
      expect(marks(asWrite.classification)).toEqual(marks(undeclared));
      expect(asWrite.decision).toMatchObject({ action: "stop", reason: "person_required" });
      const asRead = assessFailure(f, { policy, tool, effect: "read_only" });
      expect(marks(asRead.classification)).toEqual([undefined, undefined]);
      expect(asRead.decision.action).toBe("correct_arguments");
    }
  });

  it("modelDisputesCorrection needs a reading of stop at least three times a correction", () => {
    const reading = (stop: number, correct: number) => ({
      action: "stop" as const,
      probability: stop,
      probabilities: MODEL_CLASSES.map((k) =>
        k === "stop" ? stop : k === "correct_arguments" ? correct : (1 - stop - correct) / 2,
      ),
      features: [],
    });
    expect(MODEL_DISPUTE_STOP_OVER).toBe(3);
    expect(modelDisputesCorrection(reading(0.61, 0.2))).toBe(true);
    expect(modelDisputesCorrection(reading(0.59, 0.2))).toBe(false);
    expect(modelDisputesCorrection({ ...reading(0.6, 0.1), action: "retry_dependency" })).toBe(
      false,
    );
    expect(modelDisputesCorrection(undefined)).toBe(false);
  });

  it("--explain says the model disputed the rule's correction", () => {
    const f = textFailure("Invalid TenantAccessToken for this workspace");
    const explained = explainClassification(f, tool, classify(f, tool));
    expect(explained.decidedBy).toBe("rule");
    expect(explained.detail).toMatch(/built-in rule #\d+ \(invalid_argument\)/);
    expect(explained.detail).toMatch(/reads the whole text as a stop[^;]*: a mutating tool stops$/);
    const agreed = textFailure("The bucket name must be lowercase");
    expect(explainClassification(agreed, tool, classify(agreed, tool)).detail).not.toMatch(
      /reads the whole text as a stop/,
    );
  });

  it("a text that names an argument of the call keeps the correction on a write", () => {
    const text =
      "Invalid signing secret. Make sure you are using the secret of the right workspace";
    const c = classify(textFailure(text), tool, {
      args: { secret: "whsec_0000" },
      inputSchema: { type: "object", properties: { secret: { type: "string" } } },
    });
    expect(c.evidence?.argument).toEqual({ name: "secret", by: "property" });
    expect(c.disputedByModel).toBeUndefined();
    expect(stopsGuessedWrite(c, "mutating")).toBe(false);
  });

  it("a policy rule's correction is not disputed on a write", () => {
    const policy = loadPolicy({
      tools: { t: { rules: [{ match: "signing secret", action: "correct_arguments" }] } },
    });
    const c = classify(
      textFailure(
        "Invalid signing secret. Make sure you are using the secret of the right workspace",
      ),
      resolveToolPolicy(policy, "t"),
    );
    expect(c.source).toBe("policy");
    expect(stopsGuessedWrite(c, "mutating")).toBe(false);
  });
});

describe("a rule's correction that names nothing of a call whose schema the run knows is no correction of a write", () => {
  const schema = {
    type: "object",
    properties: { title: { type: "string" }, amount: { type: "number" } },
  };
  const text = "Validation failed: the value must be one of the allowed options";
  const call = { args: { title: "Quarterly report", amount: 12 }, inputSchema: schema };

  it("is marked, with the evidence a replayed log needs, and stops a write only", () => {
    const c = classify(textFailure(text), tool, call);
    expect(c).toMatchObject({
      action: "correct_arguments",
      source: "rule",
      unbackedByCall: true,
      evidence: { targets: "none", schema: true },
    });
    expect(stopsGuessedWrite(c, "mutating")).toBe(true);
    expect(stopsGuessedWrite(c, "read_only")).toBe(false);
    expect(stopsGuessedWrite(c, "idempotent")).toBe(false);
    expect(explainClassification(textFailure(text), tool, c).detail).toMatch(
      /names no argument of the call and no property of the tool's schema: a mutating tool stops$/,
    );
  });

  it("a replayed log (the evidence alone, no arguments) reads the same", () => {
    const c = classify(textFailure(text), tool, { evidence: { targets: "none", schema: true } });
    expect(c.unbackedByCall).toBe(true);
    expect(
      classify(textFailure(text), tool, { evidence: { targets: "none" } }).unbackedByCall,
    ).toBe(undefined);
  });

  it("is not marked when the text names a property or echoes a value, or the schema is unknown", () => {
    for (const [backing, by] of [
      ["Validation failed: title must be one of the allowed options", "property"],
      ["Title parameter must be one of the allowed options", "property"],
      ["Validation failed: 'Quarterly report' is not one of the allowed options", "value"],
    ] as const) {
      const c = classify(textFailure(backing), tool, call);
      expect(c.evidence?.argument, backing).toEqual({ name: "title", by });
      expect(c.unbackedByCall, backing).toBeUndefined();
    }
    // A call that breaks its schema (a required property it did not send) backs the correction,
    // whatever the text names.
    const missing = classify(textFailure(text), tool, {
      args: { amount: 12 },
      inputSchema: { ...schema, required: ["title"] },
    });
    expect(missing.evidence?.argument).toEqual({ name: "title", by: "schema" });
    expect(missing.unbackedByCall).toBeUndefined();
    expect(stopsGuessedWrite(missing, "mutating")).toBe(false);
    // A call the schema cannot plainly be read against (null where `nullable` allows it, digits
    // for a number) breaks nothing: the write still stops.
    for (const args of [
      { title: "Quarterly report", memo: null },
      { title: "Quarterly report", amount: "12" },
    ]) {
      const loose = classify(textFailure(text), tool, {
        args,
        inputSchema: {
          ...schema,
          properties: { ...schema.properties, memo: { type: "string", nullable: true } },
        },
      });
      expect(loose.unbackedByCall, JSON.stringify(args)).toBe(true);
      expect(stopsGuessedWrite(loose, "mutating")).toBe(true);
    }
    // A plain loop that passes the arguments without the tool's schema: nothing is known to be
    // missing from the call, so the correction stands.
    const noSchema = classify(textFailure(text), tool, { args: call.args });
    expect(noSchema.unbackedByCall).toBeUndefined();
    expect(stopsGuessedWrite(noSchema, "mutating")).toBe(false);
    expect(classify(textFailure(text), tool).unbackedByCall).toBeUndefined();
  });

  it("is read from a rule's correction only, not from a stop or a retry", () => {
    for (const other of ["401 Unauthorized: the token was revoked", "503 Service Unavailable"]) {
      const c = classify(textFailure(other), tool, call);
      expect(c.action).not.toBe("correct_arguments");
      expect(c.unbackedByCall).toBeUndefined();
    }
  });
});

describe("a learned model's correction the call backs is a correction of a write", () => {
  const schema = {
    type: "object",
    properties: { title: { type: "string" }, body: { type: "string" } },
    required: ["title"],
  };
  const call = { args: { title: "Weekly", body: "…" }, inputSchema: schema };

  it("a text naming a property and what is wrong with it backs the model's guess", () => {
    for (const text of [
      "The provided title is not valid, please use plain text",
      "the title should be shorter than 80 characters",
    ]) {
      // Without the call, the model's correction is a guess a write does not take.
      expect(stopsGuessedWrite(read(text), "mutating"), text).toBe(true);
      const c = classify(textFailure(text), tool, call);
      expect(c, text).toMatchObject({
        action: "correct_arguments",
        reason: "invalid_argument",
        source: "evidence",
        evidence: { argument: { name: "title", by: "property" } },
      });
      expect(stopsGuessedWrite(c, "mutating"), text).toBe(false);
      expect(explainClassification(textFailure(text), tool, c, call).detail).toContain(
        'the text names the argument "title" (by its property) and says what is wrong with it',
      );
    }
  });

  it("a property named with no word of what is wrong, or a value only echoed, stays a guess", () => {
    for (const [text, args] of [
      ["Oops, we could not save the title", call.args],
      ["Couldn't store 'Weekly notes': it should be retried later", { title: "Weekly notes" }],
    ] as const) {
      const c = classify(textFailure(text), tool, { args, inputSchema: schema });
      expect(c.source, text).not.toBe("evidence");
      expect(stopsGuessedWrite(c, "mutating"), text).toBe(true);
    }
  });
});
