/**
 * A conflict read from a bare status or word (`bareConflict`) names nothing the model could change:
 * a write answered with it stops at its first call with a text a person can read
 * (`person_required`, the decision's asymmetry of harm), through the real SDK client over stdio
 * and Streamable HTTP and the MCP adapter; a read answered the same is still sent back to the
 * model, and so is a write whose conflict names what conflicts. The texts are written for this
 * test.
 */
import { afterAll, describe, expect, it } from "vitest";
import { endpointPair, TRANSPORTS, tempDir } from "./mcp-support.ts";

const BARE = "Request failed with status code 409";
const BARE_2 = "HTTP 412 Precondition Failed";
const NAMED = "409 Conflict: a note titled 'weekly' already exists";

const thrice = (text: string) => [1, 2, 3].map(() => ({ kind: "error" as const, text }));

describe.each(TRANSPORTS)("a bare conflict over %s", (kind) => {
  const tmp = tempDir();
  const pair = endpointPair(kind, {
    effectsFile: tmp.file(`effects-${kind}.jsonl`),
    scenario: {
      create_note: [...thrice(BARE)],
      append_log: [...thrice(NAMED)],
      search_notes: [...thrice(BARE)],
      set_status: [...thrice(BARE_2)],
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

  it.each([
    ["search_notes", { query: "q" }],
    ["set_status", { id: "welcome", status: "published" }],
  ] as const)("%s, a read or an idempotent write, goes back to the model", async (name, args) => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, { name, arguments: { ...args } });
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "conflict",
    });
    expect(run.ended).toBe(false);
  });

  it("append_log, a write whose conflict names what conflicts, goes back to the model", async () => {
    pair.g.reset();
    const run = pair.g.governor.startRun();
    const outcome = await pair.g.governed.callTool(run, {
      name: "append_log",
      arguments: { line: "hello" },
    });
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "conflict",
    });
    expect(run.ended).toBe(false);
  });
});
