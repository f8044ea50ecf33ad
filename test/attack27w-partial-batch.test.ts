// Attack 27 (writes): a write of a batch (rows, files, messages) that the server reports done in
// part, by its count: `3 of 5 rows inserted; row 4: invalid date`. Governor read the failed row's
// error and asked the model to change the arguments and call again: sent again corrected, the
// rows already written are written twice. A write done in part stops the run, saying it may have
// happened (partial_success), as for `Order created, but the mail failed`.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor } from "@governor/core";
import { stdioServerParams } from "@governor/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { startInProcessHost, textOf } from "./proxy-support.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-attack27w-batch-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const failed = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });

const PARTS = [
  "Partial failure: 3 of 5 rows inserted; row 4: invalid date",
  "3 of 5 rows inserted; row 4: invalid date",
  "Failed to create 2 of 5 issues: Validation Failed: title is required",
  "Error: only 3 of 5 files were uploaded: file4.png: invalid file type",
  "BulkWriteError: 3 documents inserted, 2 failed: E11000 duplicate key error",
  "Error: invalid argument 'date' in row 4 (rows 1-3 were imported)",
];

describe("a batch written in part", () => {
  it.each(PARTS)("run.call: %s stops the run as a write that may have happened", async (text) => {
    const gov = createGovernor(
      { tools: { import_rows: { effect: "mutating" } } },
      { metrics: false },
    );
    const outcome = await gov
      .startRun()
      .call({ tool: "import_rows", args: { rows: [1, 2, 3, 4, 5] } }, async () => failed(text));
    expect(outcome).toMatchObject({ kind: "stop", reason: "partial_success" });
  });

  it.each([
    "Error: 0 of 5 rows inserted: row 1: invalid date",
    "Validation failed: row 4: invalid date",
    "Error: page 2 of 5: invalid cursor",
    // A PATCH's operation name, split into words by the rules, is no partial write.
    "Failed to call tickets_partial_update with request: method='PATCH', error: 400 invalid status",
  ])("run.call: %s is not read as a part written (nothing was)", async (text) => {
    const gov = createGovernor(
      { tools: { import_rows: { effect: "mutating" } } },
      { metrics: false },
    );
    const outcome = await gov
      .startRun()
      .call({ tool: "import_rows", args: { rows: [1] } }, async () => failed(text));
    expect(outcome).not.toMatchObject({ reason: "partial_success" });
  });

  it("governor proxy (stdio, fault server): the model is not asked to change the arguments and call again", async () => {
    const policy = join(dir, "policy.json");
    writeFileSync(
      policy,
      JSON.stringify({ servers: { notes: { tools: { create_note: { effect: "mutating" } } } } }),
    );
    const server = stdioServerParams({
      effectsFile: join(dir, "effects.jsonl"),
      scenario: {
        create_note: [{ kind: "error", text: "3 of 5 rows inserted; row 4: invalid date" }],
      },
    });
    const host = await startInProcessHost(["--policy", policy, "--server", "notes"], {
      command: server.command,
      args: server.args ?? [],
    });
    try {
      const result = await host.client.callTool({
        name: "create_note",
        arguments: { title: "t", body: "b" },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).not.toContain("Change the arguments");
      expect(textOf(result)).toContain("Do not repeat the call");
    } finally {
      await host.close();
    }
  }, 60_000);
});
