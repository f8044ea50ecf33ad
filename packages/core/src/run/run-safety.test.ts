import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { GovernorError, HostError } from "../errors.ts";
import { hostErrorText } from "../judge/message.ts";
import type { PolicyInput } from "../policy/policy.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import { type Store, StoreError } from "../store/store.ts";
import type { GovernorEvent } from "../telemetry/events.ts";
import { createGovernor, type GovernorOptions } from "./governor.ts";
import type { CallOutcome } from "./run.ts";
import { memoryStoreWith } from "./store-doubles.support.ts";

/** Regression tests of issue 8's findings in the run (one per finding, named after it). */

const errorText = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });
const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const gov = (policy: PolicyInput = {}, options: GovernorOptions = {}) =>
  createGovernor(policy, { metrics: false, random: () => 0, ...options });
const modelText = (o: CallOutcome<unknown>) => (o.kind === "ok" ? "" : o.result.content[0].text);
/** The connection dropped mid-call: the write may have happened. */
const timeout = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

describe("issue 8.2: reusing a run id never skips a write", () => {
  it("two runs with the same runId make the same write twice when asked twice", async () => {
    const store = createMemoryStore();
    const governor = gov({ tools: { pay: { effect: "mutating" } } }, { store });
    let payments = 0;
    for (let turn = 0; turn < 3; turn++) {
      const run = governor.startRun({ runId: "conversation-7" });
      const outcome = await run.call({ tool: "pay", args: { amount: 5 } }, async () => {
        payments += 1;
        return ok("paid");
      });
      expect(outcome).toMatchObject({ kind: "ok", replayed: false });
      run.end();
    }
    expect(payments).toBe(3);
  });

  it("a callId that repeats across runs (call_0) is not replayed into another run", async () => {
    const governor = gov({ tools: { pay: { effect: "mutating" } } });
    let payments = 0;
    for (let turn = 0; turn < 2; turn++) {
      const run = governor.startRun();
      const outcome = await run.call(
        { tool: "pay", args: { amount: 5 }, callId: "call_0" },
        async () => {
          payments += 1;
          return ok("paid");
        },
      );
      expect(outcome).toMatchObject({ kind: "ok", replayed: false });
    }
    expect(payments).toBe(2);
  });

  it("the same callId in the same idempotency scope is one logical call, across runs", async () => {
    const governor = gov({ tools: { pay: { effect: "mutating" } } });
    let payments = 0;
    const outcomes: CallOutcome<unknown>[] = [];
    for (let worker = 0; worker < 2; worker++) {
      const run = governor.startRun({ idempotencyScope: "job-42" });
      outcomes.push(
        await run.call({ tool: "pay", args: { amount: 5 }, callId: "call_0" }, async () => {
          payments += 1;
          return ok("paid");
        }),
      );
    }
    expect(payments).toBe(1);
    expect(outcomes[1]).toMatchObject({ kind: "ok", replayed: true });
  });
});

describe("issue 8.7: a write confirmed by the verify step counts as a success", () => {
  it("the next identical write runs instead of being replayed", async () => {
    let writes = 0;
    let lose = true;
    const governor = gov(
      { tools: { book: { effect: "mutating", idempotency: { verify: true } } } },
      { verify: { book: () => ({ effect: "present", result: ok("booked") }) } },
    );
    const run = governor.startRun();
    const execute = async () => {
      writes += 1;
      if (lose) {
        lose = false;
        throw timeout();
      }
      return ok("booked");
    };
    const first = await run.call({ tool: "book", args: { room: 1 } }, execute);
    expect(first).toMatchObject({ kind: "ok", replayed: true });
    const second = await run.call({ tool: "book", args: { room: 1 } }, execute);
    expect(second).toMatchObject({ kind: "ok", replayed: false });
    expect(writes).toBe(2);
  });
});

