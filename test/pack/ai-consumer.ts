/**
 * A consumer of the installed `@governor/ai-sdk` with whichever `ai` major the project installed
 * (the pack test runs it with ai 6 on every Node, and with ai 7 on Node 22 and later). The real
 * `generateText` drives a scripted model: a tool that fails twice with 503 is retried inside the
 * call, and a failure whose raw text holds a secret reaches the model redacted.
 */
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { governorStopCondition, governTools } from "@governor/ai-sdk";
import { createGovernor } from "@governor/core";
import { generateText, stepCountIs, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

type Generate = Exclude<ConstructorParameters<typeof MockLanguageModelV3>[0], undefined>;
type GenerateResult = Extract<NonNullable<Generate["doGenerate"]>, { content: unknown }>;

const SECRET = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";
const usage: GenerateResult["usage"] = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
const callTool = (toolName: string, input: unknown): GenerateResult => ({
  content: [{ type: "tool-call", toolCallId: "call_1", toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: "tool_calls" },
  usage,
  warnings: [],
});
const say = (text: string): GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: "stop" },
  usage,
  warnings: [],
});

const governor = createGovernor(
  { tools: { get_note: { effect: "read_only", retry: { baseDelayMs: 1, maxDelayMs: 5 } } } },
  { metrics: false },
);

// A 503 twice, then the note: the model sees only the success.
let calls = 0;
const getNote = tool({
  description: "Reads a note",
  inputSchema: z.object({ id: z.string() }),
  execute: async ({ id }) => {
    calls += 1;
    if (calls <= 2) throw new Error("503 Service Unavailable");
    return { id, body: "hello" };
  },
});
const run = governor.startRun();
const model = new MockLanguageModelV3({
  doGenerate: [callTool("get_note", { id: "welcome" }), say("It says hello.")],
});
const result = await generateText({
  model,
  tools: governTools({ get_note: getNote }, { run }),
  stopWhen: [stepCountIs(3), governorStopCondition(run)],
  prompt: "Read the welcome note",
});
assert.equal(calls, 3);
assert.equal(result.text, "It says hello.");
assert.equal(run.summary().retries, 2);

// A failure with a secret in its text: the next prompt holds Governor's text, not the secret.
const failing = tool({
  description: "Reads a note",
  inputSchema: z.object({ id: z.string() }),
  execute: async (): Promise<{ id: string; body: string }> => {
    throw new Error(`Note "x" not found (query signed with ${SECRET})`);
  },
});
const run2 = governor.startRun();
const model2 = new MockLanguageModelV3({
  doGenerate: [callTool("get_note", { id: "x" }), say("done")],
});
await generateText({
  model: model2,
  tools: governTools({ get_note: failing }, { run: run2 }),
  stopWhen: [stepCountIs(3), governorStopCondition(run2)],
  prompt: "Read note x",
});
const prompt = JSON.stringify(model2.doGenerateCalls[1]?.prompt);
assert.ok(prompt.includes("get_note: "), "the model read Governor's text");
assert.ok(!prompt.includes(SECRET), "the secret stays out of the model's context");

const { version } = createRequire(import.meta.url)("ai/package.json") as { version: string };
console.log(`node ${process.version}: ai ${version}: retried and redacted`);
