/**
 * Tool calls the AI SDK rejects before `execute` (input failing the tool's schema, an unknown
 * tool name), counted by Governor through `governorRepairToolCall`, in the real loop of ai 6 and
 * ai 7 (`generateText` and `streamText`) with a scripted model.
 */
import { createGovernor, type PolicyInput } from "@governor/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { governTools } from "./govern-tools.ts";
import { governorRepairToolCall } from "./repair.ts";
import { governorStopCondition } from "./stop-condition.ts";
import {
  callTool,
  LOOP_MODES,
  runLoop,
  SDKS,
  type Sdk,
  type Step,
  say,
  toolOutputs,
  useSdk,
} from "./test-support/sdks.ts";

const POLICY: PolicyInput = { tools: { get_note: { effect: "read_only" } } };

describe.each(SDKS)("$name", (entry) => {
  const sdkFor = useSdk(entry).use;

  function noteTools(sdk: Sdk) {
    const executed: unknown[] = [];
    const tools = {
      get_note: sdk.tool({
        description: "Reads a note by id",
        inputSchema: z.object({ id: z.string() }),
        execute: async ({ id }) => {
          executed.push(id);
          return { id, body: "hello" };
        },
      }),
    };
    return { tools, executed };
  }

  describe.each(LOOP_MODES)("%s", (mode) => {
    async function governed(sdk: Sdk, steps: Step[], policy: PolicyInput = POLICY) {
      const { tools, executed } = noteTools(sdk);
      const run = createGovernor(policy, { metrics: false }).startRun();
      const model = sdk.scripted(steps);
      const result = await runLoop(sdk, mode, {
        model: model.model,
        tools: governTools(tools, { run }),
        experimental_repairToolCall: governorRepairToolCall(run),
        stopWhen: [sdk.stepCountIs(8), governorStopCondition(run)],
        prompt: "Read the welcome note",
      });
      return { result, prompts: model.prompts(), run, executed };
    }

    it("the same schema problem three times stops the run by the repeat rule; execute never ran", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { prompts, run, executed } = await governed(sdk, [
        // Different values, one problem: "id" must be a string.
        callTool("get_note", { id: 1 }, "c1"),
        callTool("get_note", { id: 2 }, "c2"),
        callTool("get_note", { id: 3 }, "c3"),
        callTool("get_note", { id: "welcome" }, "c4"),
        say("done"),
      ]);
      expect(executed).toEqual([]);
      // Each rejected call counts as a call with one failed attempt (that never reached the tool).
      expect(run.summary()).toMatchObject({
        reason: "repeated_failure",
        calls: 3,
        failures: 3,
        attempts: 3,
        actions: { correct_arguments: 2, stop: 1 },
      });
      // The loop ended after the step that stopped the run: the model had two more turns, not five.
      expect(prompts).toHaveLength(3);
      const [first] = toolOutputs(prompts[1]);
      expect(first).toMatchObject({ type: "error-text" });
      expect((first as { value: string }).value).toContain("Invalid input for tool get_note");
    });

    it("different schema problems spend the corrections budget", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { prompts, run, executed } = await governed(
        sdk,
        [
          callTool("get_note", { id: 1 }, "c1"),
          callTool("get_note", {}, "c2"),
          callTool("get_note", { id: true }, "c3"),
          callTool("get_note", { id: "welcome" }, "c4"),
          say("done"),
        ],
        { ...POLICY, budgets: { corrections: 2 } },
      );
      expect(executed).toEqual([]);
      expect(run.summary()).toMatchObject({
        reason: "budget_exhausted",
        budget: "corrections",
        calls: 3,
      });
      expect(new Set(Object.keys(run.summary().fingerprints)).size).toBe(3);
      expect(prompts).toHaveLength(3);
    });

    it("a corrected input runs: one correction counted, then the tool's result", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { prompts, run, executed, result } = await governed(sdk, [
        callTool("get_note", { id: 7 }, "c1"),
        callTool("get_note", { id: "welcome" }, "c2"),
        say("It says hello."),
      ]);
      expect(executed).toEqual(["welcome"]);
      expect(toolOutputs(prompts[2])[1]).toEqual({
        type: "json",
        value: { id: "welcome", body: "hello" },
      });
      expect(result.text).toBe("It says hello.");
      expect(run.summary()).toMatchObject({
        calls: 2,
        failures: 1,
        actions: { correct_arguments: 1 },
      });
      expect(run.ended).toBe(false);
    });

    it("an unknown tool name is counted as a switch_tool failure (unknown_tool)", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { prompts, run } = await governed(sdk, [
        callTool("get_notes", { id: "welcome" }, "c1"),
        callTool("get_note", { id: "welcome" }, "c2"),
        say("ok"),
      ]);
      expect(run.summary()).toMatchObject({ calls: 2, actions: { switch_tool: 1 } });
      expect(run.summary().lastFailure).toMatchObject({
        tool: "get_notes",
        reason: "unknown_tool",
      });
      expect(JSON.stringify(toolOutputs(prompts[1]))).toContain("get_notes");
    });
  });

  it("what Governor records names the schema problem by path, never the value the model sent", async (ctx) => {
    const sdk = sdkFor(ctx);
    // A value redaction would not catch: only leaving values out keeps it out.
    const SECRET = "purple-elephant-42";
    const { tools } = noteTools(sdk);
    const run = createGovernor(POLICY, { metrics: false }).startRun();
    const notJson = callTool("get_note", {}, "c2");
    const model = sdk.scripted([
      { ...notJson, content: [{ ...(notJson.content[0] as object), input: '{"id": ' } as never] },
      callTool("get_note", { id: { token: SECRET } }, "c1"),
      say("ok"),
    ]);
    await sdk.generateText({
      model: model.model,
      tools: governTools(tools, { run }),
      experimental_repairToolCall: governorRepairToolCall(run),
      stopWhen: [sdk.stepCountIs(4), governorStopCondition(run)],
      prompt: "Read it",
    });
    const summary = run.summary();
    expect(summary).toMatchObject({ calls: 2, failures: 2 });
    expect(JSON.stringify(summary)).not.toContain(SECRET);
    expect(summary.lastFailure).toMatchObject({ tool: "get_note", reason: "invalid_argument" });
    expect(summary.lastFailure?.text).toMatch(/^Invalid arguments: id: /);
    expect(Object.keys(summary.fingerprints)).toHaveLength(2);
  });

  it("without the repair hook the run never sees rejected input: the loop runs to its step limit", async (ctx) => {
    const sdk = sdkFor(ctx);
    const { tools, executed } = noteTools(sdk);
    const run = createGovernor(POLICY, { metrics: false }).startRun();
    const steps = [1, 2, 3, 4, 5, 6].map((i) => callTool("get_note", { id: i }, `c${i}`));
    const model = sdk.scripted(steps);
    const result = await sdk.generateText({
      model: model.model,
      tools: governTools(tools, { run }),
      stopWhen: [sdk.stepCountIs(6), governorStopCondition(run)],
      prompt: "Read the welcome note",
    });
    expect(executed).toEqual([]);
    expect(result.steps).toHaveLength(6);
    expect(run.summary()).toMatchObject({ calls: 0, failures: 0 });
  });
});
