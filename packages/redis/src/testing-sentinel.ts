/**
 * Test helper (not exported by the package): one primary and one replica (`redis-server
 * --replicaof`) watched by 3 sentinels (`redis-server sentinel.conf --sentinel`, quorum 2), all
 * children of this process on loopback. The ports are free ones, or
 * `GOVERNOR_REDIS_SENTINEL_PORT` … + 4 (the two servers first, then the sentinels).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSentinel } from "redis";
import { freePort, redisProcesses, removeDir, serverArgs, sleep } from "./testing-process.ts";

/** The name the sentinels monitor the primary under. */
export const SENTINEL_NAME = "governor-test";

/** A Sentinel setup this test owns. */
export interface LocalSentinel {
  /** The two Redis servers' ports (the first starts as the primary). */
  readonly servers: readonly number[];
  /** The sentinels' ports. */
  readonly sentinels: readonly number[];
  /** The sentinels, for `createSentinel({ name: SENTINEL_NAME, sentinelRootNodes })`. */
  readonly sentinelRootNodes: { host: string; port: number }[];
  /** Sends one command to the server (or sentinel) on `port`, with a short-lived client. */
  command(port: number, args: string[]): Promise<unknown>;
  /** The port of the primary the sentinels name now. */
  primary(): Promise<number>;
  /** The port of the other server. */
  replicaOf(primary: number): number;
  /** Kills the server on `port` with SIGKILL (by its pid): no shutdown, no last write to disk. */
  kill(port: number): Promise<void>;
  /** Freezes (SIGSTOP) or thaws (SIGCONT) the server on `port`: its connections stay open. */
  signal(port: number, signal: "SIGSTOP" | "SIGCONT"): void;
  /**
   * Starts the server on `port` again with its data, as a replica of `replicaOf` when given (as
   * the sentinels would make it, a few seconds sooner).
   */
  restart(port: number, replicaOf?: number): Promise<void>;
  /**
   * Waits until the sentinels name another primary than `from` (when given), that primary
   * answers as one, and every live server other than it is its replica, in sync.
   */
  settled(options?: { from?: number; timeoutMs?: number }): Promise<number>;
  /** A connected Sentinel client (closed by `stop`). */
  client(): Promise<ReturnType<typeof createSentinel>>;
  stop(): Promise<void>;
}

/**
 * Whether this run starts a local Sentinel setup: `GOVERNOR_REDIS_SENTINEL=1` requires it (CI: a
 * missing redis-server is then a failure), `0` skips it, and unset it follows the other Redis
 * tests (REDIS_URL or GOVERNOR_REQUIRE_REDIS=1).
 */
export function sentinelTests(): { readonly run: boolean; readonly missing: string | undefined } {
  const flag = process.env.GOVERNOR_REDIS_SENTINEL;
  const wanted =
    flag === "1" ||
    (flag !== "0" &&
      (Boolean(process.env.REDIS_URL) || process.env.GOVERNOR_REQUIRE_REDIS === "1"));
  let missing: string | undefined;
  try {
    execFileSync("redis-server", ["--version"], { stdio: "ignore" });
  } catch {
    missing = "redis-server is not on PATH";
  }
  if (wanted && missing !== undefined && flag === "1") {
    throw new Error(`GOVERNOR_REDIS_SENTINEL=1 but ${missing}: install redis-server.`);
  }
  return { run: wanted && missing === undefined, missing };
}

