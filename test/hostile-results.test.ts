/**
 * A local tool may return any object as its `isError` result, including one whose getters throw
 * (a class instance, a proxy over a remote object). Through the real loops of the AI SDK
 * (`generateText`) and the OpenAI Agents SDK (`Runner`), such a result is
 * judged like any failure without text: the model reads Governor's text, never what the getter
 * threw, and the write's key is settled, not left pending. (A LangChain tool's answer is a
 * `ToolMessage` the adapter reads, not a result object the tool hands over.)
 */

import { governTools as aiGovernTools } from "@governor/ai-sdk";
import { createGovernor, type HostError } from "@governor/core";
import { governedTool, governorStopOf } from "@governor/openai-agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { SDKS as AI_SDKS, callTool, say } from "../packages/ai-sdk/src/test-support/sdks.ts";
import { runTask, SDK_UNSUPPORTED, SKIP_REASON } from "./openai-agents-support.ts";

const SECRET = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";

/** An `isError` result whose one text block throws, quoting a secret, when its text is read. */
function hostileResult(): object {
  return {
    isError: true,
    content: [
      {
        type: "text",
        get text(): string {
          throw new Error(`token ${SECRET} at /srv/app/notes.js:12:3`);
        },
      },
    ],
  };
}

/** A read-only tool and a write; both answer the hostile result. */
const POLICY = {
  tools: { get_note: { effect: "read_only" as const }, save_note: { effect: "mutating" as const } },
};

function governed() {
  const hostErrors: HostError[] = [];
  const governor = createGovernor(POLICY, {
    metrics: false,
    onHostError: (error) => {
      hostErrors.push(error);
      return undefined;
    },
  });
  return { run: governor.startRun(), hostErrors };
}

/** What each loop showed the model for the read, then for the write sent twice. */
interface Seen {
  readonly texts: readonly string[];
  readonly everything: string;
  readonly executions: number;
}

function expectJudged(seen: Seen, hostErrors: readonly HostError[]): void {
  expect(seen.everything).not.toContain(SECRET);
  expect(seen.everything).not.toContain("/srv/app");
  const [read, write, again] = seen.texts;
  // Judged as a failure without text: the model may change the call; no "could not be completed".
  expect(read).toMatch(/^get_note: the call failed\./);
  expect(write).toMatch(/^save_note: the call failed\./);
  // The write's key was settled: the identical write sent again is refused as one that may have
  // written, not told to wait for a call that had ended.
  expect(again).not.toMatch(/still in progress/);
  expect(again).toMatch(/^save_note: /);
  expect(seen.executions).toBe(2);
  expect(hostErrors).toEqual([]);
}

describe.each(AI_SDKS)("$name: generateText", (entry) => {
  it("a result whose text getter throws reaches the model as Governor's text", async () => {
    const sdk = await entry.load();
    const { run, hostErrors } = governed();
    let executions = 0;
    const answer = async () => {
      executions += 1;
      return hostileResult() as unknown as string;
    };
    const model = sdk.scripted([
      callTool("get_note", { id: "a" }, "c1"),
      callTool("save_note", { body: "b" }, "c2"),
      callTool("save_note", { body: "b" }, "c3"),
      say("done"),
    ]);
    const result = await sdk.generateText({
      model: model.model,
      tools: aiGovernTools(
        {
          get_note: sdk.tool({ inputSchema: z.object({ id: z.string() }), execute: answer }),
          save_note: sdk.tool({ inputSchema: z.object({ body: z.string() }), execute: answer }),
        },
        { run },
      ),
      stopWhen: sdk.stepCountIs(6),
      prompt: "Read a, save b",
    });
    const texts = result.steps.flatMap((s) => s.toolResults.map((r) => String(r.output)));
    expectJudged({ texts, everything: JSON.stringify(model.prompts()), executions }, hostErrors);
  });
});

describe.skipIf(SDK_UNSUPPORTED)(`OpenAI Agents SDK: Runner (${SKIP_REASON})`, () => {
  it("a result whose text getter throws reaches the model as Governor's text", async () => {
    const { run, hostErrors } = governed();
    let executions = 0;
    const answer = async () => {
      executions += 1;
      return hostileResult() as unknown as string;
    };
    const tools = [
      governedTool(
        {
          name: "get_note",
          description: "Reads",
          parameters: z.object({ id: z.string() }),
          execute: answer,
        },
        { run },
      ),
      governedTool(
        {
          name: "save_note",
          description: "Saves",
          parameters: z.object({ body: z.string() }),
          execute: answer,
        },
        { run },
      ),
    ];
    const plan = [
      { name: "get_note", args: { id: "a" } },
      { name: "save_note", args: { body: "b" } },
      { name: "save_note", args: { body: "b" } },
    ];
    const task = await runTask({ tools }, (v) => {
      const next = plan[v.turn - 1];
      return next === undefined ? { say: "done" } : { calls: [next] };
    });
    // A write that failed with nothing to read stops the run at once (for a mutating tool a
    // guess is a stop a person reads, not a correction): the SDK throws the stop out of run()
    // with its text, and the write is not sent a second time.
    const read = task.model.views.at(-1)?.results.map((r) => r.text) ?? [];
    const stop = governorStopOf(task.error);
    expect(stop?.reason).toBe("person_required");
    expect(read).toHaveLength(1);
    expect(read[0]).toMatch(/^get_note: the call failed\. Change the arguments/);
    expect(stop?.modelText).toMatch(/^save_note: the call failed\. A person must look at this/);
    expect(JSON.stringify(task.model.views)).not.toContain(SECRET);
    expect(JSON.stringify(task.model.views)).not.toContain("/srv/app");
    expect(stop?.modelText).not.toContain(SECRET);
    expect(executions).toBe(2);
    expect(hostErrors).toEqual([]);
  });
});

describe("run.call (core)", () => {
  // A result whose isError getter throws is judged as a failure without text (failure.ts reads
  // it so), its key settled: run.call resolves with an outcome, never the getter's throw.
  it("a result whose isError getter throws resolves with an outcome and settles its key", async () => {
    const governor = createGovernor(POLICY, { metrics: false });
    const hostile = {
      content: [],
      get isError(): boolean {
        throw new Error(`token ${SECRET}`);
      },
    };
    const call = { tool: "save_note", args: { body: "b" }, callId: "c1" };
    const first = governor.startRun({ idempotencyScope: "job-1" });
    const outcome = await first.call(call, async () => hostile);
    expect(outcome.kind).not.toBe("ok");
    first.end();
    const again = await governor
      .startRun({ idempotencyScope: "job-1" })
      .call(call, async () => ({ content: [] }));
    expect(again.kind === "ok" ? "" : again.result.content[0].text).not.toMatch(
      /still in progress/,
    );
  });
});
