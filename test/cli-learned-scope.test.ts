// Issue 27.4: records learned in a tenant's scope are listed with their scope, apart from the
// shared ones (a snapshot file as `learned list --json` writes it, read back by `learned list`).
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { learnedKey } from "@governor/core/judge";
import { describe, expect, it } from "vitest";
import { governor as cli } from "./cli.ts";

const PRINT = "0123456789abcdef";
const counts = {
  retry_paid: 0,
  retry_futile: 5,
  correct_paid: 0,
  correct_futile: 0,
  switch_paid: 0,
  switch_futile: 0,
};

describe("learned list and scopes", () => {
  it("shows the scope of a tenant's record, and none for a shared one", async () => {
    const now = Date.now();
    const file = join(mkdtempSync(join(tmpdir(), "governor-learned-scope-")), "learned.json");
    writeFileSync(
      file,
      JSON.stringify({
        at: now,
        records: [
          { key: learnedKey("crm", "search", PRINT, "tenant-a"), counts, updatedAt: now },
          { key: learnedKey("crm", "search", PRINT), counts, updatedAt: now - 1 },
        ],
      }),
    );
    const text = await cli(["learned", "list", "--store", file]);
    expect(text.status).toBe(0);
    const lines = text.stdout.trim().split("\n").slice(1);
    expect(lines).toHaveLength(2);
    expect(lines.filter((l) => l.endsWith("\tscope tenant-a"))).toHaveLength(1);
    expect(lines.filter((l) => l.includes("scope"))).toHaveLength(1);
    const json = JSON.parse((await cli(["learned", "list", "--store", file, "--json"])).stdout);
    expect(json.records.map((r: { scope?: string }) => r.scope ?? null).sort()).toEqual([
      null,
      "tenant-a",
    ]);
  });
});
