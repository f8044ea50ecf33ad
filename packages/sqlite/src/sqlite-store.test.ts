import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, GovernorError, type Store, StoreError } from "@governor/core";
import { describeStoreContract } from "@governor/core/testing";
import { afterAll, describe, expect, it } from "vitest";
import { MIN_NODE, sqliteModule } from "./sqlite-api.ts";
import { createSqliteStore, type SqliteStore } from "./sqlite-store.ts";

// node:sqlite is in Node 22.13 and later; on an older Node the suite is skipped, saying so.
const available = sqliteModule() !== undefined;
const title = available
  ? "SqliteStore"
  : `SqliteStore (skipped: Node ${process.version} has no node:sqlite; it needs ${MIN_NODE} or later)`;
if (!available) process.stderr.write(`${title}\n`);

describe.runIf(available)(title, () => {
  const dir = mkdtempSync(join(tmpdir(), "governor-sqlite-"));
  let files = 0;
  const freshPath = () => join(dir, `store-${++files}.db`);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  describeStoreContract(
    "SqliteStore",
    ({ retentionMs, maxUnsettled, maxOutcomes }) =>
      createSqliteStore({ path: freshPath(), retentionMs, maxUnsettled, maxOutcomes }),
    { cleanup: (store) => (store as SqliteStore).close() },
  );

  const at = (now: number, allowUncertain = false) => ({ now, allowUncertain, leaseMs: 1_000 });

  it("keeps every claim and settle across a close and a reopen of the file", () => {
    const path = freshPath();
    const first = createSqliteStore({ path });
    first.claim("charge", "h1", at(1_000));
    first.settle("charge", "uncertain", { now: 1_100 });
    first.claim("refund", "h1", at(1_000));
    first.settle("refund", "succeeded", { now: 1_200, result: { id: "re_1" } });
    first.claim("held", "h1", at(1_000));
    first.set("breaker", { state: "open" });
    first.close();

    const again = createSqliteStore({ path });
    try {
      expect(again.claim("charge", "h1", at(5_000))).toEqual({
        status: "uncertain",
        entry: { key: "charge", argsHash: "h1", state: "uncertain", updatedAt: 1_100 },
      });
      expect(again.claim("refund", "h1", at(5_000))).toMatchObject({
        status: "succeeded",
        entry: { result: { id: "re_1" } },
      });
      // A claim the closed store answered and never settled: past its lease, a write in doubt.
      expect(again.claim("held", "h1", at(5_000)).status).toBe("uncertain");
      expect(again.get("breaker")).toEqual({ state: "open" });
    } finally {
      again.close();
    }
  });

  it("puts the file in WAL mode with a full sync on the ledger's connection", async () => {
    const path = freshPath();
    const store = createSqliteStore({ path });
    store.close();
    const { DatabaseSync } = (await import("node:sqlite" as string)) as {
      DatabaseSync: new (p: string) => { prepare(s: string): { get(): unknown }; close(): void };
    };
    const db = new DatabaseSync(path);
    try {
      expect(db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(db.prepare("PRAGMA user_version").get()).toEqual({ user_version: 2 });
    } finally {
      db.close();
    }
  });

  it("upgrades a layout 1 file at open: a pending row's claim is the now its holder names it by", async () => {
    const path = freshPath();
    const { DatabaseSync } = (await import("node:sqlite" as string)) as {
      DatabaseSync: new (p: string) => { exec(s: string): void; close(): void };
    };
    // The ledger table as layout 1 wrote it: a claim in flight (claimed at 1 000 by a worker of
    // that version), and a key its holder left in doubt.
    const old = new DatabaseSync(path);
    old.exec(`CREATE TABLE governor_ledger (key TEXT PRIMARY KEY, args_hash TEXT NOT NULL,
      state TEXT NOT NULL, updated_at REAL NOT NULL, lease_ms REAL NOT NULL, result TEXT,
      result_unavailable INTEGER NOT NULL DEFAULT 0, expires_at REAL, owner TEXT);
      INSERT INTO governor_ledger (key, args_hash, state, updated_at, lease_ms)
        VALUES ('held', 'h1', 'pending', 1000, 60000), ('doubt', 'h1', 'uncertain', 1000, 0);
      PRAGMA user_version = 1;`);
    old.close();
    const store = createSqliteStore({ path });
    try {
      // The holder's settle names its claim by its now, as layout 1's settles compared: it applies.
      store.settle("held", "failed", { now: 1_500, claimedAt: 1_000 });
      expect(store.entry("held")?.state).toBe("failed");
      // A key in doubt keeps no claim: a late settle naming one changes nothing.
      store.settle("doubt", "failed", { now: 1_500, claimedAt: 1_000 });
      expect(store.entry("doubt")?.state).toBe("uncertain");
      // Claims after the upgrade are marked.
      const claimed = store.claim("held", "h1", at(2_000));
      expect(claimed).toMatchObject({ status: "claimed", claimedAt: 2_000 });
    } finally {
      store.close();
    }
    const { DatabaseSync: Reader } = (await import("node:sqlite" as string)) as {
      DatabaseSync: new (p: string) => { prepare(s: string): { get(): unknown }; close(): void };
    };
    const db = new Reader(path);
    try {
      expect(db.prepare("PRAGMA user_version").get()).toEqual({ user_version: 2 });
    } finally {
      db.close();
    }
  });

  it("drops a released owner's settled entries and keeps its writes in doubt", () => {
    const store = createSqliteStore({ path: freshPath() });
    try {
      for (const name of ["done", "refused", "unsure"]) {
        store.claim(name, "h1", { ...at(1_000), owner: "run-1" });
      }
      store.settle("done", "succeeded", { now: 1_100, claimedAt: 1_000 });
      store.settle("refused", "failed", { now: 1_100, claimedAt: 1_000 });
      store.settle("unsure", "uncertain", { now: 1_100, claimedAt: 1_000 });
      store.release("run-1");
      expect(store.entry("done")).toBeUndefined();
      expect(store.entry("refused")).toBeUndefined();
      expect(store.entry("unsure")?.state).toBe("uncertain");
      // Settled later, it is nobody's: a second release of the owner leaves it.
      store.settle("unsure", "succeeded", { now: 1_200 });
      store.release("run-1");
      expect(store.entry("unsure")?.state).toBe("succeeded");
    } finally {
      store.close();
    }
  });

  it("refuses bad options naming what is accepted, and a file that is not a database", () => {
    const options = [
      [{ path: "" }, /path must be the database file's path/],
      [{ path: freshPath(), retentionMs: 0 }, /retentionMs must be a positive finite number/],
      [{ path: freshPath(), maxUnsettled: 1.5 }, /maxUnsettled must be a positive integer/],
      [{ path: freshPath(), busyTimeoutMs: -1 }, /busyTimeoutMs must be a positive/],
    ] as const;
    for (const [bad, message] of options) {
      const error = thrown(() => createSqliteStore(bad as never));
      expect(GovernorError.isInstance(error) && error.code).toBe("invalid_options");
      expect((error as Error).message).toMatch(message);
    }
    const notADatabase = freshPath();
    writeFileSync(
      notADatabase,
      "this is a text file, long enough to hold a header or two.\n".repeat(20),
    );
    const error = thrown(() => createSqliteStore({ path: notADatabase }));
    expect(StoreError.isInstance(error) && error.reason).toBe("misconfigured");
    // The path is the host's business: never in the message.
    expect((error as Error).message).not.toContain(notADatabase);
    const missingDir = join(dir, "no-such-dir", "x.db");
    const unopened = thrown(() => createSqliteStore({ path: missingDir }));
    expect(StoreError.isInstance(unopened) && unopened.reason).toBe("unavailable");
    expect((unopened as Error).message).not.toContain("no-such-dir");
  });

  it("fails every operation after close with a StoreError, never a raw SQLite error", () => {
    const store = createSqliteStore({ path: freshPath() });
    store.close();
    const error = thrown(() => store.claim("k", "h1", at(1_000)));
    expect(StoreError.isInstance(error) && error.reason).toBe("unavailable");
    expect((error as Error).message).toBe("SqliteStore: claim failed: the store was closed.");
  });

  it("times out a claim while another connection holds the file's write lock", async () => {
    const path = freshPath();
    const store = createSqliteStore({ path, busyTimeoutMs: 50 });
    const { DatabaseSync } = (await import("node:sqlite" as string)) as {
      DatabaseSync: new (p: string) => { exec(s: string): void; close(): void };
    };
    const other = new DatabaseSync(path);
    try {
      other.exec("BEGIN IMMEDIATE");
      const error = thrown(() => store.claim("k", "h1", at(1_000)));
      expect(StoreError.isInstance(error) && error.reason).toBe("timeout");
      expect((error as Error).message).toMatch(/locked by another connection past busyTimeoutMs/);
      other.exec("ROLLBACK");
      expect(store.claim("k", "h1", at(1_000)).status).toBe("claimed");
    } finally {
      other.close();
      store.close();
    }
  });

  it("is the runtime's ledger: an uncertain write is refused by a governor on a reopened file", async () => {
    const path = freshPath();
    const policy = { tools: { charge: { effect: "mutating" as const } } };
    const first = createSqliteStore({ path });
    const scope = { idempotencyScope: "job-7" };
    const run = createGovernor(policy, { store: first as Store }).startRun(scope);
    const timedOut = await run.call({ tool: "charge", args: { cents: 500 }, callId: "c1" }, () => {
      throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    });
    run.end();
    first.close();
    expect(timedOut.kind).toBe("stop");

    const second = createSqliteStore({ path });
    try {
      let sent = 0;
      const again = createGovernor(policy, { store: second }).startRun(scope);
      const outcome = await again.call(
        { tool: "charge", args: { cents: 500 }, callId: "c1" },
        async () => {
          sent += 1;
          return { ok: true };
        },
      );
      again.end();
      expect(sent).toBe(0);
      expect(outcome).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    } finally {
      second.close();
    }
  });
});

function thrown(call: () => unknown): unknown {
  try {
    call();
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to throw");
}
