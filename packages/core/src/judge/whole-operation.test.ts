import { describe, expect, it } from "vitest";
import type { Effect } from "../types.ts";
import { classify } from "./classify.ts";
import { stopsGuessedWrite } from "./decide.ts";
import { explainClassification } from "./explain.ts";
import { firstDecision, read, textFailure, tool } from "./judge-text.support.ts";
import { refusesWholeOperation } from "./whole-operation.ts";

// A correction read from a text that refuses the operation as a whole, naming no field and
// quoting no value, stops a write (docs/decisions.md, the asymmetry of harm). Every text here is
// written for the test.

/** What the run does on the first failure of a call to a tool of `effect`. */
const run = (text: string, effect: Effect) => firstDecision(text, effect);

const WHOLE = [
  "status 400: a review hook prevented the operation",
  "A sign-off is required for this operation.",
  "Invalid request: the current state of the invoice does not allow this action.",
  '{"error":{"message":"A review hook prevented the operation.","code":400}}',
  "Error: Request failed with status code 400\nThis publish operation needs a second reviewer.",
];

const NAMED = [
  // A field named in the clause, by a mixed-case or a snake_case identifier.
  "customerRef is required for this operation",
  "due_date must be a date for this action",
  // The input spoken of.
  "Missing required parameter for this operation: name",
  "Invalid value for this action",
  // A value quoted.
  "The value 'next week' is invalid for this action",
  // An API operation named by its name: an envelope, not a refusal of the call.
  "An error occurred (ValidationException) when calling the UpdateItem operation: One or more parameter values were invalid",
  // No operation or action at all.
  "The title field is required",
  "Invalid request body",
];

describe("refusesWholeOperation", () => {
  it.each(WHOLE)("%s: refuses the operation as a whole", (text) => {
    expect(refusesWholeOperation(text)).toBe(true);
  });

  it.each(NAMED)("%s: names something of the call, or no operation", (text) => {
    expect(refusesWholeOperation(text)).toBe(false);
  });

  it("reads one clause at a time: a field named in another clause does not count", () => {
    expect(refusesWholeOperation("order_id: 42. A review hook prevented the operation.")).toBe(
      true,
    );
    expect(refusesWholeOperation("A review hook prevented the order_id operation.")).toBe(false);
  });

  it("reads a hostile run of quote marks in linear time", () => {
    // Failed before: the end's quotes were trimmed by a pattern anchored at the end, tried again
    // from every mark of the run (about 0.1 s a text of 4000 marks; ten such reads took over a second).
    const time = (text: string) => {
      const start = performance.now();
      for (let i = 0; i < 10; i++) refusesWholeOperation(text);
      return performance.now() - start;
    };
    const plain = `the operation ${"a ".repeat(1990)}x`;
    for (const mark of ["'", '"', "`"]) {
      const hostile = `the operation ${mark.repeat(3980)}x`;
      time(plain);
      time(hostile);
      expect(time(hostile)).toBeLessThan(20 * time(plain) + 50);
    }
  });

  it("reads as far as the rules read", () => {
    expect(
      refusesWholeOperation(`${"x ".repeat(2100)}A review hook prevented the operation.`),
    ).toBe(false);
  });
});

describe("a correction of a write that refuses the operation as a whole", () => {
  it.each(WHOLE)("%s: corrected on a read, stopped on a write", (text) => {
    const c = read(text);
    expect(c).toMatchObject({ action: "correct_arguments", source: "rule", wholeOperation: true });
    expect(stopsGuessedWrite(c, "mutating")).toBe(true);
    expect(stopsGuessedWrite(c, "read_only")).toBe(false);
    expect(run(text, "read_only").action).toBe("correct_arguments");
    expect(run(text, "idempotent").action).toBe("correct_arguments");
    expect(run(text, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
      personResolvable: true,
    });
  });

  it.each(NAMED)("%s: still goes back to the model on a write", (text) => {
    const c = read(text);
    expect(c.action).toBe("correct_arguments");
    expect(c.wholeOperation).toBeUndefined();
    expect(run(text, "mutating").action).toBe("correct_arguments");
  });

  it("is dropped when the call's arguments back the correction", () => {
    const text = "A reviewer is required for this operation.";
    expect(read(text).wholeOperation).toBe(true);
    const backed = classify(textFailure(text), tool, {
      args: { reviewer: "" },
      inputSchema: { type: "object", properties: { reviewer: { type: "string" } } },
    });
    expect(backed.evidence?.argument).toEqual({ name: "reviewer", by: "property" });
    expect(backed.action).toBe("correct_arguments");
    expect(backed.wholeOperation).toBeUndefined();
    expect(stopsGuessedWrite(backed, "mutating")).toBe(false);
  });

  it("is never set on a stop or a retry", () => {
    expect(read("You are not allowed to perform this operation.").wholeOperation).toBeUndefined();
    expect(read("The operation timed out, please retry").wholeOperation).toBeUndefined();
  });

  it("--explain says so", () => {
    const text = WHOLE[0] as string;
    const failure = textFailure(text);
    expect(explainClassification(failure, tool, read(text)).detail).toContain(
      "refuses the operation as a whole",
    );
    const named = NAMED[0] as string;
    expect(explainClassification(textFailure(named), tool, read(named)).detail).not.toContain(
      "refuses the operation as a whole",
    );
  });
});