/** Starts the two servers and three sentinels, and waits until the sentinels see the replica. */
export async function startLocalSentinel(): Promise<LocalSentinel> {
  const base = Number(process.env.GOVERNOR_REDIS_SENTINEL_PORT ?? "");
  const ports: number[] = [];
  for (let i = 0; i < 5; i++) {
    ports.push(Number.isInteger(base) && base > 0 ? base + i : await freePort(ports));
  }
  const servers = ports.slice(0, 2);
  const sentinels = ports.slice(2);
  const dir = mkdtempSync(join(tmpdir(), "governor-sentinel-"));
  const processes = redisProcesses();
  const { alive, command, killAll } = processes;
  const clients: ReturnType<typeof createSentinel>[] = [];

  async function startServer(port: number, replicaOf?: number): Promise<void> {
    const serverDir = join(dir, String(port));
    mkdirSync(serverDir, { recursive: true });
    await processes.start(port, [
      ...serverArgs(port, serverDir),
      ...(replicaOf === undefined ? [] : ["--replicaof", "127.0.0.1", String(replicaOf)]),
    ]);
  }

  async function startSentinel(port: number): Promise<void> {
    const sentinelDir = join(dir, `sentinel-${port}`);
    mkdirSync(sentinelDir, { recursive: true });
    const conf = join(sentinelDir, "sentinel.conf");
    // A primary is taken for down after 2 s without an answer (1 s let a loaded machine's slow
    // answers look like failures); a failover then takes 3-5 s.
    writeFileSync(
      conf,
      [
        `port ${port}`,
        "bind 127.0.0.1",
        `dir ${sentinelDir}`,
        `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${servers[0]} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_NAME} 2000`,
        `sentinel failover-timeout ${SENTINEL_NAME} 10000`,
        `sentinel parallel-syncs ${SENTINEL_NAME} 1`,
        "",
      ].join("\n"),
    );
    await processes.start(port, [conf, "--sentinel"]);
  }

  async function primary(): Promise<number> {
    for (const port of sentinels.filter(alive)) {
      try {
        const reply = (await command(port, [
          "SENTINEL",
          "GET-MASTER-ADDR-BY-NAME",
          SENTINEL_NAME,
        ])) as string[] | null;
        if (Array.isArray(reply)) return Number(reply[1]);
      } catch {
        // Ask the next sentinel.
      }
    }
    throw new Error("no sentinel names a primary");
  }

  async function settled(options: { from?: number; timeoutMs?: number } = {}): Promise<number> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      try {
        const named = await primary();
        // Every sentinel names the same primary and knows the other sentinels.
        const views = await Promise.all(
          sentinels.map(async (port) => {
            const master = (await command(port, ["SENTINEL", "MASTER", SENTINEL_NAME])) as string[];
            const field = (name: string) => master[master.indexOf(name) + 1];
            return { port: Number(field("port")), sentinels: Number(field("num-other-sentinels")) };
          }),
        );
        const role = String(await command(named, ["INFO", "replication"]));
        const replicas = servers.filter((p) => p !== named && alive(p));
        const links = await Promise.all(
          replicas.map(async (p) => String(await command(p, ["INFO", "replication"]))),
        );
        const ok =
          named !== options.from &&
          views.every((v) => v.port === named && v.sentinels === sentinels.length - 1) &&
          role.includes("role:master") &&
          role.includes(`connected_slaves:${replicas.length}`) &&
          links.every(
            (s) => s.includes(`master_port:${named}`) && s.includes("master_link_status:up"),
          );
        if (ok) return named;
      } catch {
        // A server still starting or just killed: ask again.
      }
      if (Date.now() > deadline) throw new Error("the local Sentinel setup did not settle in time");
      await sleep(100);
    }
  }

  try {
    await startServer(servers[0] as number);
    await startServer(servers[1] as number, servers[0]);
    await Promise.all(sentinels.map(startSentinel));
    await settled();
    // The sentinels list the replica once they have read the primary's INFO (every 10 s at
    // first, then every second): a failover before that would have nothing to promote.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const seen = await Promise.all(
        sentinels.map(async (port) => {
          const list = (await command(port, ["SENTINEL", "REPLICAS", SENTINEL_NAME])) as unknown[];
          return list.length;
        }),
      );
      if (seen.every((n) => n >= 1)) break;
      if (Date.now() > deadline) throw new Error("the sentinels did not find the replica in time");
      await sleep(100);
    }
  } catch (error) {
    await killAll();
    removeDir(dir);
    throw error;
  }

  return {
    servers,
    sentinels,
    sentinelRootNodes: sentinels.map((port) => ({ host: "127.0.0.1", port })),
    command,
    primary,
    replicaOf: (port) => servers.find((p) => p !== port) as number,
    kill: processes.kill,
    signal: processes.signal,
    restart: (port, replicaOf) => startServer(port, replicaOf),
    settled,
    async client() {
      const sentinel = createSentinel({
        name: SENTINEL_NAME,
        sentinelRootNodes: sentinels.map((port) => ({ host: "127.0.0.1", port })),
        nodeClientOptions: { socket: { connectTimeout: 1_000 } },
        sentinelClientOptions: { socket: { connectTimeout: 1_000 } },
      });
      sentinel.on("error", () => {});
      await sentinel.connect();
      clients.push(sentinel);
      return sentinel;
    },
    async stop() {
      await Promise.all(clients.splice(0).map((c) => c.destroy().catch(() => {})));
      await killAll();
      removeDir(dir);
    },
  };
}
