// The index of writes in doubt (docs/idempotency.md, "A write in doubt") on the SQLite store:
// processes sharing one file (a store each) refuse an identical write in doubt, and a person's
// settle from another process frees it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor } from "@governor/core";
import { afterAll, describe, expect, it } from "vitest";
import { sqliteModule } from "./sqlite-api.ts";
import { createSqliteStore, type SqliteStore } from "./sqlite-store.ts";

const available = sqliteModule() !== undefined;
const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const reset = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

describe.runIf(available)("writes in doubt on SQLite", () => {
  const dir = mkdtempSync(join(tmpdir(), "governor-sqlite-doubt-"));
  const path = join(dir, "ledger.db");
  const stores: SqliteStore[] = [];
  afterAll(() => {
    for (const s of stores) s.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const gov = () => {
    const store = createSqliteStore({ path });
    stores.push(store);
    return createGovernor(
      {
        tools: {
          charge: {
            effect: "mutating",
            idempotency: { honorsKeys: false },
            retry: { attempts: 1 },
          },
        },
      },
      { metrics: false, random: () => 0, store },
    );
  };

  it("refused from another process until a person settles the key, then sent", async () => {
    let sent = 0;
    const first = await gov()
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "charge", args: { amount: 5 }, callId: "c1" }, async () => {
        sent += 1;
        throw reset();
      });
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    const key = first.kind === "stop" ? (first.idempotencyKey as string) : "";
    const charge = async () => {
      sent += 1;
      return ok("charged");
    };
    const refused = await gov()
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "charge", args: { amount: 5 }, callId: "c2" }, charge);
    expect(refused).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(sent).toBe(1);
    await gov().settle(key, "succeeded");
    const again = await gov()
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "charge", args: { amount: 5 }, callId: "c3" }, charge);
    expect(again).toMatchObject({ kind: "ok" });
    expect(sent).toBe(2);
  });
});

describe.runIf(available)(
  "a failed write's key settled once, when its verify step answered, on SQLite",
  () => {
    const dir = mkdtempSync(join(tmpdir(), "governor-sqlite-settle-"));
    const store = available ? createSqliteStore({ path: join(dir, "ledger.db") }) : undefined;
    afterAll(() => {
      store?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it("the verify step found no effect: freed once, then the retry's success (was: uncertain, then failed)", async () => {
      const inner = store as SqliteStore;
      const settles: [key: string, to: string][] = [];
      const counted = new Proxy(inner, {
        get(target, name) {
          if (name === "settle") {
            return (...args: Parameters<SqliteStore["settle"]>) => {
              settles.push([args[0].slice(0, 3), args[1]]);
              return target.settle(...args);
            };
          }
          const value: unknown = Reflect.get(target, name, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const governor = createGovernor(
        {
          tools: {
            charge: {
              effect: "mutating",
              idempotency: { verify: true },
              retry: { attempts: 2, baseDelayMs: 1 },
            },
          },
        },
        {
          metrics: false,
          random: () => 0,
          store: counted,
          verify: { charge: () => ({ effect: "absent" }) },
        },
      );
      const keys: (string | undefined)[] = [];
      const outcome = await governor
        .startRun()
        .call({ tool: "charge", args: { amount: 5 } }, async (ctx) => {
          keys.push(ctx.idempotencyKey);
          if (keys.length === 1) throw reset();
          return ok("charged");
        });
      expect(outcome).toMatchObject({ kind: "ok", attempts: 2, replayed: false });
      expect(keys[1]).toBe(keys[0]);
      // Per attempt, its content's entry then its key: one settle each.
      expect(settles).toEqual([
        ["gd_", "failed"],
        ["gk_", "failed"],
        ["gd_", "failed"],
        ["gk_", "succeeded"],
      ]);
      expect(inner.entry(keys[0] as string)?.state).toBe("succeeded");
    });
  },
);
