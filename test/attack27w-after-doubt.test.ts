// Attack 27 (writes): a tool that honours keys; its first attempt may have written (the
// connection closed after the request went out, a timeout after it was sent), and the retry with
// the same key is refused with a text the model could act on: `a note with this title already
// exists`, `Validation failed: …`, `Unknown tool`. Governor sent that to the model as a correction
// ("read its current state, then adjust the arguments") or a switch to another tool, without a
// word of the first attempt: the adjusted call is another write, made while the first may have
// happened (a second note under another title, the same charge by another tool). A write that may
// have happened is retried with its key or not at all: the call stops `uncertain_mutation`,
// naming its key, saying the write may have happened.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, localFailure } from "@governor/core";
import { stdioServerParams } from "@governor/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { startInProcessHost, textOf } from "./proxy-support.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-attack27w-doubt-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const failed = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });

describe("a keyed write whose first attempt may have written, refused on its retry", () => {
  it.each([
    "Error: a note with this title already exists",
    "Validation failed: title is too long",
    "Error: note not found",
    "Error: Unknown tool: create_note",
  ])("run.call: %s → stop uncertain_mutation naming the key, not a correction", async (text) => {
    const gov = createGovernor(
      {
        defaults: { retry: { baseDelayMs: 1, maxDelayMs: 2 } },
        tools: {
          create_note: {
            effect: "mutating",
            idempotency: { honorsKeys: true },
            alternatives: ["create_note_v2"],
          },
        },
      },
      { metrics: false },
    );
    let sent = 0;
    const outcome = await gov.startRun().call(
      {
        tool: "create_note",
        args: { title: "t" },
        toFailure: () => localFailure("connection_closed"),
      },
      async () => {
        sent += 1;
        if (sent === 1) throw new Error("connection closed after the request went out");
        return failed(text);
      },
    );
    expect(sent).toBe(2);
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toMatch(/^gk_/);
  });

  it("run.call: the same refusal on a first attempt (nothing in doubt) still goes to the model", async () => {
    const gov = createGovernor(
      { tools: { create_note: { effect: "mutating", idempotency: { honorsKeys: true } } } },
      { metrics: false },
    );
    const outcome = await gov
      .startRun()
      .call({ tool: "create_note", args: { title: "t" } }, async () =>
        failed("Validation failed: title is too long"),
      );
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
  });

  it("governor proxy (stdio, fault server): timed out after the commit, then 'already exists' on the retry", async () => {
    const policy = join(dir, "policy.json");
    writeFileSync(
      policy,
      JSON.stringify({
        defaults: { retry: { baseDelayMs: 1, maxDelayMs: 5 } },
        servers: {
          notes: {
            tools: { create_note: { effect: "mutating", idempotency: { honorsKeys: true } } },
          },
        },
      }),
    );
    const server = stdioServerParams({
      effectsFile: join(dir, "effects.jsonl"),
      scenario: {
        create_note: [
          { kind: "hang_after_commit", ms: 3_000 },
          { kind: "error", text: "Error: a note with this title already exists" },
        ],
      },
    });
    const host = await startInProcessHost(
      ["--policy", policy, "--server", "notes", "--timeout", "400ms"],
      { command: server.command, args: server.args ?? [] },
    );
    try {
      const result = await host.client.callTool({
        name: "create_note",
        arguments: { title: "t", body: "b" },
      });
      expect(result.isError).toBe(true);
      // Before: "… already exists. The target changed or already exists; read its current
      // state, then adjust the arguments."
      expect(textOf(result)).not.toContain("adjust the arguments");
      expect(textOf(result)).toContain("may have happened");
    } finally {
      await host.close();
    }
  }, 60_000);
});
