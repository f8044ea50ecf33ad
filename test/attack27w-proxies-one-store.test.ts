// Attack 27 (writes): two `governor proxy` processes on one SQLite file (two servers of one host
// on one machine, the deployment docs/stores.md gives the SQLite store for), neither given
// `--server`. Their scope was `governor-proxy\0` and their server name "" alike, so the ledger
// read the same tool and arguments on two different servers as one write: an answer proxy A kept
// for its host (a cancel that came as the write succeeded) was handed to proxy B's identical call
// as B's own result, and B's server never got the write. `--store` now needs `--server` (a
// preset alone is not enough, below): such a proxy is refused at start.
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sqliteModule } from "../packages/sqlite/src/sqlite-api.ts";
import { governor } from "./cli.ts";
import { loggedToolCalls, ROOT, startRawProxy, waitUntil, writeNoteCall } from "./proxy-support.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-attack27w-proxies-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");

const toolCalls = loggedToolCalls;

/** A's host cancels its write as it succeeds (A keeps the answer); then B's host sends the same call. */
async function sameCallOnTwoServers(namesA: string[], namesB: string[]): Promise<void> {
  const db = join(dir, `${randomUUID()}.db`);
  const logA = join(dir, `a-${randomUUID()}.jsonl`);
  const logB = join(dir, `b-${randomUUID()}.jsonl`);
  const a = await startRawProxy(
    ["--store", `sqlite:${db}`, ...namesA],
    { command: process.execPath, args: [SERVER] },
    { env: { RAW_MODE: "gated", RAW_LOG: logA }, initialize: true },
  );
  const b = await startRawProxy(
    ["--store", `sqlite:${db}`, ...namesB],
    { command: process.execPath, args: [SERVER] },
    { env: { RAW_MODE: "ok", RAW_LOG: logB }, initialize: true },
  );
  const { DatabaseSync } = (await import("node:sqlite" as string)) as {
    DatabaseSync: new (p: string) => { exec(s: string): void; close(): void };
  };
  const lock = new DatabaseSync(db);
  try {
    a.send(writeNoteCall(2, "deploy done", "p2"));
    await waitUntil("progress forwarded", () =>
      a.received().some((m) => m.method === "notifications/progress"),
    );
    // A's settle of the success waits for the file's lock: A's host cancels as it comes.
    lock.exec("BEGIN IMMEDIATE");
    writeFileSync(`${logA}.gate`, "");
    await waitUntil("answered", () => existsSync(`${logA}.answered`));
    // Time for A to read the answer and reach its settle on a loaded machine (the suite's other
    // files share two cores: 300 ms was overrun once), well inside the store's 2 s busy timeout.
    await new Promise((r) => setTimeout(r, 700));
    a.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } });
    await new Promise((r) => setTimeout(r, 300));
    lock.exec("ROLLBACK");
    await waitUntil("A kept the answer", () => a.stdout().includes("completed_after_cancel"));
    // B's host asks B's server for the same note.
    b.send(writeNoteCall(7, "deploy done"));
    const answer = await b.answer(7);
    // Before: B's server got nothing, and B's host read A's server's answer ("done 1").
    expect({ sentToB: toolCalls(logB).length, answer }).toMatchObject({ sentToB: 1 });
  } finally {
    lock.close();
    await a.close();
    await b.close();
  }
}

describe.runIf(sqliteModule() !== undefined)(
  "two proxies on one SQLite store, in front of two different servers",
  { timeout: 60_000 },
  () => {
    // The proxy names its scope and server by `--server` (session.ts `idempotencyScope`, and the
    // `server` of each call): without it, every proxy on a store would share one ledger. A preset
    // names a kind of server, not the one behind the proxy (review 28: two `--preset everything`
    // proxies on one file shared one ledger the same way), so it is no name either.
    it.each([
      ["no --server", []],
      ["--preset alone", ["--preset", "everything"]],
    ])("a proxy with --store and %s is refused at start, saying what to add", async (_, extra) => {
      const db = join(dir, `${randomUUID()}.db`);
      const { status, stderr } = await governor([
        "proxy",
        "--store",
        `sqlite:${db}`,
        ...extra,
        "--",
        process.execPath,
        SERVER,
      ]);
      expect(status).toBe(2);
      expect(stderr).toContain("--store needs --server NAME");
      expect(existsSync(db)).toBe(false);
    });

    it("with --server a and --server b, B's call is sent to B's server", async () => {
      await sameCallOnTwoServers(["--server", "a"], ["--server", "b"]);
    });

    it("with --preset everything --server a and --server b, B's call is sent to B's server", async () => {
      await sameCallOnTwoServers(
        ["--preset", "everything", "--server", "a"],
        ["--preset", "everything", "--server", "b"],
      );
    });
  },
);
