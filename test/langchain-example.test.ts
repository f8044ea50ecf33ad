/**
 * The example of docs/langchain.md and packages/langchain/README.md, run with langchain's
 * `createAgent` and a scripted chat model. The code between the markers is the documented code,
 * character for character (checked below).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { call, ScriptedChatModel, say } from "./support/scripted-chat-model.ts";

/** The notes service the example's tools call. */
const notes = {
  archived: [] as { id: string; idempotencyKey: string | undefined }[],
  lose: false,
  async read(id: string) {
    if (id !== "n-7") throw new Error(`Note "${id}" not found`);
    return "Release notes for 0.2.0";
  },
  async archive(id: string, options: { idempotencyKey: string | undefined }) {
    notes.archived.push({ id, idempotencyKey: options.idempotencyKey });
    if (notes.lose) throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    return `Archived ${id}`;
  },
};

// example: begin
import { createGovernor } from "@governor/core";
import { GovernorStopError, governTools } from "@governor/langchain";
import { governorMiddleware } from "@governor/langchain/agent";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { tool } from "@langchain/core/tools";
import { createAgent } from "langchain";
import { z } from "zod";

const governor = createGovernor({
  tools: {
    get_note: { effect: "read_only" },
    archive_note: { effect: "mutating", idempotency: { argument: "idempotency_key" } },
  },
});

const getNote = tool(async ({ id }) => notes.read(id), {
  name: "get_note",
  description: "Reads a note by id",
  schema: z.object({ id: z.string() }),
});
const archiveNote = tool(
  // Governor puts the call's idempotency key in `idempotency_key`: the same on every attempt.
  async ({ id, idempotency_key }) => notes.archive(id, { idempotencyKey: idempotency_key }),
  {
    name: "archive_note",
    description: "Archives a note by id",
    schema: z.object({ id: z.string(), idempotency_key: z.string().optional() }),
  },
);

async function archive(model: BaseChatModel, request: string) {
  const run = governor.startRun();
  const agent = createAgent({
    model,
    tools: governTools([getNote, archiveNote], { run }),
    middleware: [governorMiddleware(run)],
  });
  try {
    const { messages } = await agent.invoke({ messages: [{ role: "user", content: request }] });
    return { answer: messages.at(-1)?.text, summary: run.end() };
  } catch (error) {
    if (!(error instanceof GovernorStopError)) throw error;
    // Why Governor ended the run; for a write that may have happened, the key to check.
    return { stopped: error.reason, key: error.idempotencyKey, summary: error.summary };
  }
}
// example: end

const here = readFileSync(new URL(import.meta.url), "utf8");
const example = here.slice(
  here.indexOf("// example: begin\n") + "// example: begin\n".length,
  here.indexOf("// example: end"),
);

/** The first ```ts continued block after `heading` in a markdown file (after the `notes` one). */
function block(file: string, heading: string): string {
  const text = readFileSync(new URL(file, import.meta.url), "utf8");
  const from = text.indexOf(heading);
  expect(from, `${heading} in ${file}`).toBeGreaterThanOrEqual(0);
  const open = text.indexOf("```ts continued\n", from) + "```ts continued\n".length;
  return text.slice(open, text.indexOf("```\n", open));
}

describe("the documented example", () => {
  it("is the code of docs/langchain.md and of the package README", () => {
    expect(block("../docs/langchain.md", "## Example")).toBe(example);
    expect(block("../packages/langchain/README.md", "# @governor/langchain")).toBe(example);
  });

  it("corrects a wrong id and archives the note", async () => {
    notes.archived.length = 0;
    notes.lose = false;
    const model = new ScriptedChatModel([
      call("get_note", { id: "7" }, "c1"),
      call("get_note", { id: "n-7" }, "c2"),
      call("archive_note", { id: "n-7" }, "c3"),
      say("Archived the release notes."),
    ]);
    const result = await archive(model, "Archive the release notes (note 7)");
    expect(result).toMatchObject({
      answer: "Archived the release notes.",
      summary: { reason: "completed", calls: 3, failures: 1 },
    });
    expect(String(model.toolMessages()[0]?.content)).toMatch(/^get_note: Note "7" not found/);
    expect(notes.archived).toEqual([{ id: "n-7", idempotencyKey: expect.stringMatching(/^gk_/) }]);
  });

  it("stops on a write whose answer was lost, with the key the tool received", async () => {
    notes.archived.length = 0;
    notes.lose = true;
    const model = new ScriptedChatModel([call("archive_note", { id: "n-7" }, "c1"), say("done")]);
    const result = await archive(model, "Archive note n-7");
    expect(result).toMatchObject({ stopped: "uncertain_mutation" });
    expect(notes.archived).toHaveLength(1);
    expect((result as { key?: string }).key).toBe(notes.archived[0]?.idempotencyKey);
    expect(model.turns).toHaveLength(1);
  });
});
