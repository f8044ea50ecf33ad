/**
 * Test helper (not exported by the package): starts a private redis-server on a free loopback
 * port, for tests that restart, pause or reconfigure a server and so must not share one.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "redis";

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

  async function command(cmd: string[]): Promise<unknown> {
    const client = createClient({ url, socket: { reconnectStrategy: false } });
    client.on("error", () => {});
    await client.connect();
    try {
      return await client.sendCommand(cmd);
    } finally {
      client.destroy();
    }
  }

  async function start(): Promise<void> {
    child = spawn("redis-server", argv, { stdio: "ignore" });
    const deadline = Date.now() + 5_000;
    for (;;) {
      try {
        await command(["PING"]);
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
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
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (typeof address === "object" && address !== null) resolve(address.port);
        else reject(new Error("no port"));
      });
    });
  });
}
