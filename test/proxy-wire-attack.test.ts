// Attacks on the proxy's own JSON-RPC handling of tool calls (tool-call-route.ts,
// upstream-tool-calls.ts, server.ts): a real proxy process on raw stdio, lines written by hand as a
// misbehaving host would write them, in front of a scripted server on raw stdio
// (fixtures/raw-mcp-server.mjs) that logs every message it reads.
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { sqliteModule } from "../packages/sqlite/src/sqlite-api.ts";
import {
  type RawMessage,
  type RawProxy,
  ROOT,
  startRawProxy,
  waitUntil,
  writeNoteCall,
} from "./proxy-support.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-proxy-wire-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");
const redis = await sharedRedis("governor proxy --store redis:// on a misbehaving wire");

/** The proxy in front of the raw server, and what the server read. */
type RawHost = RawProxy & {
  /** The messages the server read so far. */
  serverRead(): RawMessage[];
};

let hosts = 0;

/** `governor proxy` in front of the raw server (RAW_MODE `mode`), initialized. */
async function rawHost(
  mode: string,
  proxyArgs: readonly string[] = [],
  initialize = true,
  serverLog = join(dir, `server-${++hosts}.jsonl`),
): Promise<RawHost> {
  const proxy = await startRawProxy(
    proxyArgs,
    { command: process.execPath, args: [SERVER] },
    { env: { RAW_MODE: mode, RAW_LOG: serverLog }, initialize },
  );
  const serverRead = () =>
    existsSync(serverLog)
      ? readFileSync(serverLog, "utf8")
          .split("\n")
          .filter((l) => l.trim() !== "")
          .map((l) => JSON.parse(l) as RawMessage)
      : [];
  return { ...proxy, serverRead };
}

const toolCallsRead = (host: RawHost) => host.serverRead().filter((m) => m.method === "tools/call");

/**
 * Sends `n` writes, each cancelled 0-5 ms after it (0: in the same write to stdin), then each
 * identical write again (the model trying once more), and checks what the host and the server saw:
 * at most one answer a request, and a write the host got no answer to sent at most once in all.
 */
async function raceCancels(host: RawHost, n: number, progress = false): Promise<void> {
  const tag = randomUUID();
  const args = (i: number) => `${tag}-${i}`;
  for (let i = 1; i <= n; i++) {
    const cancel = { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: i } };
    const delay = i % 6;
    const first = writeNoteCall(i, args(i), progress ? `p${i}` : undefined);
    if (delay === 0) host.send(first, cancel);
    else {
      host.send(first);
      setTimeout(() => host.send(cancel), delay);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 1_000));
  for (let i = 1; i <= n; i++) host.send(writeNoteCall(1000 + i, args(i)));
  for (let i = 1; i <= n; i++) await host.answer(1000 + i);
  const answers = (id: number) =>
    host.received().filter((m) => m.id === id && !("method" in m)).length;
  const sent = (i: number) =>
    toolCallsRead(host).filter(
      (m) => (m.params?.arguments as { t?: string } | undefined)?.t === args(i),
    ).length;
  const unanswered: number[] = [];
  for (let i = 1; i <= n; i++) {
    expect(answers(i), `answers to ${i}`).toBeLessThanOrEqual(1);
    if (answers(i) === 0) unanswered.push(i);
  }
  // The host cancelled these; whether each went out or not, none was made twice.
  expect(unanswered.filter((i) => sent(i) > 1).map(args)).toEqual([]);
}

