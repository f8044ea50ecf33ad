// What the tests' local Redis servers share (testing-server.ts, testing-cluster.ts,
// testing-sentinel.ts): a loopback port, a one-command client, and a redis-server process started
// and waited for until it answers PING.
import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer } from "node:net";
import { createClient } from "redis";

/** Sends one command to the server at `url` with a short-lived client. */
export async function sendOnce(url: string, args: string[]): Promise<unknown> {
  const client = createClient({
    url,
    socket: { reconnectStrategy: false, connectTimeout: 1_000 },
  });
  client.on("error", () => {});
  await client.connect();
  try {
    return await client.sendCommand(args);
  } finally {
    client.destroy();
  }
}

/**
 * Starts `redis-server argv` and resolves once `ping` answers (5 s at most); the process is
 * handed to `started` first, so a caller that keeps its children can stop it whatever happens.
 */
export async function spawnRedis(
  argv: string[],
  ping: () => Promise<unknown>,
  started: (child: ChildProcess) => void = () => {},
): Promise<ChildProcess> {
  const child = spawn("redis-server", argv, { stdio: "ignore" });
  started(child);
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      await ping();
      return child;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(25);
    }
  }
}

/** Binds `port` on loopback (0: any free one) and frees it; the port bound. Rejects if taken. */
export function bindPort(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => {
        if (typeof address === "object" && address !== null) resolve(address.port);
        else reject(new Error("no port"));
      });
    });
  });
}

/** A free loopback port that is none of `taken`. */
export async function freePort(taken: readonly number[] = []): Promise<number> {
  for (;;) {
    const port = await bindPort(0);
    if (!taken.includes(port)) return port;
  }
}

/**
 * Removes a killed server's directory. A server killed during an AOF rewrite leaves its forked
 * child writing there for a moment, so a plain remove can meet a file created after it listed the
 * directory (ENOTEMPTY): retried for up to two seconds.
 */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The arguments every local test server shares: loopback, its own `dir`, AOF as RedisStore checks at connect. */
export function serverArgs(port: number, dir: string): string[] {
  return [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--save",
    "",
    "--appendonly",
    "yes",
    "--appendfsync",
    "everysec",
  ];
}

/** The redis-server processes of one local setup (a cluster, a Sentinel group), by port. */
export interface RedisProcesses {
  /** Whether the process on `port` was started and has not exited. */
  alive(port: number): boolean;
  /** Sends one command to the server on `port`. */
  command(port: number, args: string[]): Promise<unknown>;
  /** Starts `redis-server argv` for `port` and waits until it answers PING. */
  start(port: number, argv: string[]): Promise<void>;
  /** Kills the process on `port` (SIGKILL, like a crash) and waits until it exited. */
  kill(port: number): Promise<void>;
  /** Sends `signal` to the process on `port` if it is alive. */
  signal(port: number, signal: NodeJS.Signals): void;
  /** Kills every process still alive and waits until each exited. */
  killAll(): Promise<void>;
}

export function redisProcesses(): RedisProcesses {
  const children = new Map<number, ChildProcess>();
  const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;
  const alive = (port: number) => {
    const child = children.get(port);
    return child !== undefined && running(child);
  };
  const command = (port: number, args: string[]) => sendOnce(`redis://127.0.0.1:${port}`, args);
  const killed = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      if (!running(child)) return resolve();
      child.once("exit", () => resolve());
      process.kill(child.pid as number, "SIGKILL");
    });
  return {
    alive,
    command,
    async start(port, argv) {
      await spawnRedis(
        argv,
        () => command(port, ["PING"]),
        (child) => children.set(port, child),
      );
    },
    async kill(port) {
      const child = children.get(port);
      if (child !== undefined) await killed(child);
    },
    signal(port, signal) {
      const child = children.get(port);
      if (child !== undefined && running(child)) process.kill(child.pid as number, signal);
    },
    async killAll() {
      await Promise.all([...children.values()].map(killed));
    },
  };
}
