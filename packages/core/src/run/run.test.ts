import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { HostError } from "../errors.ts";
import type { GovernorEvent } from "../telemetry/events.ts";
import type { AttemptContext } from "./run.ts";
import { drive, governor, modelText, ok, text } from "./run-calls.support.ts";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("run.call", () => {
  it("passes a success through untouched", async () => {
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const outcome = await run.call({ tool: "get_note", args: { id: "welcome" } }, async () =>
      ok("hi"),
    );
    expect(outcome).toEqual({ kind: "ok", value: ok("hi"), attempts: 1, replayed: false });
    expect(run.summary()).toMatchObject({
      calls: 1,
      attempts: 1,
      failures: 0,
      reason: "completed",
    });
  });

  it("answers with a promise whatever goes wrong: a call it cannot read rejects, never throws", async () => {
    const run = governor().startRun();
    let returned: Promise<unknown> | undefined;
    expect(() => {
      returned = run.call(undefined as never, async () => ok("x"));
    }).not.toThrow();
    await expect(returned).rejects.toThrow(TypeError);
    const failing = governor().startRun();
    const sent = failing.call({ tool: "t" }, () => {
      throw Object.assign(new Error("bad frame"), { code: -32700 });
    });
    expect(sent).toBeInstanceOf(Promise);
    await expect(sent).rejects.toBeInstanceOf(HostError);
  });

  it("gives the model a short, actionable isError result for a fixable failure", async () => {
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const outcome = await run.call({ tool: "get_note", args: { id: "drafts" } }, async () =>
      text('No note with id "drafts". Known ids: welcome, release-notes'),
    );
    expect(outcome.kind).toBe("model");
    if (outcome.kind !== "model") return;
    expect(outcome.action).toBe("correct_arguments");
    expect(outcome.reason).toBe("not_found");
    expect(outcome.result.isError).toBe(true);
    expect(modelText(outcome)).toMatch(
      /^get_note: No note with id "drafts"\. Known ids: welcome, release-notes\./,
    );
    expect(modelText(outcome)).not.toMatch(/try again/i);
  });

  it("retries a transient failure invisibly, with backoff, and returns the success", async () => {
    const retries: number[] = [];
    const run = governor(
      { tools: { fetch: { effect: "read_only", retry: { baseDelayMs: 100 } } } },
      { onRetry: (ctx) => retries.push(ctx.delayMs) },
    ).startRun();
    let n = 0;
    const outcome = await drive(
      run.call({ tool: "fetch" }, async () =>
        ++n < 3 ? text("503 Service Unavailable") : ok("data"),
      ),
    );
    expect(outcome).toMatchObject({ kind: "ok", value: ok("data"), attempts: 3 });
    // Full jitter with random() = 0.5: half of base * 2^(attempt-1).
    expect(retries).toEqual([50, 100]);
    expect(run.summary()).toMatchObject({ retries: 2, attempts: 3, failures: 2 });
  });

  it("honors Retry-After hints and gives up when the hint is longer than the cap", async () => {
    const delays: number[] = [];
    const gov = governor(
      { tools: { rl: { effect: "read_only", retry: { maxHintMs: 5_000 } } } },
      { onRetry: (c) => delays.push(c.delayMs) },
    );
    let n = 0;
    const limited = (ms: number) => ({
      ...text("429 Too Many Requests"),
      structuredContent: { error: { status: 429, retryAfterMs: ms } },
    });
    const first = await drive(
      gov.startRun().call({ tool: "rl" }, async () => (++n < 2 ? limited(2_000) : ok("ok"))),
    );
    expect(first.kind).toBe("ok");
    expect(delays).toEqual([2_000]);
    const second = await drive(gov.startRun().call({ tool: "rl" }, async () => limited(60_000)));
    expect(second).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
  });

  it("stops with retries_exhausted, or switches when the policy names alternatives", async () => {
    const gov = governor({
      tools: { a: { effect: "read_only" }, b: { effect: "read_only", alternatives: ["b_backup"] } },
    });
    const failing = async () => text("503 Service Unavailable");
    const stopped = await drive(gov.startRun().call({ tool: "a" }, failing));
    expect(stopped).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    expect(modelText(stopped)).toContain("3 attempts");
    const switched = await drive(gov.startRun().call({ tool: "b" }, failing));
    expect(switched).toMatchObject({ kind: "model", action: "switch_tool" });
    expect(modelText(switched)).toContain("b_backup");
  });

  it("never repeats a mutation whose outcome is unknown without a key", async () => {
    const run = governor().startRun();
    let calls = 0;
    const outcome = await drive(
      run.call({ tool: "append_log", args: { line: "x" } }, async () => {
        calls += 1;
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
      }),
    );
    expect(calls).toBe(1);
    expect(outcome).toMatchObject({
      kind: "stop",
      reason: "uncertain_mutation",
      personResolvable: true,
    });
    expect(modelText(outcome)).toMatch(/may have happened/);
    expect(run.ended).toBe(true);
  });

  it("retries an uncertain mutation with the same key when the tool honors keys", async () => {
    const run = governor({
      tools: { create_note: { idempotency: { honorsKeys: true, argument: "idempotency_key" } } },
    }).startRun();
    const seen: AttemptContext[] = [];
    const outcome = await drive(
      run.call({ tool: "create_note", args: { title: "t" } }, async (ctx) => {
        seen.push(ctx);
        if (seen.length === 1)
          throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
        return ok("created");
      }),
    );
    expect(outcome.kind).toBe("ok");
    expect(seen).toHaveLength(2);
    const [a, b] = seen;
    expect(a?.idempotencyKey).toMatch(/^gk_[0-9a-f]{32}$/);
    expect(b?.idempotencyKey).toBe(a?.idempotencyKey);
    expect(a?.args).toEqual({ title: "t", idempotency_key: a?.idempotencyKey });
    expect(a?.meta).toEqual({ "io.governor/idempotency-key": a?.idempotencyKey });
  });

  it("asks the verify step and retries only when the effect is absent", async () => {
    let effects = 0;
    let attempts = 0;
    const gov = governor(
      { tools: { charge: { idempotency: { verify: true } } } },
      {
        verify: {
          charge: async () =>
            effects > 0 ? { effect: "present", result: ok("charged") } : { effect: "absent" },
        },
      },
    );
    // First attempt fails before its effect; verify says absent; the retry succeeds.
    const outcome = await drive(
      gov.startRun().call({ tool: "charge", args: { amount: 5 } }, async () => {
        attempts += 1;
        if (attempts === 1) throw Object.assign(new Error("timeout"), { code: "ETIMEDOUT" });
        effects += 1;
        return ok("charged");
      }),
    );
    expect(outcome).toMatchObject({ kind: "ok", value: ok("charged"), replayed: false });
    expect(effects).toBe(1);
    // The effect happened but the answer was lost: verify says present, nothing is repeated.
    let second = 0;
    const lost = await drive(
      gov.startRun().call({ tool: "charge", args: { amount: 7 } }, async () => {
        second += 1;
        effects += 1;
        throw Object.assign(new Error("timeout"), { code: "ETIMEDOUT" });
      }),
    );
    expect(second).toBe(1);
    expect(lost).toMatchObject({ kind: "ok", replayed: true, value: ok("charged") });
  });

  it("warns before the last allowed repeat and stops on the same fingerprint", async () => {
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const miss = (id: string) =>
      run.call({ tool: "get_note", args: { id } }, async () => text(`No note with id "${id}"`));
    const first = await miss("a1");
    const second = await miss("b22");
    const third = await miss("c333");
    expect(first.kind).toBe("model");
    expect(modelText(first)).not.toContain("ends the run");
    expect(modelText(second)).toContain("the same failure again ends the run");
    expect(third).toMatchObject({ kind: "stop", reason: "repeated_failure" });
    const prints = Object.values(run.summary().fingerprints);
    expect(prints).toEqual([3]);
  });

  it("counts one template as one failure when the word that varies is the model's own argument", async () => {
    // Issue 27.5: an unquoted word of the text that the call sent is its value, so three series
    // refused the same way are one repeated failure, not three different ones.
    const run = governor({ tools: { chart: { effect: "read_only" } } }).startRun();
    const plot = (series: string) =>
      run.call({ tool: "chart", args: { series } }, async () =>
        text(`cannot plot ${series} against itself`),
      );
    expect(await plot("orders")).toMatchObject({ kind: "model" });
    expect(await plot("invoices")).toMatchObject({ kind: "model" });
    expect(await plot("refunds")).toMatchObject({ kind: "stop", reason: "repeated_failure" });
    expect(Object.values(run.summary().fingerprints)).toEqual([3]);
  });

  it("detects a loop of identical calls with an unchanged result", async () => {
    const run = governor({
      tools: { list: { effect: "read_only", loop: { maxIdentical: 2 } } },
    }).startRun();
    let executed = 0;
    const list = () =>
      run.call({ tool: "list", args: { b: 1, a: 2 } }, async () => {
        executed++;
        return ok("same");
      });
    expect((await list()).kind).toBe("ok");
    expect((await list()).kind).toBe("ok");
    // Key order does not matter: the canonical arguments are the same call.
    const third = await run.call({ tool: "list", args: { a: 2, b: 1 } }, async () => {
      executed++;
      return ok("same");
    });
    expect(third).toMatchObject({ kind: "stop", reason: "loop_detected" });
    expect(executed).toBe(2);
  });

  it("reserves the calls budget atomically for parallel calls", async () => {
    const run = governor({
      budgets: { calls: 5 },
      tools: { t: { effect: "idempotent" } },
    }).startRun();
    let executed = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        run.call({ tool: "t", args: { i } }, async () => {
          executed++;
          return ok("x");
        }),
      ),
    );
    expect(executed).toBe(5);
    expect(outcomes.filter((o) => o.kind === "ok")).toHaveLength(5);
    const stops = outcomes.filter((o) => o.kind === "stop");
    expect(stops).toHaveLength(7);
    expect(stops[0]).toMatchObject({ reason: "budget_exhausted" });
    expect(run.summary()).toMatchObject({ reason: "budget_exhausted", budget: "calls" });
  });

  it("a stop cuts the reads in flight; a write or an idempotent call already sent finishes", async () => {
    const run = governor({
      budgets: { calls: 3 },
      tools: {
        read: { effect: "read_only" },
        put: { effect: "idempotent" },
        send: { effect: "mutating" },
      },
    }).startRun();
    const told: string[] = [];
    const answer = (tool: string) =>
      run.call({ tool }, (ctx) => {
        ctx.onAbort(() => told.push(tool));
        return new Promise((resolve) => setTimeout(() => resolve(ok(tool)), 30));
      });
    const calls = [answer("read"), answer("put"), answer("send")];
    // The fourth call spends the budget: the run stops while the three are in flight.
    expect(await run.call({ tool: "read" }, async () => ok("late"))).toMatchObject({
      kind: "stop",
      reason: "budget_exhausted",
    });
    expect(told).toEqual(["read"]);
    await vi.advanceTimersByTimeAsync(30);
    const [read, put, send] = await Promise.all(calls);
    expect(read).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(put).toMatchObject({ kind: "ok", value: ok("put") });
    expect(send).toMatchObject({ kind: "ok", value: ok("send") });
  });

  it("stops on the corrections budget", async () => {
    const run = governor({
      budgets: { corrections: 1 },
      tools: { t: { effect: "read_only" } },
    }).startRun();
    const first = await run.call({ tool: "t" }, async () =>
      text("Invalid argument: limit must be at most 50"),
    );
    const second = await run.call({ tool: "t" }, async () =>
      text("Invalid argument: date format is wrong"),
    );
    expect(first.kind).toBe("model");
    expect(second).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(modelText(second)).toContain("corrections budget");
  });

  it("keeps the runs of one governor apart", async () => {
    const gov = governor({ tools: { t: { effect: "read_only" } } });
    const runs = Array.from({ length: 20 }, () => gov.startRun());
    await Promise.all(
      runs.map((r, i) =>
        r.call({ tool: "t", args: { i } }, async () => text(`No note with id "n${i}"`)),
      ),
    );
    for (const r of runs) {
      expect(r.summary()).toMatchObject({ calls: 1, failures: 1 });
      expect(Object.values(r.summary().fingerprints)).toEqual([1]);
    }
  });

  it("routes protocol errors to the host: thrown without a hook", async () => {
    const run = governor({ tools: { t: { effect: "read_only" } } }).startRun();
    const err = Object.assign(new Error("MCP error -32601: Method not found"), { code: -32601 });
    await expect(run.call({ tool: "t" }, async () => Promise.reject(err))).rejects.toBeInstanceOf(
      HostError,
    );
    expect(run.summary()).toMatchObject({ reason: "protocol_error" });
  });

  it("routes protocol errors to the host hook; the model gets nothing of the raw error", async () => {
    const seen: HostError[] = [];
    const run = governor(
      { tools: { t: { effect: "read_only" } } },
      {
        onHostError: (e) => {
          seen.push(e);
          return undefined;
        },
      },
    ).startRun();
    const err = Object.assign(new Error("Internal error at /srv/app/secret.js token sk-abc123"), {
      code: -32603,
    });
    const outcome = await run.call({ tool: "t" }, async () => Promise.reject(err));
    expect(seen).toHaveLength(1);
    expect(seen[0]?.failureCode).toBe(-32603);
    expect(outcome).toMatchObject({ kind: "stop", reason: "protocol_error" });
    expect(modelText(outcome)).not.toMatch(/srv|sk-|Internal/);
  });

  it("lets the host reconnect and retry a safe call", async () => {
    let n = 0;
    const run = governor(
      { tools: { t: { effect: "read_only" } } },
      { onHostError: (_e, ctx) => ({ action: ctx.safeToRepeat ? "retry" : "stop" }) },
    ).startRun();
    const outcome = await drive(
      run.call({ tool: "t" }, async () => {
        if (++n === 1) throw Object.assign(new Error("Session not found"), { code: -32001 });
        return ok("fine");
      }),
    );
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
  });

  it("aborting mid-backoff resolves promptly with aborted and leaves no timers", async () => {
    const ac = new AbortController();
    const run = governor(
      { tools: { t: { effect: "read_only", retry: { baseDelayMs: 60_000, maxDelayMs: 60_000 } } } },
      { random: () => 0.99 },
    ).startRun({ signal: ac.signal });
    const pending = run.call({ tool: "t" }, async () => text("503 Service Unavailable"));
    await vi.advanceTimersByTimeAsync(10);
    expect(vi.getTimerCount()).toBe(1);
    ac.abort();
    const outcome = await pending;
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("observe-only: computes decisions but passes the failure through", async () => {
    const events: GovernorEvent[] = [];
    const run = governor(
      { observeOnly: true, tools: { t: { effect: "read_only" } } },
      { onEvent: (e) => events.push(e) },
    ).startRun();
    let n = 0;
    const outcome = await run.call({ tool: "t" }, async () => {
      n++;
      return text("503 Service Unavailable");
    });
    expect(n).toBe(1);
    expect(outcome).toMatchObject({ kind: "ok", value: text("503 Service Unavailable") });
    expect(outcome.kind === "ok" && outcome.observed?.action).toBe("retry_dependency");
    expect(events.find((e) => e.type === "decision")).toMatchObject({
      observed: true,
      action: "retry_dependency",
    });
    const thrown = new Error("boom");
    await expect(run.call({ tool: "t" }, () => Promise.reject(thrown))).rejects.toBe(thrown);
  });

  it("opens the breaker after consecutive failures and probes after the cool-down", async () => {
    const gov = governor({
      tools: {
        t: {
          effect: "read_only",
          retry: { attempts: 1 },
          breaker: { threshold: 2, cooldownMs: 5_000 },
          alternatives: ["u"],
        },
      },
    });
    let executed = 0;
    const failing = async () => {
      executed++;
      return text("503 Service Unavailable");
    };
    await gov.startRun().call({ tool: "t" }, failing);
    await gov.startRun().call({ tool: "t" }, failing);
    expect(await gov.unavailableTools(["t", "u"])).toEqual(["t"]);
    const blocked = await gov.startRun().call({ tool: "t" }, failing);
    expect(blocked).toMatchObject({ kind: "model", action: "switch_tool", reason: "circuit_open" });
    expect(executed).toBe(2);
    vi.advanceTimersByTime(5_001);
    const probe = await gov.startRun().call({ tool: "t" }, async () => {
      executed++;
      return ok("back");
    });
    expect(probe.kind).toBe("ok");
    expect(await gov.unavailableTools(["t"])).toEqual([]);
  });

  it("never executes a denied tool and waits for approval of a confirm tool", async () => {
    let executed = 0;
    const exec = async () => {
      executed++;
      return ok("done");
    };
    const gov = governor({
      tools: { rm: { access: "deny", alternatives: ["archive"] }, pay: { access: "confirm" } },
    });
    const denied = await gov.startRun().call({ tool: "rm" }, exec);
    expect(denied).toMatchObject({
      kind: "model",
      action: "switch_tool",
      reason: "denied_by_policy",
    });
    expect(modelText(denied)).toContain("archive");
    const unapproved = await gov.startRun().call({ tool: "pay" }, exec);
    expect(unapproved).toMatchObject({
      kind: "stop",
      reason: "not_approved",
      personResolvable: true,
    });
    expect(executed).toBe(0);
    const approving = governor(
      { tools: { pay: { access: "confirm" } } },
      { onConfirm: () => true },
    );
    expect((await approving.startRun().call({ tool: "pay" }, exec)).kind).toBe("ok");
    expect(executed).toBe(1);
  });

  it("stops when the run's deadline has passed", async () => {
    const run = governor({
      budgets: { wallTimeMs: 1_000 },
      tools: { t: { effect: "read_only" } },
    }).startRun();
    vi.advanceTimersByTime(1_500);
    const outcome = await run.call({ tool: "t" }, async () => ok("late"));
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(run.summary().budget).toBe("wallTime");
  });

  it("answers every call after the run ended, without executing", async () => {
    const run = governor({ tools: { t: { effect: "read_only" } } }).startRun();
    run.end();
    let executed = 0;
    const outcome = await run.call({ tool: "t" }, async () => {
      executed++;
      return ok("x");
    });
    expect(outcome.kind).toBe("stop");
    expect(executed).toBe(0);
  });
});

