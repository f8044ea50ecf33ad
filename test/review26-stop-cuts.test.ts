// Review 26: the stop Governor decides cuts the reads in flight (run-state.ts stopRun →
// AttemptGuard.cutReads). What such a cut leaves behind, through the public API.
import { createGovernor, failureFromError, localFailure } from "@governor/core";
import { describe, expect, it } from "vitest";

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const later = <T>(ms: number, value: T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe("a read cut by the run's stop", () => {
  it("is not handed to the host's toFailure, nor counted by the tool's breaker shared by every run", async () => {
    const mapped: unknown[] = [];
    const gov = createGovernor(
      {
        budgets: { calls: 2 },
        tools: { read: { effect: "read_only", breaker: { threshold: 1 } } },
      },
      { random: () => 0.5, metrics: false },
    );
    const run = gov.startRun();
    // A host whose HTTP client's every throw is a network failure (what its executor throws).
    const cut = run.call(
      {
        tool: "read",
        toFailure: (thrown) => {
          mapped.push(thrown);
          return localFailure("network");
        },
      },
      () => later(50, ok("x")),
    );
    await run.call({ tool: "read" }, () => later(1, ok("y")));
    // The third call spends the calls budget: the run stops, the first read is cut.
    expect(await run.call({ tool: "read" }, async () => ok("z"))).toMatchObject({
      kind: "stop",
      reason: "budget_exhausted",
    });
    expect(await cut).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    // The cut was Governor's, not the executor's failure: the host's mapper is not asked of it...
    expect(mapped).toEqual([]);
    // ...and another run's read of the same healthy tool is not refused as `circuit_open`.
    const other = gov.startRun();
    expect(await other.call({ tool: "read" }, async () => ok("w"))).toMatchObject({ kind: "ok" });
  });

  it("whose executor rejects later leaves no unhandled rejection and no call pending", async () => {
    const run = createGovernor(
      { budgets: { calls: 1 }, tools: { read: { effect: "read_only" } } },
      { metrics: false },
    ).startRun();
    const cut = run.call({ tool: "read" }, () =>
      later(20, undefined).then(() => {
        throw new Error("socket hang up");
      }),
    );
    await run.call({ tool: "read" }, async () => ok("z"));
    expect(await cut).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    await later(40, undefined);
  });
});

describe("run.end() after a stop Governor decided", () => {
  it("still cuts a write in flight whose executor ignores its signal: the call resolves, its key named as in doubt", async () => {
    const gov = createGovernor(
      { budgets: { calls: 1 }, tools: { send: { effect: "mutating" } } },
      { random: () => 0.5, metrics: false },
    );
    const run = gov.startRun();
    // A write sent, whose executor never answers and ignores ctx.signal.
    const write = run.call({ tool: "send", args: { to: "a" } }, () => new Promise(() => {}));
    expect(await run.call({ tool: "send", args: { to: "b" } }, async () => ok("z"))).toMatchObject({
      kind: "stop",
      reason: "budget_exhausted",
    });
    // docs/budgets.md: every attempt is bounded by the host's run.end(), even when the executor
    // ignores its ctx.signal; the changeset: "run.end() ... cut every attempt, as before".
    expect(run.end()).toMatchObject({ reason: "budget_exhausted" });
    const outcome = await Promise.race([write, later(100, "still pending" as const)]);
    expect(outcome).toMatchObject({ kind: "stop", idempotencyKey: expect.any(String) });
  });
});

describe("a read cut by the run's stop, with a host mapper that routes unknown throws to the host", () => {
  it("gives its caller the run's stop, not a HostError thrown out of run.call", async () => {
    const gov = createGovernor(
      { budgets: { calls: 1 }, tools: { read: { effect: "read_only" } } },
      { random: () => 0.5, metrics: false },
    );
    const run = gov.startRun();
    const cut = run.call(
      {
        tool: "read",
        // A host's mapper: what its client throws that it does not know is a local bug.
        toFailure: (thrown) => failureFromError(thrown, { origin: "local", local: "thrown" }),
      },
      () => later(50, ok("x")),
    );
    await run.call({ tool: "read" }, async () => ok("z"));
    await expect(cut).resolves.toMatchObject({ kind: "stop", reason: "budget_exhausted" });
  });
});

describe("one call's own signal aborting", () => {
  it("ends the run and cuts another call's read already sent, like any stop; a write already sent finishes", async () => {
    const run = createGovernor(
      { tools: { read: { effect: "read_only" } } },
      { metrics: false },
    ).startRun();
    const first = run.call({ tool: "read", args: { id: "a" } }, () => later(30, ok("a")));
    const abort = new AbortController();
    const second = run.call({ tool: "read", args: { id: "b" }, signal: abort.signal }, () =>
      later(1_000, ok("b")),
    );
    await later(5, undefined);
    abort.abort(new Error("host gave up"));
    expect(await second).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(await first).toMatchObject({ kind: "stop", reason: "aborted" });
  });

  it("lets another call's write already sent finish, its outcome known", async () => {
    const run = createGovernor(
      { tools: { read: { effect: "read_only" }, send: { effect: "mutating" } } },
      { metrics: false },
    ).startRun();
    const write = run.call({ tool: "send", args: { to: "a" } }, () => later(30, ok("sent")));
    const abort = new AbortController();
    const read = run.call({ tool: "read", args: { id: "b" }, signal: abort.signal }, () =>
      later(1_000, ok("b")),
    );
    await later(5, undefined);
    abort.abort(new Error("host gave up"));
    expect(await read).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(await write).toMatchObject({ kind: "ok", value: ok("sent") });
  });
});