describe("issue 8.8: a callId's key is the server's and the scope's", () => {
  it("the same tool and callId on two servers are two writes", async () => {
    const governor = gov({ tools: { create: { effect: "mutating" } } });
    const run = governor.startRun({ idempotencyScope: "job-1" });
    const seen: string[] = [];
    for (const server of ["billing", "crm"]) {
      const o = await run.call({ tool: "create", server, args: {}, callId: "c1" }, async () => {
        seen.push(server);
        return ok(server);
      });
      expect(o).toMatchObject({ kind: "ok", replayed: false, value: ok(server) });
    }
    expect(seen).toEqual(["billing", "crm"]);
  });

  it("two tenants with the same callId on one store never see each other's result", async () => {
    const store = createMemoryStore();
    const governor = gov({ tools: { create: { effect: "mutating" } } }, { store });
    for (const tenant of ["tenant-a", "tenant-b"]) {
      const run = governor.startRun({ idempotencyScope: `${tenant}:job-1` });
      const o = await run.call({ tool: "create", args: {}, callId: "call_0" }, async () =>
        ok(tenant),
      );
      expect(o).toMatchObject({ kind: "ok", replayed: false, value: ok(tenant) });
    }
  });
});

/** A store that fails every operation with an error carrying secrets and addresses. */
function brokenStore(): Store {
  const fail = () => {
    throw new Error("connect ECONNREFUSED redis://admin:hunter2@10.0.0.5:6379 key gk_abc");
  };
  return { get: fail, set: fail, increment: fail, claim: fail, settle: fail, entry: fail };
}

/** A store whose answers never come. */
function hangingStore(): Store {
  const never = () => new Promise<never>(() => {});
  return { get: never, set: never, increment: never, claim: never, settle: never, entry: never };
}