describe("retry budget per server", () => {
  // Budget windows are fixed slices of the clock (floor(now / windowMs)), and fake timers start at
  // the real time: start each test at a window's start, so that none straddles a boundary the real
  // clock happened to be near (the refill test then saw its second run refilled).
  beforeEach(() => {
    vi.setSystemTime(Date.UTC(2026, 0, 1));
  });

  it("keeps 100 concurrent runs against a failing server within calls x (1 + ratio) + reserve", async () => {
    const ratio = 0.2;
    const reserve = 10;
    const gov = governor({
      retryBudget: { ratio, reserve, windowMs: 60_000 },
      // The retry budget alone: learning (below) would stop runs before they ask it.
      learning: { enabled: false },
      servers: {
        s: { tools: { t: { effect: "read_only", retry: { attempts: 5, baseDelayMs: 10 } } } },
      },
    });
    let attempts = 0;
    const runs = Array.from({ length: 100 }, () => gov.startRun());
    const outcomes = await drive(
      Promise.all(
        runs.map((r) =>
          r.call({ tool: "t", server: "s" }, async () => {
            attempts++;
            return text("503 Service Unavailable");
          }),
        ),
      ),
    );
    const calls = outcomes.length;
    expect(attempts).toBeLessThanOrEqual(calls * (1 + ratio) + reserve);
    expect(attempts).toBeGreaterThan(calls);
    expect(outcomes.every((o) => o.kind === "stop" && o.reason === "retries_exhausted")).toBe(true);
  });

  it("issue 12.5: with learning, runs that follow runs whose retries never recovered stop at once", async () => {
    const gov = governor({
      retryBudget: { ratio: 1, reserve: 1_000, windowMs: 60_000 },
      // Counts decay while the fake clock moves: four outcomes weigh a hair less than 4.
      learning: { minEvidence: 3.5 },
      servers: {
        s: {
          tools: {
            t: {
              effect: "read_only",
              retry: { attempts: 3, baseDelayMs: 10 },
              // The breaker would open after five failures in a row: learning alone here.
              breaker: { threshold: 1_000 },
            },
          },
        },
      },
    });
    let attempts = 0;
    const outcomes = [];
    // One run after another: each learns from the ones before it.
    for (let i = 0; i < 20; i++) {
      outcomes.push(
        await drive(
          gov.startRun().call({ tool: "t", server: "s" }, async () => {
            attempts++;
            return text("503 Service Unavailable");
          }),
        ),
      );
    }
    const reasons = outcomes.map((o) => (o.kind === "stop" ? o.reason : o.kind));
    // Four runs retry in full, every later one stops on its first failure.
    expect(reasons.slice(0, 4)).toEqual(Array(4).fill("retries_exhausted"));
    expect(reasons.slice(4)).toEqual(Array(16).fill("learned_futile"));
    expect(attempts).toBe(4 * 3 + 16);
    const last = outcomes[19];
    expect(last?.kind === "stop" && last.summary.lastFailure?.reason).toBe("unavailable");
  });

  it("refills in the next window", async () => {
    const gov = governor({
      retryBudget: { ratio: 0, reserve: 1, windowMs: 600_000 },
      servers: {
        s: { tools: { t: { effect: "read_only", retry: { attempts: 3, baseDelayMs: 1 } } } },
      },
    });
    let attempts = 0;
    const failing = async () => {
      attempts++;
      return text("503 Service Unavailable");
    };
    await drive(gov.startRun().call({ tool: "t", server: "s" }, failing));
    expect(attempts).toBe(2); // one retry from the reserve, then the budget is empty
    attempts = 0;
    await drive(gov.startRun().call({ tool: "t", server: "s" }, failing));
    expect(attempts).toBe(1);
    vi.advanceTimersByTime(1_200_000);
    attempts = 0;
    await drive(gov.startRun().call({ tool: "t", server: "s" }, failing));
    expect(attempts).toBe(2);
  });
});
