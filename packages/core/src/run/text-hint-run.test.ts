/**
 * A retry hint written only in the error text, seen through a run: the retry waits for it, and a
 * hint longer than `retry.maxHintMs` ends the retries at once instead of spending them early.
 * Real timers: the wait is the point.
 */
import { describe, expect, it } from "vitest";
import { createGovernor } from "./governor.ts";

const failing = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });
const ok = { content: [{ type: "text", text: "done" }] };

const readOnly = { tools: { search: { effect: "read_only" as const } } };

describe("a retry hint in the error text", () => {
  it("the retry waits at least as long as the text asks", async () => {
    const run = createGovernor(readOnly, { metrics: false, random: () => 0 }).startRun();
    const at: number[] = [];
    const outcome = await run.call({ tool: "search", args: { q: "x" } }, async () => {
      at.push(performance.now());
      return at.length === 1
        ? failing("429 Too Many Requests: Rate limit exceeded. Please try again in 120ms.")
        : ok;
    });
    expect(outcome.kind).toBe("ok");
    expect(at).toHaveLength(2);
    // With random() = 0 the jittered backoff is 0 ms: only the text's hint makes the run wait.
    expect((at[1] as number) - (at[0] as number)).toBeGreaterThanOrEqual(110);
  });

  it("a hint beyond retry.maxHintMs ends the retries after one call", async () => {
    const run = createGovernor(readOnly, { metrics: false }).startRun();
    let calls = 0;
    const outcome = await run.call({ tool: "search", args: { q: "x" } }, async () => {
      calls += 1;
      return failing("Rate limit exceeded. Please try again in 1m30s.");
    });
    expect(calls).toBe(1);
    expect(outcome.kind).not.toBe("ok");
    expect(run.summary().retries).toBe(0);
  });
});