describe("issue 8.10: store trouble goes to the host, never to the model", () => {
  it("with an onHostError hook: nothing executes, the model reads a fixed phrase", async () => {
    const host: HostError[] = [];
    const governor = gov(
      { tools: { pay: { effect: "mutating" } } },
      {
        store: brokenStore(),
        onHostError: (e) => {
          host.push(e);
          return undefined;
        },
      },
    );
    let executed = 0;
    const run = governor.startRun();
    const outcome = await run.call({ tool: "pay", args: {} }, async () => {
      executed += 1;
      return ok("paid");
    });
    expect(executed).toBe(0);
    expect(outcome).toMatchObject({ kind: "stop", reason: "store_unavailable" });
    expect(modelText(outcome)).not.toMatch(/redis|10\.0\.0\.5|hunter2|gk_|ECONNREFUSED/);
    expect(host).toHaveLength(1);
    expect(host[0]?.reason).toBe("store_unavailable");
    expect(host[0]?.message).not.toMatch(/redis|10\.0\.0\.5|hunter2/);
    expect(run.summary().reason).toBe("store_unavailable");
  });

  it("without a hook: run.call rejects with a HostError, not the store's own error", async () => {
    const governor = gov({ tools: { get: { effect: "read_only" } } }, { store: brokenStore() });
    let executed = 0;
    const error = await governor
      .startRun()
      .call({ tool: "get", args: {} }, async () => {
        executed += 1;
        return ok("x");
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(executed).toBe(0);
    expect(error).toBeInstanceOf(HostError);
    expect((error as HostError).reason).toBe("store_unavailable");
    expect((error as Error).message).not.toMatch(/redis|10\.0\.0\.5|hunter2/);
  });

  it("a store that cannot record a sent write's outcome never tells the model the call was not made", async () => {
    const store = memoryStoreWith({
      settle: () => {
        throw new Error("READONLY You can't write against a read only replica.");
      },
    });
    const lost = () => Promise.reject(timeout());
    // With a hook, the outcome's text; without, the text an adapter gives for the HostError.
    const host: HostError[] = [];
    const hooked = await gov(
      { tools: { pay: { effect: "mutating" } } },
      { store, onHostError: (e) => void host.push(e) },
    )
      .startRun()
      .call({ tool: "pay", args: {} }, lost);
    expect(hooked).toMatchObject({ kind: "stop", reason: "store_unavailable" });
    expect(hooked.kind === "stop" && hooked.idempotencyKey).toMatch(/^gk_/);
    const thrown = await gov({ tools: { pay: { effect: "mutating" } } }, { store })
      .startRun()
      .call({ tool: "pay", args: {} }, lost)
      .then(
        () => undefined,
        (e: unknown) => e as HostError,
      );
    expect(thrown).toBeInstanceOf(HostError);
    // Without the hook, the thrown HostError is all the host gets: it names the key.
    expect((thrown as HostError).idempotencyKey).toMatch(/^gk_/);
    expect(host[0]?.idempotencyKey).toBe(hooked.kind === "stop" ? hooked.idempotencyKey : "");
    for (const shown of [modelText(hooked), hostErrorText(thrown as HostError)]) {
      expect(shown).not.toMatch(/not made/);
      expect(shown).toMatch(/may have happened/);
    }
    expect(host[0]?.certainty).toBe("unknown");
    // A store that fails before anything is sent still says so.
    const refused = await gov(
      { tools: { pay: { effect: "mutating" } } },
      { store: brokenStore(), onHostError: () => undefined },
    )
      .startRun()
      .call({ tool: "pay", args: {} }, lost);
    expect(modelText(refused)).toMatch(/not made/);
  });

  it("a host-routed failure after a lost answer names the write's key on the HostError", async () => {
    let n = 0;
    const thrown = await gov({
      tools: {
        pay: {
          effect: "mutating",
          idempotency: { honorsKeys: true },
          retry: { baseDelayMs: 1, maxDelayMs: 1 },
        },
      },
    })
      .startRun()
      .call({ tool: "pay", args: {} }, async () => {
        n += 1;
        // The first answer is lost; the retry meets a JSON-RPC error from the peer.
        if (n === 1) throw timeout();
        throw Object.assign(new Error("Internal error"), { code: -32603 });
      })
      .then(
        () => undefined,
        (e: unknown) => e as HostError,
      );
    expect(n).toBe(2);
    expect(thrown).toBeInstanceOf(HostError);
    expect(thrown).toMatchObject({
      certainty: "unknown",
      idempotencyKey: expect.stringMatching(/^gk_/),
    });
  });

  it("a store that fails after a successful write still hands the model the result", async () => {
    const store = memoryStoreWith({
      settle: () => {
        throw new Error("READONLY You can't write against a read only replica.");
      },
    });
    const governor = gov({ tools: { pay: { effect: "mutating" } } }, { store });
    const outcome = await governor
      .startRun()
      .call({ tool: "pay", args: {} }, async () => ok("paid"));
    expect(outcome).toMatchObject({ kind: "ok", value: ok("paid") });
  });
});

describe("issue 8.3 (run): a ledger that lost its data stops the run for a person", () => {
  it("a claim refused as ledger_lost executes nothing and is person-resolvable", async () => {
    const store = memoryStoreWith({
      claim: () => {
        throw new StoreError({
          reason: "ledger_lost",
          operation: "claim",
          message: "The ledger lost its data",
        });
      },
    });
    const host: HostError[] = [];
    const governor = gov(
      { tools: { pay: { effect: "mutating" } } },
      { store, onHostError: (e) => void host.push(e) },
    );
    let executed = 0;
    const outcome = await governor.startRun().call({ tool: "pay", args: {} }, async () => {
      executed += 1;
      return ok("paid");
    });
    expect(executed).toBe(0);
    expect(outcome).toMatchObject({
      kind: "stop",
      reason: "store_unavailable",
      personResolvable: true,
    });
    expect(host[0]?.failureCode).toBe("ledger_lost");
  });
});

describe("store trouble after the verify step found no effect", () => {
  it("tells the model and the host the write did not happen, and names no key", async () => {
    const memory = createMemoryStore();
    const settled: string[] = [];
    const store = memoryStoreWith(
      {
        // The failed attempt's one settle, made once the verify step answered (`failed`: the
        // write's content entry, then its key), fails.
        settle: (_key, st) => {
          settled.push(st);
          throw new StoreError({ reason: "unavailable", operation: "settle", message: "down" });
        },
      },
      memory,
    );
    const host: HostError[] = [];
    const governor = gov(
      { tools: { charge: { effect: "mutating", idempotency: { verify: true } } } },
      {
        store,
        verify: { charge: () => ({ effect: "absent" }) },
        onHostError: (e) => void host.push(e),
      },
    );
    const outcome = await governor.startRun().call({ tool: "charge", args: {} }, async () => {
      throw timeout();
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "store_unavailable" });
    expect(outcome.kind === "stop" && outcome.idempotencyKey).toBeFalsy();
    expect(modelText(outcome)).not.toMatch(/may have happened/);
    expect(host[0]).toMatchObject({ certainty: "failed", idempotencyKey: undefined });
    expect(settled).toEqual(["failed"]);
  });
});

describe("a full ledger is the host's to fix, not a rule of the service", () => {
  // The memory store keeps succeeded writes for their retention (24 h) and refuses new claims past
  // maxLedgerEntries: a busy process reaches it. The run used to stop with business_rule and tell
  // the model that the service refused the request by one of its rules.
  const pay = (executed: { n: number }) => async () => {
    executed.n += 1;
    return ok("paid");
  };

  it("past maxLedgerEntries settled entries make room (issue 26.5); writes in doubt filling it refuse", async () => {
    // Each write holds two entries while it runs: its key and its content's (doubt.ts).
    const store = createMemoryStore({ maxLedgerEntries: 4 });
    const host: HostError[] = [];
    const governor = gov(
      { tools: { pay: { effect: "mutating" } } },
      { store, onHostError: (e) => void host.push(e) },
    );
    const executed = { n: 0 };
    const run = governor.startRun();
    // Settled writes never refuse a new one: the oldest settled go first.
    for (const amount of [1, 2, 3, 4]) {
      expect(await run.call({ tool: "pay", args: { amount } }, pay(executed))).toMatchObject({
        kind: "ok",
      });
    }
    expect(host).toHaveLength(0);
    // Two writes in doubt fill the ledger with pending and uncertain entries.
    const lost = governor.startRun();
    await lost.call({ tool: "pay", args: { amount: 5 } }, async () => {
      throw timeout();
    });
    const lost2 = governor.startRun();
    await lost2.call({ tool: "pay", args: { amount: 6 } }, async () => {
      throw timeout();
    });
    const outcome = await run.call({ tool: "pay", args: { amount: 7 } }, pay(executed));
    expect(executed.n).toBe(4);
    expect(outcome).toMatchObject({
      kind: "stop",
      reason: "store_unavailable",
      personResolvable: true,
    });
    expect(modelText(outcome)).not.toMatch(/rule|ledger|maxLedgerEntries|settle|gk_/i);
    expect(host).toHaveLength(1);
    expect(host[0]).toMatchObject({ reason: "store_unavailable", failureCode: "ledger_full" });
    expect(host[0]?.message).toMatch(/ledger is full/);
    expect(StoreError.isInstance(host[0]?.cause)).toBe(true);
    expect(run.summary()).toMatchObject({ reason: "store_unavailable", personResolvable: true });
  });

  it("past maxUnsettled (writes in doubt) the same, and nothing executes", async () => {
    // A write in doubt holds two unsettled entries: its key and its content's (doubt.ts).
    const store = createMemoryStore({ maxUnsettled: 2 });
    const governor = gov({ tools: { pay: { effect: "mutating" } } }, { store });
    // A write whose response was lost: its key stays uncertain until a person settles it.
    const first = await governor.startRun().call({ tool: "pay", args: { amount: 1 } }, async () => {
      throw timeout();
    });
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const executed = { n: 0 };
    const error = await governor
      .startRun()
      .call({ tool: "pay", args: { amount: 2 } }, pay(executed))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(executed.n).toBe(0);
    expect(error).toBeInstanceOf(HostError);
    expect(error).toMatchObject({ reason: "store_unavailable", failureCode: "ledger_full" });
  });

  it("a read-only call still runs when the ledger is full (it takes no claim)", async () => {
    const store = createMemoryStore({ maxLedgerEntries: 2 });
    const governor = gov(
      { tools: { pay: { effect: "mutating" }, look: { effect: "read_only" } } },
      { store, onHostError: () => {} },
    );
    const executed = { n: 0 };
    await governor.startRun().call({ tool: "pay", args: { amount: 1 } }, pay(executed));
    const outcome = await governor.startRun().call({ tool: "look", args: {} }, pay(executed));
    expect(outcome).toMatchObject({ kind: "ok" });
    expect(executed.n).toBe(2);
  });
});

describe("issue 9.4 (core sibling): host-facing text is redacted too", () => {
  it("a JSON-RPC error's text reaches onHostError redacted; the raw error stays in cause", async () => {
    const host: HostError[] = [];
    const governor = gov({}, { onHostError: (e) => void host.push(e) });
    const raw = Object.assign(
      new Error("Internal error: token sk-live-0123456789abcdefghij at /srv/app/handler.js:10:5"),
      { code: -32603 },
    );
    await governor.startRun().call({ tool: "t", args: {} }, async () => {
      throw raw;
    });
    expect(host[0]?.message).not.toMatch(/sk-live-0123456789|\/srv\/app/);
    expect(host[0]?.cause).toBe(raw);
  });
});

describe("issue 8.9 (run): nested sensitive arguments never reach the model", () => {
  it("edits[0].oldText and a bare name at depth are redacted from the model's text", async () => {
    const governor = gov({
      tools: { edit: { effect: "read_only", sensitiveArgs: ["edits[].oldText", "token"] } },
    });
    const args = {
      edits: [{ oldText: "the secret paragraph", newText: "x" }],
      auth: { token: "tok_9f8e7d6c5b4a" },
    };
    const outcome = await governor
      .startRun()
      .call({ tool: "edit", args }, async () =>
        errorText('Invalid edit: "the secret paragraph" not found (auth tok_9f8e7d6c5b4a)'),
      );
    expect(outcome.kind).toBe("model");
    expect(modelText(outcome)).not.toContain("the secret paragraph");
    expect(modelText(outcome)).not.toContain("tok_9f8e7d6c5b4a");
  });
});

describe("issue 8.1 (run): text-only uncertainty does not fill the fail-closed ledger", () => {
  it("a run's key left uncertain by a correction is released when the run ends", async () => {
    const store = createMemoryStore();
    const run = gov({ tools: { create: { effect: "mutating" } } }, { store }).startRun();
    const outcome = await run.call({ tool: "create", args: { date: "tomorrow" } }, async () =>
      errorText("Invalid date format: expected YYYY-MM-DD"),
    );
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
    const events: string[] = [];
    // While the run lasts, the identical call is refused (the first may have written).
    const again = await run.call({ tool: "create", args: { date: "tomorrow" } }, async () => {
      events.push("executed");
      return ok("x");
    });
    expect(events).toEqual([]);
    expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    // That key was handed to the host: it stays for a person.
    const key = again.kind === "stop" ? again.idempotencyKey : undefined;
    expect(store.entry(key as string)?.state).toBe("uncertain");
  });

  it("a correction's key is settled when the run ends, so the ledger does not fill", async () => {
    const store = createMemoryStore({ maxUnsettled: 2 });
    const governor = gov({ tools: { create: { effect: "mutating" } } }, { store });
    for (let i = 0; i < 5; i++) {
      const run = governor.startRun();
      const outcome = await run.call({ tool: "create", args: { i } }, async () =>
        errorText("Invalid date format: expected YYYY-MM-DD"),
      );
      expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
      run.end();
    }
    const run = governor.startRun();
    const outcome = await run.call({ tool: "create", args: { ok: true } }, async () => ok("made"));
    expect(outcome).toMatchObject({ kind: "ok" });
  });
});

describe("issue 8.13: store calls are bounded by the run", () => {
  it("an abort frees a call waiting on a stalled store at once", async () => {
    const ac = new AbortController();
    const governor = gov({ tools: { get: { effect: "read_only" } } }, { store: hangingStore() });
    const run = governor.startRun({ signal: ac.signal });
    const started = Date.now();
    const pending = run.call({ tool: "get", args: {} }, async () => ok("x"));
    setTimeout(() => ac.abort(), 20);
    const outcome = await pending;
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("a stalled store fails closed after storeTimeoutMs", async () => {
    const governor = gov(
      { tools: { pay: { effect: "mutating" } } },
      { store: hangingStore(), storeTimeoutMs: 30, onHostError: () => undefined },
    );
    let executed = 0;
    const outcome = await governor.startRun().call({ tool: "pay", args: {} }, async () => {
      executed += 1;
      return ok("x");
    });
    expect(executed).toBe(0);
    expect(outcome).toMatchObject({ kind: "stop", reason: "store_unavailable" });
  });

  it("storeTimeoutMs is validated", () => {
    expect(() => gov({}, { storeTimeoutMs: 0 })).toThrow(/storeTimeoutMs must be a positive/);
    expect(() => gov({}, { storeTimeoutMs: Number.NaN })).toThrow(GovernorError);
  });
});

describe("issue 8.14: run.end() aborts attempts in flight", () => {
  it("the attempt sees its signal abort, the write settles uncertain, no timer is left", async () => {
    const store = createMemoryStore();
    const governor = gov({ tools: { pay: { effect: "mutating" } } }, { store });
    const run = governor.startRun();
    const timersBefore = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    let sawAbort = false;
    const pending = run.call({ tool: "pay", args: {} }, (ctx) => {
      return new Promise((_, reject) => {
        ctx.signal.addEventListener("abort", () => {
          sawAbort = true;
          reject(ctx.signal.reason);
        });
      });
    });
    await new Promise((r) => setTimeout(r, 10));
    const summary = run.end();
    expect(summary.reason).toBe("aborted");
    const outcome = await pending;
    expect(sawAbort).toBe(true);
    expect(outcome.kind).toBe("stop");
    const key = outcome.kind === "stop" ? outcome.idempotencyKey : undefined;
    expect(key).toBeDefined();
    expect(store.entry(key as string)?.state).toBe("uncertain");
    const timersAfter = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    expect(timersAfter).toBeLessThanOrEqual(timersBefore);
  });

  it("a run that ends with nothing in flight still completes", async () => {
    const run = gov().startRun();
    await run.call({ tool: "get", args: {} }, async () => ok("x"));
    expect(run.end().reason).toBe("completed");
  });
});

describe("issue 8.15: bad arguments get an outcome, never a rejection", () => {
  it("circular arguments are refused before anything is sent", async () => {
    const args: Record<string, unknown> = { a: 1 };
    args.self = args;
    let executed = 0;
    const outcome = await gov()
      .startRun()
      .call({ tool: "t", args }, async () => {
        executed += 1;
        return ok("x");
      });
    expect(executed).toBe(0);
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
    expect(modelText(outcome)).toMatch(/not valid JSON/);
  });

  it("what the arguments threw when read reaches the model redacted", async () => {
    const secret = "postgres://admin:Sup3rS3cretPw@db.internal.corp:5432/app";
    const token = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
    const cycle: Record<string, unknown> = {};
    cycle[token] = cycle;
    const cases: Record<string, unknown>[] = [
      {
        conn: {
          toJSON() {
            throw new Error(`cannot serialise ${secret} at /home/app/src/db.ts:12:3`);
          },
        },
      },
      {
        get conn() {
          throw new Error(`lost ${secret}`);
        },
      },
      new Proxy(
        {},
        {
          ownKeys() {
            throw new Error(`trap ${secret}`);
          },
        },
      ),
      // A secret in an argument's name, spelled out in the cycle's path.
      cycle,
    ];
    for (const args of cases) {
      const outcome = await gov()
        .startRun()
        .call({ tool: "t", args }, async () => ok("x"));
      expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
      // A tool with sensitive arguments reads them first: still an outcome, not a rejection.
      expect(
        await gov({ tools: { t: { sensitiveArgs: ["conn"] } } })
          .startRun()
          .call({ tool: "t", args }, async () => ok("x")),
      ).toMatchObject({ kind: "model", action: "correct_arguments" });
      const shown = modelText(outcome);
      expect(shown).toMatch(/not valid JSON/);
      for (const leak of ["Sup3rS3cretPw", "db.internal", "/home/app", token]) {
        expect(shown).not.toContain(leak);
      }
    }
  });

  it("what a sensitive argument threw when read never reaches the model", async () => {
    // Its value is unknown, so it cannot be removed from what the getter said: nothing of it goes.
    const args = {
      get password() {
        throw new Error("password hunter2-horse is not allowed here");
      },
    };
    const outcome = await gov({ tools: { t: { sensitiveArgs: ["password"] } } })
      .startRun()
      .call({ tool: "t", args }, async () => ok("x"));
    expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
    expect(modelText(outcome)).toMatch(/not valid JSON/);
    expect(modelText(outcome)).not.toContain("hunter2");
  });

  it("arguments that throw an error whose message is not a string get an outcome too", async () => {
    const odd = Object.assign(new Error("x"), { message: { detail: "x" } as unknown as string });
    const throwing = new Proxy(new Error("y"), {
      get() {
        throw new Error("the message getter threw");
      },
    });
    for (const thrown of [odd, throwing]) {
      const args = {
        a: {
          toJSON() {
            throw thrown;
          },
        },
      };
      for (const sensitiveArgs of [[], ["a"]]) {
        const outcome = await gov({ tools: { t: { sensitiveArgs } } })
          .startRun()
          .call({ tool: "t", args }, async () => ok("x"));
        expect(outcome).toMatchObject({ kind: "model", action: "correct_arguments" });
      }
    }
  });
});

describe("issue 8.16: the loop detector keeps hashes, not results", () => {
  it("a run's successful results can be collected while the run is open", () => {
    // A child process with --expose-gc: whether the run still holds results is a GC question.
    const script = `
      import { createGovernor } from ${JSON.stringify(new URL("./governor.ts", import.meta.url).href)};
      const run = createGovernor({}, { metrics: false }).startRun();
      let ref;
      {
        const big = { content: [{ type: "text", text: "x".repeat(1_000_000) }] };
        ref = new WeakRef(big);
        await run.call({ tool: "get", args: { id: 1 } }, async () => big);
      }
      for (let i = 0; i < 3; i++) { await new Promise((r) => setTimeout(r, 0)); globalThis.gc(); }
      process.stdout.write(ref.deref() === undefined ? "collected" : "retained");
      run.end();
    `;
    const out = execFileSync(
      process.execPath,
      [
        "--expose-gc",
        "--conditions=source",
        "--import",
        "tsx",
        "--input-type=module",
        "-e",
        script,
      ],
      { cwd: fileURLToPath(new URL("../../../..", import.meta.url)), encoding: "utf8" },
    );
    expect(out).toBe("collected");
  });
});

describe("issue 8, smaller ones", () => {
  it("the repeat stop says 3 times on the third", async () => {
    const run = gov({ tools: { get: { effect: "read_only" } } }).startRun();
    let last: CallOutcome<unknown> | undefined;
    for (let i = 0; i < 3; i++) {
      last = await run.call({ tool: "get", args: { id: i } }, async () =>
        errorText(`No note with id "n${i}"`),
      );
    }
    expect(last).toMatchObject({ kind: "stop", reason: "repeated_failure" });
    expect(modelText(last as CallOutcome<unknown>)).toMatch(/3 times/);
  });

  it("a denied call mints no key and counts no failure", async () => {
    const events: GovernorEvent[] = [];
    const run = gov(
      { tools: { drop: { access: "deny" } } },
      { onEvent: (e) => events.push(e) },
    ).startRun();
    const outcome = await run.call({ tool: "drop", args: {} }, async () => ok("x"));
    expect(outcome).toMatchObject({ kind: "model", action: "switch_tool" });
    const decision = events.find((e) => e.type === "decision");
    expect(decision).toBeDefined();
    expect(decision && "idempotencyKey" in decision).toBe(false);
    expect(run.summary()).toMatchObject({ failures: 0, calls: 0 });
  });

  it("a loop_detected stop shows in the summary's actions", async () => {
    const run = gov({ tools: { get: { effect: "read_only" } } }).startRun();
    let outcome: CallOutcome<unknown> | undefined;
    for (let i = 0; i < 6 && outcome?.kind !== "stop"; i++) {
      outcome = await run.call({ tool: "get", args: { id: 1 } }, async () => ok("same"));
    }
    expect(outcome).toMatchObject({ kind: "stop", reason: "loop_detected" });
    expect(run.summary().actions.stop).toBe(1);
  });
});

describe("issue 9.5 (core): a call's own signal stops its retries at once", () => {
  it("aborting the call's signal during a backoff ends the call and the run", async () => {
    const ac = new AbortController();
    let executions = 0;
    const run = gov(
      { tools: { get: { effect: "read_only", retry: { attempts: 10, baseDelayMs: 1_000 } } } },
      { random: () => 0.99 },
    ).startRun();
    const started = Date.now();
    const pending = run.call({ tool: "get", args: {}, signal: ac.signal }, async () => {
      executions += 1;
      return errorText("503 Service Unavailable");
    });
    setTimeout(() => ac.abort(), 30);
    const outcome = await pending;
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(executions).toBe(1);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(run.summary().reason).toBe("aborted");
  });

  it("an already aborted call signal sends nothing", async () => {
    let executions = 0;
    const outcome = await gov()
      .startRun()
      .call({ tool: "get", args: {}, signal: AbortSignal.abort() }, async () => {
        executions += 1;
        return ok("x");
      });
    expect(executions).toBe(0);
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
  });
});

describe("issue 8.12 (sibling): the policy's redaction patterns run in linear time", () => {
  it("a backtracking pattern on a long text from a broken server redacts promptly", async () => {
    const { redactForModel } = await import("../judge/assess.ts");
    const { loadPolicy } = await import("../policy/policy.ts");
    // On V8's engine `(a+)+b` takes exponential time on a run of a's with no b.
    const policy = loadPolicy({ redaction: { patterns: ["(a+)+b", "quota.*reset"] } });
    const started = Date.now();
    const out = redactForModel(`${"a".repeat(60)}! quota will reset`, policy);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(out).toContain("[redacted]");
  });

  it("a pattern RE2 cannot run is refused at load with its path", async () => {
    const { loadPolicy } = await import("../policy/policy.ts");
    expect(() => loadPolicy({ redaction: { patterns: ["(?=x)y"] } })).toThrow(
      /redaction\.patterns\[0\]|redaction\.patterns\.0/,
    );
  });
});

describe("a write's text naming another tool as unknown never switches tools", () => {
  it("deploy answering 'Tool kubectl not found' is not told to use deploy_v2 (it ran)", async () => {
    const governor = gov({
      tools: { deploy: { effect: "mutating", alternatives: ["deploy_v2"] } },
    });
    const run = governor.startRun();
    let deploys = 0;
    const outcome = await run.call({ tool: "deploy", args: { app: "web" } }, async () => {
      deploys += 1;
      return errorText("MCP error -32602: Tool kubectl not found");
    });
    expect(deploys).toBe(1);
    expect(outcome).toMatchObject({
      kind: "model",
      action: "correct_arguments",
      reason: "not_found",
    });
    expect(modelText(outcome)).not.toMatch(/deploy_v2|does not exist/);
  });
});
