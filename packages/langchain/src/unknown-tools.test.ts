import { createGovernor } from "@governor/core";
import { describe, expect, it } from "vitest";
import { throwIfStopped } from "./stop.ts";
import { countUnknownCall, unknownCalls } from "./unknown-tools.ts";

describe("unknownCalls", () => {
  it("keeps the calls to names none of the model's tools has; a tool without a name names none", () => {
    const tools = [{ name: "get_note" }, { type: "web_search_preview" }, null, "get_notes"];
    const calls = [
      { name: "get_note", args: {}, id: "a" },
      { name: "get_notes", args: {}, id: "b" },
    ];
    expect(unknownCalls(tools, calls)).toEqual([calls[1]]);
    expect(unknownCalls(tools, undefined)).toEqual([]);
    expect(unknownCalls([], [])).toEqual([]);
  });
});

describe("countUnknownCall", () => {
  it("is a failed call of the run (unknown_tool); the third identical one stops it, recorded for the next turn", async () => {
    const run = createGovernor({}, { metrics: false }).startRun();
    for (const id of ["1", "2", "3"]) {
      await countUnknownCall(run, { name: "get_notes", args: { id }, id: `c${id}` });
    }
    expect(run.summary()).toMatchObject({
      reason: "repeated_failure",
      calls: 3,
      actions: { switch_tool: 2, stop: 1 },
    });
    expect(() => throwIfStopped(run)).toThrow(
      expect.objectContaining({ reason: "repeated_failure", tool: "get_notes" }),
    );
    // An ended run counts nothing more.
    await countUnknownCall(run, { name: "get_notes", args: "not an object" });
    expect(run.summary().calls).toBe(3);
  });
});
