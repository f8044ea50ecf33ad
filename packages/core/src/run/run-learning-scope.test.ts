// Issue 27.4: what is learned is kept per tenant, so one tenant's bad day cannot switch off
// another tenant's retries. Real runs on one memory store shared by both tenants.
import { describe, expect, it } from "vitest";
import { learnedKey, learningScopeOf, parseLearnedKey } from "../judge/learned.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import { createGovernor } from "./governor.ts";
import type { RunOptions } from "./types.ts";

const failure = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });
const success = (t: string) => ({ content: [{ type: "text", text: t }] });
const OUTAGE = "503 Service Unavailable";

function setup(store: Store) {
  const t = 1_000_000;
  return createGovernor(
    {
      tools: {
        search: {
          effect: "read_only",
          retry: { attempts: 3, baseDelayMs: 0 },
          breaker: { threshold: 1_000 },
        },
      },
    },
    { store, metrics: false, random: () => 0, now: () => t },
  );
}

/** One run of tenant `options` whose call of `search` fails with a 503 `failures` times first. */
async function call(gov: ReturnType<typeof setup>, options: RunOptions, failures: number) {
  const run = gov.startRun(options);
  let attempts = 0;
  const out = await run.call({ tool: "search", args: { q: "x" } }, async () => {
    attempts++;
    return attempts > failures ? success("ok") : failure(OUTAGE);
  });
  run.end();
  return { out, attempts };
}

describe("learning per tenant", () => {
  it("one tenant's retries that never recovered do not make another tenant's 503 stop as learned_futile", async () => {
    const store = createMemoryStore();
    const gov = setup(store);
    // Tenant A has a bad day: four calls whose retries never recover.
    for (let i = 0; i < 4; i++) {
      const { out } = await call(gov, { idempotencyScope: `tenant-a:job-${i}` }, 99);
      expect(out).toMatchObject({ kind: "stop", reason: "retries_exhausted" });
    }
    // A's next call is demoted at once: learning works within the tenant.
    const a = await call(gov, { idempotencyScope: "tenant-a:job-9" }, 99);
    expect(a.out).toMatchObject({ kind: "stop", reason: "learned_futile" });
    expect(a.attempts).toBe(1);
    // Tenant B's 503 on the same server, tool and fingerprint is retried, and recovers.
    const b = await call(gov, { idempotencyScope: "tenant-b:job-1" }, 1);
    expect(b.out).toMatchObject({ kind: "ok" });
    expect(b.attempts).toBe(2);
    // So is a run that names its scope itself.
    const c = await call(gov, { learning: { scope: "tenant-c" } }, 1);
    expect(c.out).toMatchObject({ kind: "ok" });
  });

  it("without a scope, learned records are shared by every run on the store (as before)", async () => {
    const store = createMemoryStore();
    const gov = setup(store);
    for (let i = 0; i < 4; i++) await call(gov, {}, 99);
    const next = await call(gov, { idempotencyScope: "job-without-tenant" }, 1);
    expect(next.out).toMatchObject({ kind: "stop", reason: "learned_futile" });
  });

  it("a host's learning.scope wins over the idempotency scope's tenant prefix", async () => {
    const store = createMemoryStore();
    const gov = setup(store);
    for (let i = 0; i < 4; i++) {
      await call(gov, { idempotencyScope: `a:${i}`, learning: { scope: "shared-pool" } }, 99);
    }
    const same = await call(
      gov,
      { idempotencyScope: "b:1", learning: { scope: "shared-pool" } },
      1,
    );
    expect(same.out).toMatchObject({ kind: "stop", reason: "learned_futile" });
    const other = await call(gov, { idempotencyScope: "a:5" }, 1);
    expect(other.out).toMatchObject({ kind: "ok" });
  });
});

describe("learningScopeOf and scoped keys", () => {
  it("takes the host's scope, else the tenant prefix before the first colon, else none", () => {
    expect(learningScopeOf({ learning: { scope: "t1" }, idempotencyScope: "t2:job" })).toBe("t1");
    expect(learningScopeOf({ idempotencyScope: "acme:job-7:step" })).toBe("acme");
    expect(learningScopeOf({ idempotencyScope: "job-7" })).toBeUndefined();
    expect(learningScopeOf({ idempotencyScope: ":job-7" })).toBeUndefined();
    expect(learningScopeOf({})).toBeUndefined();
  });

  it("a scoped key keeps the server and tool prefix and reads back with its scope", () => {
    const shared = learnedKey("srv", "search", "0123456789abcdef");
    const scoped = learnedKey("srv", "search", "0123456789abcdef", "acme/eu");
    expect(scoped).not.toBe(shared);
    expect(scoped.startsWith(shared)).toBe(true);
    expect(learnedKey("srv", "search", "0123456789abcdef", "other")).not.toBe(scoped);
    expect(parseLearnedKey(scoped)).toEqual({
      server: "srv",
      tool: "search",
      fingerprint: "0123456789abcdef",
      scope: "acme/eu",
    });
    expect(parseLearnedKey(shared)).toEqual({
      server: "srv",
      tool: "search",
      fingerprint: "0123456789abcdef",
    });
  });
});

describe("learning.scope from the host is checked at startRun", () => {
  it("refuses a scope that is not a non-empty string of at most 128 characters, saying what is accepted", () => {
    const gov = setup(createMemoryStore());
    for (const scope of [42, "", "x".repeat(129), null]) {
      expect(
        () => gov.startRun({ learning: { scope: scope as unknown as string } }),
        String(scope),
      ).toThrow(/learning\.scope must be a string of 1 to 128 characters/);
    }
    expect(() => gov.startRun({ learning: { scope: "tenant-a/β" } })).not.toThrow();
  });
});
