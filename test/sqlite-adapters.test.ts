/**
 * The durable SQLite ledger in trouble under a real adapter: `governClient` over real stdio with
 * a `SqliteStore` whose file another connection holds locked (`BEGIN EXCLUSIVE`, as another
 * process of the machine would). A write is never sent while its key cannot be claimed, the model
 * reads a fixed text (no path, no SQLite error), and once the lock is gone the same logical call
 * is made exactly once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { createGovernor, type HostError } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import { createSqliteStore } from "@governor/sqlite";
import { readEffects, stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "governor-sqlite-adapters-"));
const effectsFile = join(dir, "effects.jsonl");
const client = new Client({ name: "sqlite-adapters", version: "1.0.0" });

beforeAll(async () => {
  await client.connect(new StdioClientTransport(stdioServerParams({ effectsFile })));
}, 60_000);
afterAll(async () => {
  await client.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Holds the database file locked from another connection until `release`. */
function lock(path: string): { release(): void } {
  const other = new DatabaseSync(path);
  other.exec("BEGIN EXCLUSIVE");
  return {
    release() {
      other.exec("COMMIT");
      other.close();
    },
  };
}

/** A governor over a fresh SQLite ledger, its governed client, and what its host hook saw. */
function governedOver(name: string) {
  const path = join(dir, `${name}.db`);
  const store = createSqliteStore({ path, busyTimeoutMs: 50 });
  const hostErrors: HostError[] = [];
  const governor = createGovernor(
    {
      servers: {
        notes: { trustAnnotations: true, tools: { append_log: { effect: "mutating" } } },
      },
    },
    {
      metrics: false,
      store,
      onHostError: (error) => {
        hostErrors.push(error);
        return undefined;
      },
    },
  );
  return {
    path,
    store,
    governor,
    governed: governClient(client, { governor, server: "notes" }),
    hostErrors,
  };
}

const appended = (line: string) =>
  readEffects(effectsFile).filter((e) => e.tool === "append_log" && e.args.line === line).length;

describe("a SqliteStore locked by another connection, under governClient over stdio", () => {
  it("the write is not sent; the model reads a fixed text; once unlocked the same call runs once", async () => {
    const { path, store, governor, governed, hostErrors } = governedOver("locked");
    const call = { name: "append_log", arguments: { line: "locked-1" }, callId: "call-1" };
    const held = lock(path);
    try {
      const run = governor.startRun({ idempotencyScope: "job-1" });
      const outcome = await governed.callTool(run, call);
      expect(outcome).toMatchObject({ kind: "stop", reason: "store_unavailable" });
      const text = JSON.stringify(toModelResult(outcome));
      expect(text).toMatch(/storage is unavailable, so the call was not made/);
      expect(text).not.toContain(dir);
      expect(text).not.toMatch(/SQLite|locked|busyTimeoutMs/);
      expect(hostErrors.map((e) => e.reason)).toEqual(["store_unavailable"]);
      expect(hostErrors[0]?.message).toMatch(/locked by another connection/);
      expect(appended("locked-1")).toBe(0);
    } finally {
      held.release();
    }
    // Nothing was claimed, nothing left in doubt: the host sends the same logical call again.
    const again = await governed.callTool(governor.startRun({ idempotencyScope: "job-1" }), call);
    expect(again).toMatchObject({ kind: "ok", replayed: false });
    const replay = await governed.callTool(governor.startRun({ idempotencyScope: "job-1" }), call);
    expect(replay).toMatchObject({ kind: "ok", replayed: true });
    expect(appended("locked-1")).toBe(1);
    store.close();
  });

  // When the settle of a write that succeeded fails, the host is told the key that stays pending,
  // and settling it `succeeded` by hand makes the same logical call a replay.
  it("a settle that fails after the write succeeded names the key the host must settle", async () => {
    const { path, store, governor, governed, hostErrors } = governedOver("settle");
    const run = governor.startRun({ idempotencyScope: "job-2" });
    // The server's answer is in: the claim went through; the settle will meet the lock.
    let held: { release(): void } | undefined;
    const transport = client.transport as {
      onmessage?: ((message: unknown, extra?: unknown) => void) | undefined;
    };
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const result = (message as { result?: unknown } | null)?.result;
      // A tool's answer (the listing that trusted annotations make first has no content).
      if (typeof result === "object" && result !== null && "content" in result) {
        held ??= lock(path);
      }
      deliver?.call(transport, message, extra);
    };
    const outcome = await governed
      .callTool(run, { name: "append_log", arguments: { line: "settle-1" }, callId: "call-2" })
      .finally(() => {
        transport.onmessage = deliver;
        held?.release();
      });
    // The write happened and the model reads its result.
    expect(outcome).toMatchObject({ kind: "ok" });
    expect(appended("settle-1")).toBe(1);
    expect(hostErrors).toHaveLength(1);
    const key = hostErrors[0]?.idempotencyKey;
    expect(key).toBeDefined();
    await governor.settle(key as string, "succeeded");
    const replay = await governed.callTool(governor.startRun({ idempotencyScope: "job-2" }), {
      name: "append_log",
      arguments: { line: "settle-1" },
      callId: "call-2",
    });
    expect(replay).toMatchObject({ kind: "ok" });
    expect(appended("settle-1")).toBe(1);
    store.close();
  });
});