describe("governor proxy: tool calls on a misbehaving wire", { timeout: 60_000 }, () => {
  it("never sends a tools/call without an id (a notification) to the server: it would run ungoverned", async () => {
    const host = await rawHost("ok");
    try {
      host.send(writeNoteCall(undefined, "no id"), writeNoteCall(2, "with id"));
      expect(await host.answer(2)).toMatchObject({ result: { content: [{ text: "done 1" }] } });
      const read = toolCallsRead(host);
      // Only the governed call, under the proxy's id and with its idempotency key.
      expect(read).toHaveLength(1);
      expect(read[0]).toMatchObject({
        id: "governor-1",
        params: { arguments: { t: "with id" } },
      });
      expect(read[0]?.params?._meta).toHaveProperty("io.governor/idempotency-key");
    } finally {
      await host.close();
    }
  });

  it("a server that answers twice, answers an id it was never sent or writes a line that is not JSON: the host reads each call's one answer", async () => {
    const host = await rawHost("twice,stray,not-json");
    try {
      host.send(writeNoteCall(2, "a"));
      expect(await host.answer(2)).toMatchObject({ result: { content: [{ text: "done 1" }] } });
      host.send(writeNoteCall(3, "b"));
      expect(await host.answer(3)).toMatchObject({ result: { content: [{ text: "done 2" }] } });
      host.send(writeNoteCall(4, "c"));
      expect(await host.answer(4)).toMatchObject({ result: { content: [{ text: "done 3" }] } });
      // None of the extra lines reached the host, in any message.
      expect(JSON.stringify(host.received())).not.toContain("hunter2");
      expect(host.received().filter((m) => !("method" in m))).toHaveLength(4);
    } finally {
      await host.close();
    }
  });

  it("an error answer whose code is not a number goes to the host as a JSON-RPC error, redacted; the write is in doubt", async () => {
    const host = await rawHost("bad-error,ok");
    try {
      host.send(writeNoteCall(2, "a"));
      const answer = await host.answer(2);
      expect(answer).toMatchObject({ error: { code: -32603 } });
      expect(answer).not.toHaveProperty("result");
      expect(JSON.stringify(host.received())).not.toContain("hunter2");
      expect(JSON.stringify(host.received())).not.toContain("/home/alice");
      // The identical write is not sent again.
      host.send(writeNoteCall(3, "a"));
      expect(await host.answer(3)).toMatchObject({ result: { isError: true } });
      expect(toolCallsRead(host)).toHaveLength(1);
    } finally {
      await host.close();
    }
  });

  it("a host's cancel for an id never sent, for 0 or for \"governor-1\" cancels nothing; its cancel of a call reaches the server under the proxy's id", async () => {
    const host = await rawHost("hang");
    const cancel = (requestId: unknown) => ({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId, reason: "host" },
    });
    const cancelsRead = () =>
      host.serverRead().filter((m) => m.method === "notifications/cancelled");
    try {
      host.send(writeNoteCall(2, "a"));
      for (let i = 0; i < 200 && toolCallsRead(host).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(toolCallsRead(host)[0]).toMatchObject({ id: "governor-1" });
      host.send(cancel(9), cancel(0), cancel("governor-1"), writeNoteCall(3, "b"));
      for (let i = 0; i < 200 && toolCallsRead(host).length < 2; i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(cancelsRead()).toEqual([]);
      host.send(cancel(2));
      for (let i = 0; i < 200 && cancelsRead().length === 0; i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(cancelsRead().map((m) => m.params?.requestId)).toEqual(["governor-1"]);
      // No answer to a cancelled request; the other call is still out.
      await new Promise((r) => setTimeout(r, 200));
      expect(host.received().filter((m) => m.id === 2 || m.id === 3)).toEqual([]);
    } finally {
      await host.close();
    }
  });

  it("a tools/call before initialize is refused and reaches no server", async () => {
    const host = await rawHost("ok", [], false);
    try {
      host.send(writeNoteCall(1, "early"));
      expect(await host.answer(1)).toMatchObject({
        error: { code: -32600, message: "governor proxy: not initialized" },
      });
      expect(host.serverRead()).toEqual([]);
    } finally {
      await host.close();
    }
  });

  it("a host that reuses an id while its call is out: its cancel of that id cancels both calls", async () => {
    const host = await rawHost("hang");
    const cancelsRead = () =>
      host.serverRead().filter((m) => m.method === "notifications/cancelled");
    try {
      host.send(writeNoteCall(5, "a"), writeNoteCall(5, "b"));
      for (let i = 0; i < 200 && toolCallsRead(host).length < 2; i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(toolCallsRead(host).map((m) => m.id)).toEqual(["governor-1", "governor-2"]);
      host.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5 } });
      for (let i = 0; i < 200 && cancelsRead().length < 2; i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(cancelsRead().map((m) => m.params?.requestId)).toEqual(["governor-1", "governor-2"]);
    } finally {
      await host.close();
    }
  });

  it("host cancels racing answers after progress (the proxy waits a moment after forwarding progress): no write made twice", async () => {
    const host = await rawHost("progress");
    try {
      await raceCancels(host, 60, true);
    } finally {
      await host.close();
    }
  });

  it("host cancels racing the server's answers (the proxy's memory store): no write the host saw no answer to is made twice", async () => {
    const host = await rawHost("ok");
    try {
      await raceCancels(host, 60);
    } finally {
      await host.close();
    }
  });
});

// The same race with the ledger in Redis: settling a write takes a round trip, in which the host's
// cancel can arrive after the server's answer.
describe.runIf(redis.url !== undefined)(
  "governor proxy --store redis://: tool calls on a misbehaving wire",
  { timeout: 60_000 },
  () => {
    it("host cancels racing the server's answers: no write the host saw no answer to is made twice", async () => {
      const host = await rawHost("ok", ["--store", redis.url as string, "--server", "notes"]);
      try {
        await raceCancels(host, 60);
      } finally {
        await host.close();
      }
    });
  },
);

// A late cancel (the host's cancel reaches the proxy after the server's answer, while the proxy
// records it) leaves the answer unsent: the ledger keeps it for the identical call, so that with a
// store that keeps its data a repeat after a restart of the proxy is answered, not sent again.
describe.runIf(sqliteModule() !== undefined)(
  "governor proxy --store sqlite: a write the host cancelled late, then the proxy restarted",
  { timeout: 60_000 },
  () => {
    it("the identical call after the restart is answered with the kept answer; the tool ran once (was: sent again)", async () => {
      const db = join(dir, `${randomUUID()}.db`);
      const store = ["--store", `sqlite:${db}`, "--server", "notes"];
      const firstLog = join(dir, `server-${++hosts}.jsonl`);
      const first = await rawHost("gated", store, true, firstLog);
      const { DatabaseSync } = (await import("node:sqlite" as string)) as {
        DatabaseSync: new (p: string) => { exec(s: string): void; close(): void };
      };
      const lock = new DatabaseSync(db);
      const events = (host: RawHost) =>
        host
          .received()
          .filter((m) => m.method === "notifications/message")
          .map((m) => (m.params?.data as { event?: string } | undefined)?.event);
      try {
        first.send(writeNoteCall(2, "kept", "p2"));
        // The call went out and its progress came back: the proxy waits a moment before it
        // answers a call whose progress it forwarded.
        await waitUntil("progress forwarded", () =>
          first.received().some((m) => m.method === "notifications/progress"),
        );
        // The store's write lock held by another connection: the proxy's settle of the success
        // waits for it (busy timeout), so the host's cancel comes after the server's answer.
        lock.exec("BEGIN IMMEDIATE");
        writeFileSync(`${firstLog}.gate`, "");
        await waitUntil("answered", () => existsSync(`${firstLog}.answered`));
        await new Promise((r) => setTimeout(r, 400));
        first.send({
          jsonrpc: "2.0",
          method: "notifications/cancelled",
          params: { requestId: 2 },
        });
        await new Promise((r) => setTimeout(r, 200));
        lock.exec("ROLLBACK");
        await waitUntil("the answer kept", () => events(first).includes("completed_after_cancel"));
        // A cancelled request gets no answer.
        expect(first.received().filter((m) => m.id === 2)).toEqual([]);
      } finally {
        lock.close();
        await first.close();
      }
      expect(toolCallsRead(first)).toHaveLength(1);

      // The proxy restarted on the same file, before a server that would answer anew.
      const second = await rawHost("ok", store);
      try {
        second.send(writeNoteCall(3, "kept"));
        const again = await second.answer(3);
        // Not sent: the first server's answer, kept in the file.
        expect(toolCallsRead(second)).toEqual([]);
        expect(again).toMatchObject({ result: { content: [{ type: "text", text: "done 1" }] } });
        expect(events(second)).toContain("answered_after_cancel");
        // Given once: the identical call after it is a write of its own.
        second.send(writeNoteCall(4, "kept"));
        expect(await second.answer(4)).toMatchObject({
          result: { content: [{ type: "text", text: "done 1" }] },
        });
        expect(toolCallsRead(second)).toHaveLength(1);
      } finally {
        await second.close();
      }
    });
  },
);
