/**
 * The decisions of classify and decide, seen through a run: how often a write executes, what the
 * model reads, which budget stops what. Unit tests of each rule live beside its module.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { PolicyInput } from "../policy/policy.ts";
import { drive, governor, modelText, ok, text } from "./run-calls.support.ts";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("issue 8.1: a tool's own error text never makes a write safe to repeat", () => {
  it("a write that committed, then answered with a side step's failure, runs once", async () => {
    for (const answer of [
      "Order ORD-1001 was created, but we could not connect to the mail service",
      "Invoice INV-7 saved; webhook delivery failed: 503 Service Unavailable",
      "Charge captured. Ledger sync failed: database is busy, try again later",
    ]) {
      const run = governor().startRun();
      let executed = 0;
      const outcome = await drive(
        run.call({ tool: "create_order", args: { sku: "A1" } }, async () => {
          executed += 1;
          return text(answer);
        }),
      );
      expect(executed, answer).toBe(1);
      expect(outcome, answer).toMatchObject({ kind: "stop", reason: "partial_success" });
      const said = modelText(outcome);
      expect(said).toContain("The write happened, but a later step failed.");
      expect(said).toMatch(/do not repeat/i);
      expect(run.summary()).toMatchObject({ reason: "partial_success", attempts: 1 });
    }
  });

  it("a transient-sounding text from a mutating tool stops as uncertain_mutation, once", async () => {
    const run = governor().startRun();
    let executed = 0;
    const outcome = await drive(
      run.call({ tool: "create_order", args: { sku: "A1" } }, async () => {
        executed += 1;
        return text("database is busy, try again later");
      }),
    );
    expect(executed).toBe(1);
    expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(modelText(outcome)).toContain("the write may have happened");
  });

  it("a redelivered call whose text-only failure may have written is refused, not run", async () => {
    const gov = governor();
    let executed = 0;
    const call = () =>
      drive(
        gov
          .startRun({ idempotencyScope: "queue-1" })
          .call({ tool: "create_order", args: { sku: "A1" }, callId: "job-7" }, async () => {
            executed += 1;
            return text("503 Service Unavailable");
          }),
      );
    expect(await call()).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(await call()).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(executed).toBe(1);
  });

  it("the same text from a read-only tool is retried as before", async () => {
    const run = governor({ tools: { get_order: { effect: "read_only" } } }).startRun();
    let executed = 0;
    const outcome = await drive(
      run.call({ tool: "get_order" }, async () =>
        ++executed < 3 ? text("database is busy, try again later") : ok("order"),
      ),
    );
    expect(outcome).toMatchObject({ kind: "ok", attempts: 3 });
  });

  it("a policy rule that vouches for the text lets the write retry", async () => {
    const run = governor({
      tools: {
        create_order: {
          rules: [{ match: "busy", action: "retry_dependency", certainty: "failed" }],
        },
      },
    }).startRun();
    let executed = 0;
    const outcome = await drive(
      run.call({ tool: "create_order" }, async () =>
        ++executed < 2 ? text("database is busy, try again later") : ok("created"),
      ),
    );
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
  });
});

describe("issue 8.11: a numeric code is not a JSON-RPC error by itself", () => {
  it("a gRPC UNAVAILABLE from a plain-function tool is retried, not a protocol error", async () => {
    const run = governor({ tools: { lookup: { effect: "read_only" } } }).startRun();
    let executed = 0;
    const outcome = await drive(
      run.call({ tool: "lookup" }, async () => {
        executed += 1;
        if (executed < 2) {
          throw Object.assign(new Error("14 UNAVAILABLE: No connection established"), {
            code: 14,
            details: "No connection established",
          });
        }
        return ok("found");
      }),
    );
    expect(outcome).toMatchObject({ kind: "ok", attempts: 2 });
    expect(run.summary().reason).toBe("completed");
  });

  it("a gRPC NOT_FOUND goes to the model, and the run goes on", async () => {
    const run = governor({ tools: { lookup: { effect: "read_only" } } }).startRun();
    const outcome = await run.call({ tool: "lookup" }, async () => {
      throw Object.assign(new Error("5 NOT_FOUND: no order 7"), { code: 5 });
    });
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
  });
});

describe("issue 8.15: tool and server names that are Object.prototype members", () => {
  it("run.call resolves for each", async () => {
    const run = governor({ tools: { "*": { effect: "read_only" } } }).startRun();
    for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
      const outcome = await run.call({ tool: name, server: name }, async () => ok("fine"));
      expect(outcome, name).toMatchObject({ kind: "ok" });
      const failed = await run.call({ tool: name, server: "constructor" }, async () =>
        text("Invalid date"),
      );
      expect(failed, name).toMatchObject({ kind: "model", action: "correct_arguments" });
    }
  });
});

describe("switches budget: a retry that gives up spends switches", () => {
  it("with budgets.switches 0 the run stops instead of switching tools, and names the budget", async () => {
    const policy: PolicyInput = {
      budgets: { switches: 0 },
      tools: { fetch: { effect: "read_only", alternatives: ["fetch_backup"] } },
    };
    const run = governor(policy).startRun();
    const outcome = await drive(
      run.call({ tool: "fetch" }, async () => text("503 Service Unavailable")),
    );
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(run.summary()).toMatchObject({ reason: "budget_exhausted", budget: "switches" });
    expect(modelText(outcome)).toContain("switches budget is spent");
    expect(modelText(outcome)).not.toContain("fetch_backup");
  });

  it("with one switch left it switches once, then stops", async () => {
    const policy: PolicyInput = {
      budgets: { switches: 1 },
      tools: { "fetch*": { effect: "read_only", alternatives: ["fetch_backup"] } },
    };
    const run = governor(policy).startRun();
    const failing = async () => text("503 Service Unavailable");
    expect(await drive(run.call({ tool: "fetch", args: { n: 1 } }, failing))).toMatchObject({
      kind: "model",
      action: "switch_tool",
    });
    expect(await drive(run.call({ tool: "fetch", args: { n: 2 } }, failing))).toMatchObject({
      kind: "stop",
      reason: "budget_exhausted",
    });
    expect(run.summary()).toMatchObject({ reason: "budget_exhausted", budget: "switches" });
  });

  it("without alternatives the same retries stop with retries_exhausted, no budget named", async () => {
    const run = governor({
      budgets: { switches: 0 },
      tools: { fetch: { effect: "read_only" } },
    }).startRun();
    const outcome = await drive(
      run.call({ tool: "fetch" }, async () => text("503 Service Unavailable")),
    );
    expect(outcome).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    expect(run.summary()).not.toHaveProperty("budget");
  });
});

describe("issue 8.1: a text refusal of an undescribed write, sent again unchanged", () => {
  it("goes to the model first; the identical call is then refused by the ledger, not executed", async () => {
    const run = governor().startRun();
    let executed = 0;
    const send = () =>
      drive(
        run.call({ tool: "create_order", args: { date: "tomorrow" } }, async () => {
          executed += 1;
          return text("Invalid date");
        }),
      );
    expect(await send()).toMatchObject({ kind: "model", action: "correct_arguments" });
    expect(await send()).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(executed).toBe(1);
  });
});

describe("issue 12.3: the call's arguments weigh the failure's text", () => {
  it("a refused URL the model chose is retried, then handed back to the model; the run goes on", async () => {
    const run = governor({ tools: { fetch: { effect: "read_only" } } }).startRun();
    let executed = 0;
    const refused = () => {
      executed += 1;
      return text(
        "Failed to fetch http://10.9.9.9:8080/status: connect ECONNREFUSED 10.9.9.9:8080",
      );
    };
    const first = await drive(
      run.call({ tool: "fetch", args: { url: "http://10.9.9.9:8080/status" } }, async () =>
        refused(),
      ),
    );
    expect(executed).toBe(3);
    expect(first).toMatchObject({ kind: "model", action: "correct_arguments" });
    expect(modelText(first)).toContain("point it at another address");
    expect(run.ended).toBe(false);
    // The model picks another URL: the run serves it.
    const second = await drive(
      run.call({ tool: "fetch", args: { url: "https://example.org/status" } }, async () =>
        ok("up"),
      ),
    );
    expect(second.kind).toBe("ok");
  });

  it("ENOENT on the server's own file (a path the model never gave) stops: a person fixes the server", async () => {
    const run = governor({ tools: { remember: { effect: "idempotent" } } }).startRun();
    const outcome = await drive(
      run.call({ tool: "remember", args: { fact: "likes tea" } }, async () =>
        text("ENOENT: no such file or directory, open '/data/memory.json'"),
      ),
    );
    expect(outcome).toMatchObject({ kind: "stop", reason: "misconfigured" });
    expect(modelText(outcome)).not.toContain("/data/memory.json");
  });

  it("the tool's input schema turns a text naming one of its properties into a correction", async () => {
    const run = governor({ tools: { query: { effect: "read_only" } } }).startRun();
    let executed = 0;
    const outcome = await drive(
      run.call(
        {
          tool: "query",
          args: { sql: "select 1", timeout: 600 },
          inputSchema: { type: "object", properties: { sql: {}, timeout: {} } },
        },
        async () => {
          executed += 1;
          return text("Value for 'timeout' must be at most 60");
        },
      ),
    );
    expect(executed).toBe(1);
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
  });
});

describe("a refusal's fingerprint is its tool's, whichever tools were refused before", () => {
  it("denied tools in turn, across runs, each get the fingerprint of (tool, local, reason) and count as their own", async () => {
    const { fingerprint } = await import("../judge/fingerprint.ts");
    const g = governor({ tools: { "rm_*": { access: "deny" } } });
    const tools = ["rm_a", "rm_b", "rm_c"];
    const expected = tools.map((tool) =>
      fingerprint({ tool, channel: "local", text: "denied_by_policy" }),
    );
    expect(new Set(expected).size).toBe(3);
    for (let round = 0; round < 3; round++) {
      const run = g.startRun();
      for (const [i, tool] of [...tools, ...tools].entries()) {
        const outcome = await run.call({ tool, args: { i } }, async () => ok("never"));
        if (outcome.kind === "ok") throw new Error("a denied tool was called");
        if (outcome.kind === "model") expect(outcome.fingerprint).toBe(expected[i % 3]);
      }
      const s = run.end();
      // Each tool's refusals counted under its own fingerprint, first refused first.
      expect(Object.keys(s.fingerprints)).toEqual(expected);
    }
  });
});
