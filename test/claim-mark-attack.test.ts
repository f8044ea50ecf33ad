// Attacks on the claim marks (docs/stores.md "Claims and late settles") on every real store: two
// claims of a key in the same millisecond, a claimer whose clock went back, and a layout 1 SQLite
// file opened by two processes at once.

import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { promisify } from "node:util";
import type { ClaimResult } from "@governor/core";
import { createSqliteStore } from "@governor/sqlite";
import { describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { sqliteModule } from "../packages/sqlite/src/sqlite-api.ts";
import { everyStore } from "./every-store.ts";

const redis = await sharedRedis("claim-mark attacks on Redis");
const { dir, stores, sqlites } = everyStore(redis, "governor-marks-");

const markOf = (claim: ClaimResult): number => {
  expect(claim.status).toBe("claimed");
  return (claim as { claimedAt: number }).claimedAt;
};
const opts = (now: number, allowUncertain = false, leaseMs = 60_000) => ({
  now,
  allowUncertain,
  leaseMs,
});

describe.each(stores)("claim marks on the %s store", (_name, ready, make) => {
  it.runIf(ready)(
    "a run's own entry released while its write is out keeps its mark: the holder's late settle still lands",
    async () => {
      // SQLite's trigger that marks a layout 1 writer's claims ran on every update of a pending
      // row, `release`'s too (it drops the row's owner): the row was marked anew, the holder's
      // settle naming its claim dropped, and the entry held for good.
      const store = make();
      const t = Date.now();
      const k = `released-${randomUUID()}`;
      const a = markOf(await store.claim(k, "h", { ...opts(t), owner: "run-1" }));
      await store.release?.("run-1");
      expect((await store.entry(k))?.state).toBe("pending");
      await store.settle(k, "failed", { now: t + 10, claimedAt: a });
      expect((await store.entry(k))?.state).toBe("failed");
    },
  );

  it.runIf(ready)(
    "claims in one millisecond, and a claimer whose clock went back, never share a mark: a stale settle cannot free the new claim",
    async () => {
      const store = make();
      const t = Date.now();
      const k = `mark-${randomUUID()}`;
      const a = markOf(await store.claim(k, "h", opts(t)));
      await store.settle(k, "failed", { now: t, claimedAt: a });
      // Claimed again in the same millisecond.
      const b = markOf(await store.claim(k, "h", opts(t)));
      expect(b).toBeGreaterThan(a);
      // The first attempt's second (late) settle is not the holder's: dropped.
      await store.settle(k, "failed", { now: t, claimedAt: a });
      await store.settle(k, "uncertain", { now: t, claimedAt: a });
      expect((await store.entry(k))?.state).toBe("pending");
      expect((await store.claim(k, "h", opts(t))).status).toBe("in_flight");
      await store.settle(k, "failed", { now: t, claimedAt: b });
      // A claimer whose clock is 10 s behind: its mark is still past the one before.
      const c = markOf(await store.claim(k, "h", opts(t - 10_000)));
      expect(c).toBeGreaterThan(b);
      await store.settle(k, "failed", { now: t, claimedAt: b });
      expect((await store.entry(k))?.state).toBe("pending");
      // The holder's own settle still applies.
      await store.settle(k, "uncertain", { now: t - 9_000, claimedAt: c });
      expect((await store.entry(k))?.state).toBe("uncertain");
      // A success ends every claim, also one made with a clock behind it afterwards.
      const d = markOf(await store.claim(k, "h", opts(t - 20_000, true)));
      expect(d).toBeGreaterThan(c);
      await store.settle(k, "succeeded", { now: t, claimedAt: d });
      await store.settle(k, "failed", { now: t, claimedAt: d });
      expect((await store.entry(k))?.state).toBe("succeeded");
    },
  );
});

const run = promisify(execFile);

describe.runIf(sqliteModule() !== undefined)(
  "a layout 1 SQLite file opened by two processes at once",
  () => {
    it("is upgraded once: both open, the pending row keeps its claim, and claims after are marked", async () => {
      const path = join(dir, `${randomUUID()}.db`);
      const { DatabaseSync } = (await import("node:sqlite" as string)) as {
        DatabaseSync: new (
          p: string,
        ) => { exec(s: string): void; prepare(s: string): { get(): unknown }; close(): void };
      };
      const old = new DatabaseSync(path);
      old.exec(`PRAGMA journal_mode = WAL;
      CREATE TABLE governor_ledger (key TEXT PRIMARY KEY, args_hash TEXT NOT NULL,
      state TEXT NOT NULL, updated_at REAL NOT NULL, lease_ms REAL NOT NULL, result TEXT,
      result_unavailable INTEGER NOT NULL DEFAULT 0, expires_at REAL, owner TEXT);
      INSERT INTO governor_ledger (key, args_hash, state, updated_at, lease_ms)
        VALUES ('held', 'h1', 'pending', 1000, 60000);
      PRAGMA user_version = 1;`);
      old.close();
      // Each process opens the file, claims a key of its own and says what it got.
      const script = `
      const { createSqliteStore } = await import(${JSON.stringify(join(process.cwd(), "packages/sqlite/src/index.ts"))});
      const store = createSqliteStore({ path: ${JSON.stringify(path)} });
      const claim = store.claim("own-" + process.pid, "h", { now: Date.now(), allowUncertain: false, leaseMs: 60000 });
      process.stdout.write(JSON.stringify(claim));
      store.close();
    `;
      const open = () =>
        run(
          process.execPath,
          ["--conditions=source", "--import", "tsx", "--input-type=module", "-e", script],
          { cwd: process.cwd() },
        );
      const answers = await Promise.all([open(), open()]);
      for (const { stdout } of answers) {
        expect(JSON.parse(stdout)).toMatchObject({
          status: "claimed",
          claimedAt: expect.any(Number),
        });
      }
      const store = createSqliteStore({ path });
      sqlites.push(store);
      // The pending row's claim is its holder's now, as layout 1 named it: its settle applies once.
      store.settle("held", "uncertain", { now: 2_000, claimedAt: 999 });
      expect(store.entry("held")?.state).toBe("pending");
      store.settle("held", "failed", { now: 2_000, claimedAt: 1_000 });
      expect(store.entry("held")?.state).toBe("failed");
      const db = new DatabaseSync(path);
      try {
        expect(db.prepare("PRAGMA user_version").get()).toEqual({ user_version: 2 });
      } finally {
        db.close();
      }
    });
  },
);

describe.runIf(sqliteModule() !== undefined)(
  "a layout 1 writer still open on the file after the upgrade",
  () => {
    it("a file whose mark trigger fired on every update gets the one that fires on claims at open", async () => {
      const path = join(dir, `${randomUUID()}.db`);
      createSqliteStore({ path }).close();
      const { DatabaseSync } = (await import("node:sqlite" as string)) as {
        DatabaseSync: new (p: string) => { exec(s: string): void; close(): void };
      };
      // The trigger as the release before this one wrote it into the file.
      const db = new DatabaseSync(path);
      db.exec(`DROP TRIGGER governor_ledger_mark_update;
      CREATE TRIGGER governor_ledger_mark_update AFTER UPDATE ON governor_ledger
        WHEN NEW.state = 'pending' AND NEW.claimed_at IS OLD.claimed_at
      BEGIN
        UPDATE governor_ledger SET claimed_at = CASE
          WHEN OLD.claimed_at IS NULL OR NEW.updated_at > OLD.claimed_at THEN NEW.updated_at
          ELSE OLD.claimed_at + 1 END
        WHERE key = NEW.key;
      END;`);
      db.close();
      const store = createSqliteStore({ path });
      sqlites.push(store);
      const t = Date.now();
      const a = markOf(store.claim("k", "h", { ...opts(t), owner: "run-1" }));
      store.release("run-1");
      store.settle("k", "failed", { now: t + 10, claimedAt: a });
      expect(store.entry("k")?.state).toBe("failed");
    });

    // A process of the earlier version that had the file open before another one upgraded it goes
    // on claiming without marking its claims. Its takeover of a key left the previous holder's mark
    // on the row, so that holder's late settle named the row's latest claim and freed the key while
    // the layout 1 process's write was out (an identical claim then took it). The file's own
    // triggers (schema.ts `MARK_UNMARKED_CLAIMS`) now mark such a claim in its transaction.
    it("a takeover by the layout 1 writer is not undone by the earlier holder's late settle", async () => {
      const path = join(dir, `${randomUUID()}.db`);
      const { DatabaseSync } = (await import("node:sqlite" as string)) as {
        DatabaseSync: new (
          p: string,
        ) => {
          exec(s: string): void;
          prepare(s: string): { run(...a: unknown[]): unknown; get(...a: unknown[]): unknown };
          close(): void;
        };
      };
      // The layout 1 process: its connection open on a layout 1 file.
      const v1 = new DatabaseSync(path);
      v1.exec(`PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;
      CREATE TABLE governor_ledger (key TEXT PRIMARY KEY, args_hash TEXT NOT NULL,
      state TEXT NOT NULL, updated_at REAL NOT NULL, lease_ms REAL NOT NULL, result TEXT,
      result_unavailable INTEGER NOT NULL DEFAULT 0, expires_at REAL, owner TEXT);
      PRAGMA user_version = 1;`);
      try {
        // An upgraded process opens the file (layout 2) and claims a key, with a brief lease.
        const store = createSqliteStore({ path });
        sqlites.push(store);
        const t = Date.now();
        const a = markOf(store.claim("k", "h", opts(t, false, 50)));
        // The lease ran out: the layout 1 process takes the key over, with layout 1's statement
        // (it names no claim).
        v1.exec("BEGIN IMMEDIATE");
        v1.prepare(
          "UPDATE governor_ledger SET args_hash = ?, state = ?, updated_at = ?, lease_ms = ?, result = NULL, result_unavailable = 0, expires_at = NULL WHERE key = ?",
        ).run("h", "pending", t + 100, 60_000, "k");
        v1.exec("COMMIT");
        // The first holder's late settle (its attempt failed) must leave the taken key alone.
        store.settle("k", "failed", { now: t + 200, claimedAt: a });
        expect(store.entry("k")?.state).toBe("pending");
        // The layout 1 process's clock is behind the mark: its takeover is still a later claim.
        const b = markOf(store.claim("k2", "h", opts(t + 1_000, false, 50)));
        store.settle("k2", "failed", { now: t + 1_000, claimedAt: b });
        v1.prepare(
          "UPDATE governor_ledger SET args_hash = ?, state = ?, updated_at = ?, lease_ms = ?, result = NULL, result_unavailable = 0, expires_at = NULL WHERE key = ?",
        ).run("h", "pending", t + 500, 60_000, "k2");
        store.settle("k2", "uncertain", { now: t + 1_100, claimedAt: b });
        expect(store.entry("k2")?.state).toBe("pending");
        // Its claims of new keys are marked too, and a layout 2 claim is left as it marked it.
        v1.prepare(
          "INSERT INTO governor_ledger (key, args_hash, state, updated_at, lease_ms) VALUES (?, ?, ?, ?, ?)",
        ).run("k3", "h", "pending", t + 600, 60_000);
        const marks = new DatabaseSync(path);
        try {
          const mark = (key: string) =>
            (
              marks.prepare("SELECT claimed_at FROM governor_ledger WHERE key = ?").get(key) as {
                claimed_at: number;
              }
            ).claimed_at;
          expect(mark("k3")).toBe(t + 600);
          expect(mark("k2")).toBe(b + 1);
          const c = markOf(store.claim("k4", "h", opts(t + 700)));
          expect(mark("k4")).toBe(c);
        } finally {
          marks.close();
        }
      } finally {
        v1.close();
      }
    });
  },
);
