import { describe, expect, it } from "vitest";
import { createGovernor } from "./governor.ts";
import { newRunId } from "./run-id.ts";

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("newRunId", () => {
  it("makes version 4 UUIDs, all distinct, across refills of its pool", () => {
    const ids = new Set<string>();
    for (let i = 0; i < 2_000; i++) {
      const id = newRunId();
      expect(id).toMatch(V4);
      ids.add(id);
    }
    expect(ids.size).toBe(2_000);
  });

  it("spreads its digits: every hex digit appears at every random position", () => {
    const seen = Array.from({ length: 36 }, () => new Set<string>());
    for (let i = 0; i < 2_000; i++) {
      const id = newRunId();
      for (let k = 0; k < 36; k++) seen[k]?.add(id.charAt(k));
    }
    for (let k = 0; k < 36; k++) {
      const fixed =
        k === 8 || k === 13 || k === 18 || k === 23 ? 1 : k === 14 ? 1 : k === 19 ? 4 : 16;
      expect(seen[k]?.size, `position ${k}`).toBe(fixed);
    }
  });

  it("names every run, and each run instance's keys apart", async () => {
    const governor = createGovernor({ tools: { w: { effect: "mutating" } } }, { metrics: false });
    const keys = new Set<string>();
    const runs = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const run = governor.startRun();
      expect(run.id).toMatch(V4);
      runs.add(run.id);
      await run.call({ tool: "w", args: { same: 1 } }, async (ctx) => {
        keys.add(ctx.idempotencyKey ?? "");
        return { content: [{ type: "text", text: "ok" }] };
      });
      run.end();
    }
    expect(runs.size).toBe(50);
    expect(keys.size).toBe(50);
  });
});
