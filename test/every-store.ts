// The three stores a ledger test runs on (memory, SQLite where this Node has node:sqlite, Redis
// where a server answers), each made fresh per test, and closed and removed after the file.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMemoryStore, type Store } from "@governor/core";
import { createRedisStore, type RedisStore } from "@governor/redis";
import { createSqliteStore, type SqliteStore } from "@governor/sqlite";
import { afterAll } from "vitest";
import type { SharedRedis } from "../packages/redis/src/testing-server.ts";
import { sqliteModule } from "../packages/sqlite/src/sqlite-api.ts";

/** A store's name, whether it can run here, and how to make a fresh one. */
export type StoreCase = [name: string, ready: boolean, make: () => Store];

/**
 * The stores, for `describe.each`, the directory the SQLite files go in (`tmpPrefix` names it),
 * and the lists of stores to close, where a test makes its own SQLite or Redis store. Registers an
 * `afterAll` that closes every store in them and removes the directory.
 */
export function everyStore(
  redis: SharedRedis,
  tmpPrefix: string,
): { dir: string; stores: StoreCase[]; sqlites: SqliteStore[]; redises: RedisStore[] } {
  const dir = mkdtempSync(join(tmpdir(), tmpPrefix));
  const sqlites: SqliteStore[] = [];
  const redises: RedisStore[] = [];
  afterAll(async () => {
    for (const s of sqlites) s.close();
    await Promise.all(redises.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });
  const stores: StoreCase[] = [
    ["memory", true, () => createMemoryStore()],
    [
      "SQLite",
      sqliteModule() !== undefined,
      () => {
        const s = createSqliteStore({ path: join(dir, `${randomUUID()}.db`) });
        sqlites.push(s);
        return s;
      },
    ],
    [
      "Redis",
      redis.problem === undefined,
      () => {
        const s = createRedisStore({
          url: redis.url as string,
          prefix: `governor-test:${randomUUID()}:`,
          requirePersistence: false,
        });
        redises.push(s);
        return s;
      },
    ],
  ];
  return { dir, stores, sqlites, redises };
}
