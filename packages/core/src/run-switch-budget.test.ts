import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createGovernor } from "./governor.ts";

// Found by mutation testing (issue 8): when retries run out on a tool with alternatives, the run
// asks `decide` with the budget the classification's own action spends (retries), so `decide`
// never sees the switches budget spent and switches anyway. Remove `.fails` once run.ts passes
// the switches budget for a give-up switch.

const failing = async () => ({
  content: [{ type: "text", text: "503 Service Unavailable" }],
  isError: true,
});

async function drive<T>(promise: Promise<T>): Promise<T> {
  let done = false;
  const tracked = promise.finally(() => {
    done = true;
  });
  for (let i = 0; i < 200 && !done; i++) await vi.advanceTimersByTimeAsync(1_000);
  return tracked;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("run: the switches budget when retries run out", () => {
  it("switches when the budget allows it (control)", async () => {
    const gov = createGovernor(
      { tools: { b: { effect: "read_only", alternatives: ["b_backup"] } } },
      { random: () => 0.5, metrics: false },
    );
    const outcome = await drive(gov.startRun().call({ tool: "b" }, failing));
    expect(outcome).toMatchObject({ kind: "model", action: "switch_tool" });
  });

  it.fails("issue 8 (mutation) bug: with budgets.switches 0 a give-up after retries still switches", async () => {
    const gov = createGovernor(
      {
        budgets: { switches: 0 },
        tools: { b: { effect: "read_only", alternatives: ["b_backup"] } },
      },
      { random: () => 0.5, metrics: false },
    );
    const outcome = await drive(gov.startRun().call({ tool: "b" }, failing));
    expect(outcome).toMatchObject({ kind: "stop" });
  });
});
