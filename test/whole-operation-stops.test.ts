/**
 * A correction a built-in rule reads from a text that refuses the operation as a whole, naming no
 * field and quoting no value (`wholeOperation`): a write answered with it stops at its first call
 * with a text a person can read (`person_required`, the decision's asymmetry of harm), through the
 * real SDK client over stdio and Streamable HTTP and the MCP adapter; a read answered the same is
 * still sent back to the model, and so is a write whose text names the field to fix. The texts
 * are written for this test.
 */
import { afterAll, describe, expect, it } from "vitest";
import { endpointPair, TRANSPORTS, tempDir } from "./mcp-support.ts";

const WHOLE = "Request failed with status code 400: a review hook prevented the operation.";
const NAMED = "Request failed with status code 400: reviewer_id is required for this operation.";

const thrice = (text: string) => [1, 2, 3].map(() => ({ kind: "error" as const, text }));

describe.each(TRANSPORTS)("a correction that refuses the whole operation over %s", (kind) => {
  const tmp = tempDir();
  const pair = endpointPair(kind, {
    effectsFile: tmp.file(`effects-${kind}.jsonl`),
    scenario: {
      create_note: [...thrice(WHOLE)],
      append_log: [...thrice(NAMED)],
      search_notes: [...thrice(WHOLE)],
    },
  });
  afterAll(() => tmp.cleanup());

  it("create_note, a write, stops at its first call", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "create_note",
      arguments: { title: "t", body: "b" },
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "person_required" });
    expect(run.summary()).toMatchObject({ attempts: 1, reason: "person_required" });
    expect(outcome.kind === "stop" && outcome.personResolvable).toBe(true);
  });

  it("search_notes, a read, goes back to the model", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "search_notes",
      arguments: { query: "q" },
    });
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "invalid_argument",
    });
    expect(run.ended).toBe(false);
  });

  it("append_log, a write whose text names the field, goes back to the model", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "hello" },
    });
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "invalid_argument",
    });
    expect(run.ended).toBe(false);
  });
});
