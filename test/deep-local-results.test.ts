/**
 * A local function tool's success nested too deep to hand over, through the OpenAI Agents SDK's
 * own `Runner`: the SDK writes a value it cannot `JSON.stringify` as "[object with circular
 * references]" (past the engine's stack), and a deep one as its JSON text. Every surface hands the
 * model `undeliverableText` instead (deliverable.ts): the write was made, it is not made again.
 */
import { createGovernor } from "@governor/core";
import { MAX_RESULT_DEPTH } from "@governor/core/judge";
import { governedTool } from "@governor/openai-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runTask, SDK_UNSUPPORTED, SKIP_REASON } from "./openai-agents-support.ts";

/** An object nesting `levels` objects. */
function nested(levels: number): unknown {
  let value: unknown = { id: "r-1" };
  for (let i = 0; i < levels; i += 1) value = { child: value };
  return value;
}

describe.skipIf(SDK_UNSUPPORTED)(`OpenAI Agents SDK: a function tool (${SKIP_REASON})`, () => {
  it.each([150, 6_000])(
    "a write nesting %i levels: the model reads that it was made, and it is made once",
    async (levels) => {
      let calls = 0;
      const run = createGovernor(
        { tools: { create_record: { effect: "mutating" } } },
        { metrics: false },
      ).startRun();
      const tool = governedTool(
        {
          name: "create_record",
          description: "Creates a record",
          parameters: z.object({ title: z.string() }),
          execute: async () => {
            calls += 1;
            return nested(levels);
          },
        },
        { run },
      );
      const task = await runTask(
        { tools: [tool] },
        (v) =>
          v.turn === 1
            ? { calls: [{ name: "create_record", args: { title: "t" } }] }
            : { say: "done" },
        { maxTurns: 4 },
      );
      expect(task.error).toBeUndefined();
      const shown = task.model.views[1]?.results.map((r) => r.text) ?? [];
      expect(shown).toHaveLength(1);
      expect(shown[0]).not.toMatch(/\[object|circular/);
      expect(shown[0]).toMatch(
        new RegExp(
          `^create_record: this call was made and succeeded, but its result nests deeper than ${MAX_RESULT_DEPTH} levels`,
        ),
      );
      expect(calls).toBe(1);
    },
  );

  it("a result within MAX_RESULT_DEPTH reaches the model as the tool's JSON", async () => {
    const run = createGovernor(
      { tools: { get_record: { effect: "read_only" } } },
      { metrics: false },
    ).startRun();
    const tool = governedTool(
      {
        name: "get_record",
        description: "Reads a record",
        parameters: z.object({ id: z.string() }),
        execute: async () => nested(90),
      },
      { run },
    );
    const task = await runTask(
      { tools: [tool] },
      (v) =>
        v.turn === 1 ? { calls: [{ name: "get_record", args: { id: "r" } }] } : { say: "done" },
      { maxTurns: 4 },
    );
    expect(task.error).toBeUndefined();
    expect(JSON.parse(task.model.views[1]?.results[0]?.text ?? "")).toEqual(nested(90));
  });
});
