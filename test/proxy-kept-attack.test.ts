// Attacks on the answer the proxy keeps for a write the host cancelled late (docs/proxy.md,
// docs/idempotency.md "An answer the host never got"): a real proxy process on raw stdio in front
// of the scripted raw server (fixtures/raw-mcp-server.mjs), which logs every message it reads.
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sqliteModule } from "../packages/sqlite/src/sqlite-api.ts";
import { loggedToolCalls, ROOT, startRawProxy, waitUntil, writeNoteCall } from "./proxy-support.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-proxy-kept-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");

describe.runIf(sqliteModule() !== undefined)(
  "governor proxy --store sqlite: the identical call sent right after a late cancel",
  { timeout: 60_000 },
  () => {
    it("is answered with the kept answer (or refused), never sent again while the proxy decides to keep it", async () => {
      const db = join(dir, `${randomUUID()}.db`);
      const log = join(dir, `server-${randomUUID()}.jsonl`);
      const host = await startRawProxy(
        ["--store", `sqlite:${db}`, "--server", "notes"],
        { command: process.execPath, args: [SERVER] },
        { env: { RAW_MODE: "gated", RAW_LOG: log }, initialize: true },
      );
      const toolCalls = () => loggedToolCalls(log);
      const { DatabaseSync } = (await import("node:sqlite" as string)) as {
        DatabaseSync: new (p: string) => { exec(s: string): void; close(): void };
      };
      const lock = new DatabaseSync(db);
      try {
        host.send(writeNoteCall(2, "kept", "p2"));
        await waitUntil("progress forwarded", () =>
          host.received().some((m) => m.method === "notifications/progress"),
        );
        // The proxy's settle of the success waits for the file's write lock: the host's cancel,
        // and its identical call right after it, come after the server's answer.
        lock.exec("BEGIN IMMEDIATE");
        writeFileSync(`${log}.gate`, "");
        await waitUntil("answered", () => existsSync(`${log}.answered`));
        // Time for the proxy to read the answer and reach its settle on a loaded machine (300 ms
        // was overrun in CI, as in attack27w-proxies-one-store), inside the 2 s busy timeout.
        await new Promise((r) => setTimeout(r, 700));
        host.send(
          { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } },
          writeNoteCall(3, "kept"),
        );
        await new Promise((r) => setTimeout(r, 300));
        lock.exec("ROLLBACK");
        const again = await host.answer(3);
        // The write was made once: the identical call got its answer, kept in the ledger.
        expect(toolCalls()).toHaveLength(1);
        expect(again).toMatchObject({ result: { content: [{ type: "text", text: "done 1" }] } });
        // A cancelled request gets no answer.
        expect(host.received().filter((m) => m.id === 2)).toEqual([]);
      } finally {
        lock.close();
        await host.close();
      }
    });
  },
);
