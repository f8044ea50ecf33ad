/**
 * `governor proxy --store`: the ledger outlives the proxy's process. A write whose answer was lost
 * stays refused by a proxy started again on the same store (a host restarting its MCP servers),
 * over real stdio, on an SQLite file and on Redis.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readEffects, stdioServerParams } from "@governor/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { MIN_NODE, sqliteModule } from "../packages/sqlite/src/sqlite-api.ts";
import { governor } from "./cli.ts";
import { startHost, textOf } from "./proxy-support.ts";

const redis = await sharedRedis("governor proxy --store redis://");
const sqlite = sqliteModule() !== undefined;
if (!sqlite) {
  process.stderr.write(
    `governor proxy --store sqlite: tests skipped: Node ${process.version} has no node:sqlite (it needs ${MIN_NODE} or later).\n`,
  );
}

let dir: string;
let policyFile: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "governor-proxy-store-"));
  policyFile = join(dir, "policy.json");
  writeFileSync(policyFile, JSON.stringify({ servers: { notes: { trustAnnotations: true } } }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const stores = [
  { name: "sqlite", available: sqlite, store: () => `sqlite:${join(dir, `${randomUUID()}.db`)}` },
  { name: "redis", available: redis.url !== undefined, store: () => redis.url as string },
];

describe.each(stores)("governor proxy --store $name", ({ available, store }) => {
  it.runIf(available)(
    "a restarted proxy still refuses a write whose answer was lost",
    { timeout: 120_000 },
    async () => {
      const effects = join(dir, `effects-${randomUUID()}.jsonl`);
      const params = stdioServerParams({ effectsFile: effects });
      const server = { command: params.command, args: params.args ?? [] };
      const args = ["--policy", policyFile, "--server", "notes", "--store", store()];
      const write = { name: "write_then_drop", arguments: { title: `t-${randomUUID()}` } };

      const first = await startHost(args, server);
      try {
        const lost = await first.client.callTool(write);
        expect(lost.isError).toBe(true);
        expect(textOf(lost)).toMatch(/may have/i);
      } finally {
        await first.close();
      }
      expect(readEffects(effects).filter((e) => e.tool === "write_then_drop")).toHaveLength(1);

      // A new process: its stop memory is empty, its run mints new keys; the store remembers.
      const restarted = await startHost(args, server);
      try {
        const again = await restarted.client.callTool(write);
        expect(again.isError).toBe(true);
        // Refused by the ledger's index of writes in doubt (docs/idempotency.md), which the
        // store kept: the proxy's scope is its server's name, the same after a restart.
        expect(textOf(again)).toMatch(/was not sent/i);
        expect(textOf(again)).toMatch(/do not repeat it/i);
        await expect.poll(() => restarted.logs.length).toBeGreaterThanOrEqual(1);
        expect(restarted.logs[0]).toMatchObject({
          data: { event: "stopped", tool: "write_then_drop", reason: "uncertain_mutation" },
        });
        // Other arguments are another write.
        const other = await restarted.client.callTool({
          name: "get_note",
          arguments: { id: "welcome" },
        });
        expect(other.isError).toBeFalsy();
      } finally {
        await restarted.close();
      }
      expect(readEffects(effects).filter((e) => e.tool === "write_then_drop")).toHaveLength(1);
    },
  );
});

describe("governor proxy --store: bad values", () => {
  it("refuses a value that is neither form, saying what is accepted", async () => {
    for (const [value, message] of [
      ["memory", /--store "memory": expected sqlite:PATH .* or redis:\/\/HOST/],
      ["sqlite:", /--store "sqlite:": sqlite: needs a file path/],
      ["redis://", /--store "redis:\/\/": not a valid redis:\/\/ URL/],
    ] as const) {
      const { status, stderr } = await governor(["proxy", "--store", value, "--", "node"]);
      expect(status).toBe(2);
      expect(stderr).toMatch(message);
    }
  });

  it.runIf(sqlite)("says at start that the file cannot be opened, and exits 1", async () => {
    const missing = join(dir, "no-such-dir", "ledger.db");
    const { status, stderr } = await governor([
      "proxy",
      "--store",
      `sqlite:${missing}`,
      "--server",
      "notes",
      "--",
      "node",
    ]);
    expect(status).toBe(1);
    expect(stderr).toContain(
      "governor proxy: --store: SqliteStore: open failed: the database file could not be opened.",
    );
    expect(stderr).not.toContain("no-such-dir");
  });
});
