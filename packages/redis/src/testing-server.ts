/**
 * Test helper (not exported by the package): starts a private redis-server on a free loopback
 * port, for tests that restart, pause or reconfigure a server and so must not share one.
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";
import { freePort, removeDir, sendOnce, spawnRedis } from "./testing-process.ts";

/** A redis-server this test owns. */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** Stops the server and starts it again on the same port with the same arguments. */
  restart(): Promise<void>;
  /** Sends one command with a short-lived client. */
  command(args: string[]): Promise<unknown>;
  stop(): Promise<void>;
}

/** Whether a redis-server binary is on PATH (undefined), or why not. */
export function redisServerMissing(): string | undefined {
  try {
    execFileSync("redis-server", ["--version"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "redis-server is not on PATH";
  }
}

/** Starts redis-server with `args` (e.g. `--appendonly no`) on a free port, in a temporary dir. */
export async function startPrivateRedis(args: string[], password?: string): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "governor-redis-"));
  const auth = password === undefined ? [] : ["--requirepass", password];
  const argv = ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, ...auth, ...args];
  let child: ChildProcess | undefined;
  const url = `redis://${password === undefined ? "" : `default:${password}@`}127.0.0.1:${port}`;

  const command = (cmd: string[]) => sendOnce(url, cmd);

  async function start(): Promise<void> {
    await spawnRedis(
      argv,
      () => command(["PING"]),
      (started) => {
        child = started;
      },
    );
  }

  async function stop(): Promise<void> {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once("exit", () => resolve());
      running.kill("SIGKILL");
    });
  }

  await start();
  return {
    port,
    url,
    command,
    async restart() {
      await stop();
      await start();
    },
    async stop() {
      await stop();
      removeDir(dir);
    },
  };
}

/** The Redis server tests share (`REDIS_URL`), as {@link sharedRedis} found it. */
export interface SharedRedis {
  /** `REDIS_URL`, when a server answers PING there. */
  readonly url: string | undefined;
  /** Why the tests that need it are skipped (no `REDIS_URL`, no answer); undefined when it answers. */
  readonly problem: string | undefined;
}

/**
 * Probes the server at `REDIS_URL` (PING within a second). Without one, tests that need it are
 * skipped (one line on stderr says so), unless `GOVERNOR_REQUIRE_REDIS=1` (CI): then a failing test
 * named after `what` says why, so a missing server fails the run instead of skipping it.
 * @example
 * const redis = await sharedRedis("RedisStore");
 * describe.runIf(redis.problem === undefined)("RedisStore", () => { … });
 */
export async function sharedRedis(what: string): Promise<SharedRedis> {
  const target = process.env.REDIS_URL;
  const problem = await probePing(target);
  if (problem !== undefined && process.env.GOVERNOR_REQUIRE_REDIS === "1") {
    const { describe, it } = await import("vitest");
    describe(`${what} (required by GOVERNOR_REQUIRE_REDIS=1)`, () => {
      it("answers PING at REDIS_URL", () => {
        throw new Error(`${problem}. Start redis-server and set REDIS_URL=redis://host:port.`);
      });
    });
  } else if (problem !== undefined) {
    // The one line a developer without Redis sees (vitest's default reporter names no skipped test).
    process.stderr.write(`${what} tests skipped: ${problem} (set REDIS_URL to run them).\n`);
  }
  return { url: problem === undefined ? target : undefined, problem };
}

/** Undefined when a server at `target` answers PING within a second, else what went wrong. */
async function probePing(target: string | undefined): Promise<string | undefined> {
  if (target === undefined || target === "") return "REDIS_URL is not set";
  const client = createClient({
    url: target,
    socket: { connectTimeout: 1_000, reconnectStrategy: false },
  });
  client.on("error", () => {});
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("timed out after 1 s")), 1_000);
    });
    await Promise.race([client.connect().then(() => client.ping()), timeout]);
    return undefined;
  } catch (error) {
    return `no answer to PING at ${target} (${error instanceof Error ? error.message : String(error)})`;
  } finally {
    clearTimeout(timer);
    if (client.isOpen) client.destroy();
  }
}
