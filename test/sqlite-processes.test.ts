import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { MIN_NODE, sqliteModule } from "../packages/sqlite/src/sqlite-api.ts";

/**
 * Processes sharing one SqliteStore file, each a real Node process (test/fixtures/sqlite-worker.ts):
 * a second process sees the first's claims while it runs; a process killed before it settled, and
 * the one restarted in its place, leave the write in doubt, refused; and two processes claiming
 * the same keys at once get each key exactly once.
 */

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TSX = import.meta.resolve("tsx");
const available = sqliteModule() !== undefined;
const title = available
  ? "processes sharing one SqliteStore file"
  : `processes sharing one SqliteStore file (skipped: Node ${process.version} has no node:sqlite; it needs ${MIN_NODE} or later)`;
if (!available) process.stderr.write(`${title}\n`);

interface Answer {
  value?: unknown;
  error?: { name: string; reason?: string; message: string };
}

/** One worker process on the file: `ask` sends an operation and resolves with its answer. */
async function startWorker(path: string) {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ["--conditions=source", "--import", TSX, "test/fixtures/sqlite-worker.ts", path],
    { cwd: ROOT, stdio: "pipe" },
  );
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, unknown>> => {
    const line = await lines.next();
    if (line.done) throw new Error(`the worker exited: ${stderr}`);
    return JSON.parse(line.value) as Record<string, unknown>;
  };
  await next(); // { ready }
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    async ask(op: string, ...args: unknown[]): Promise<Answer> {
      child.stdin.write(`${JSON.stringify({ op, args })}\n`);
      return (await next()) as Answer;
    },
    async value(op: string, ...args: unknown[]): Promise<unknown> {
      const answer = await this.ask(op, ...args);
      if (answer.error !== undefined) throw new Error(`${op}: ${answer.error.message}`);
      return answer.value;
    },
    /** Kills the process at once, as a crash would (nothing settles, nothing closes). */
    async crash(): Promise<void> {
      child.kill("SIGKILL");
      await exited;
    },
    async stop(): Promise<void> {
      child.stdin.end();
      await exited;
    },
  };
}

describe.runIf(available)(title, { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "governor-sqlite-processes-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("a second process sees the first's claim in flight, then its write in doubt", async () => {
    const path = join(dir, "shared.db");
    const [a, b] = await Promise.all([startWorker(path), startWorker(path)]);
    try {
      expect(await a.value("claim", "charge", "h1", 1_000)).toMatchObject({ status: "claimed" });
      expect(await b.value("claim", "charge", "h1", 1_500)).toMatchObject({
        status: "in_flight",
        entry: { argsHash: "h1", state: "pending", updatedAt: 1_000 },
      });
      expect(await b.value("claim", "charge", "h2", 1_500)).toMatchObject({
        status: "args_mismatch",
      });
      await a.value("settle", "charge", "uncertain", { now: 2_000, claimedAt: 1_000 });
      expect(await b.value("claim", "charge", "h1", 3_000)).toMatchObject({
        status: "uncertain",
        entry: { state: "uncertain", updatedAt: 2_000 },
      });
      await b.value("settle", "refund", "succeeded", { now: 3_000, result: { id: "re_1" } });
      expect(await a.value("entry", "refund")).toMatchObject({
        state: "succeeded",
        result: { id: "re_1" },
      });
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it("a process killed before its settle leaves the write in doubt for the one restarted", async () => {
    const path = join(dir, "crash.db");
    const first = await startWorker(path);
    expect(await first.value("claim", "charge", "h1", 1_000)).toMatchObject({ status: "claimed" });
    await first.value("claim", "sent", "h1", 1_000);
    await first.value("settle", "sent", "uncertain", { now: 1_100, claimedAt: 1_000 });
    await first.crash();

    const restarted = await startWorker(path);
    try {
      // Its lease (60 s) holds: the attempt may still be running somewhere.
      expect(await restarted.value("claim", "charge", "h1", 2_000)).toMatchObject({
        status: "in_flight",
      });
      // Past it, the write may have happened: refused, and recorded as uncertain.
      expect(await restarted.value("claim", "charge", "h1", 61_000)).toMatchObject({
        status: "uncertain",
      });
      expect(await restarted.value("entry", "charge")).toMatchObject({ state: "uncertain" });
      expect(await restarted.value("claim", "sent", "h1", 61_000)).toMatchObject({
        status: "uncertain",
      });
    } finally {
      await restarted.stop();
    }
  });

  it("two processes claiming the same 500 failed keys at once: each key goes to exactly one", async () => {
    const path = join(dir, "race.db");
    const keys = Array.from({ length: 500 }, (_, i) => `job-${i}`);
    const [a, b] = await Promise.all([startWorker(path), startWorker(path)]);
    try {
      // Settled failed first: a claim then reopens an existing row, where only the transaction
      // keeps two readers of "failed" from both taking it (a new row's primary key would refuse
      // the second insert by itself).
      for (const key of keys) await a.value("settle", key, "failed", { now: 500 });
      const startAt = Date.now() + 300;
      const [fromA, fromB] = (await Promise.all([
        a.value("claimMany", keys, "h1", 1_000, startAt),
        b.value("claimMany", keys, "h1", 1_000, startAt),
      ])) as [string[], string[]];
      const pairs = keys.map((_, i) => [fromA[i], fromB[i]].sort().join("+"));
      expect(new Set(pairs)).toEqual(new Set(["claimed+in_flight"]));
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
