/**
 * Test helper (not exported by the package): a Redis Cluster of 3 primaries and 3 replicas on
 * loopback, each node a `redis-server --cluster-enabled yes` child of this process, joined by
 * `redis-cli --cluster create … --cluster-replicas 1`. The ports are free ones (each with its
 * cluster bus port, +10000, free too), or `GOVERNOR_REDIS_CLUSTER_PORT` + offset … + 5.
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createCluster } from "redis";
import { bindPort, redisProcesses, removeDir, serverArgs, sleep } from "./testing-process.ts";

export { sendOnce } from "./testing-process.ts";

/** One node of the cluster, as `CLUSTER NODES` describes it. */
export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly primary: boolean;
  /** The primary's id, for a replica. */
  readonly primaryId: string | undefined;
  /** The slot ranges a primary serves. */
  readonly slots: readonly (readonly [number, number])[];
}

/** A cluster this test owns. */
export interface LocalCluster {
  readonly ports: readonly number[];
  /** The root nodes for `createCluster({ rootNodes })`. */
  readonly rootNodes: { url: string }[];
  /** Sends one command to the node on `port`, with a short-lived client. */
  command(port: number, args: string[]): Promise<unknown>;
  /** The nodes as the node on `port` (by default a live one) sees them. */
  nodes(port?: number): Promise<ClusterNode[]>;
  /** The primary serving `slot`. */
  primaryOf(slot: number): Promise<ClusterNode>;
  /** Kills the node on `port` with SIGKILL (by its pid): no shutdown, no last write to disk. */
  kill(port: number): Promise<void>;
  /** Starts the node on `port` again with its data and cluster config (it rejoins). */
  restart(port: number): Promise<void>;
  /**
   * Waits until every live node says the cluster is ok, every live replica is in sync, and `port`
   * (if given) is a replica.
   */
  settled(options?: { replica?: number; timeoutMs?: number }): Promise<void>;
  /** A connected cluster client (closed by `stop`). */
  client(): Promise<ReturnType<typeof createCluster>>;
  stop(): Promise<void>;
}

const run = promisify(execFile);

/**
 * Whether this run starts local clusters: `GOVERNOR_REDIS_CLUSTER=1` requires it (CI: a missing
 * binary is then a failure), `0` skips it, and unset it follows the other Redis tests (REDIS_URL
 * or GOVERNOR_REQUIRE_REDIS=1). `missing` says which binary is not on PATH.
 */
export function clusterTests(): { readonly run: boolean; readonly missing: string | undefined } {
  const flag = process.env.GOVERNOR_REDIS_CLUSTER;
  const wanted =
    flag === "1" ||
    (flag !== "0" &&
      (Boolean(process.env.REDIS_URL) || process.env.GOVERNOR_REQUIRE_REDIS === "1"));
  let missing: string | undefined;
  for (const binary of ["redis-server", "redis-cli"]) {
    try {
      execFileSync(binary, ["--version"], { stdio: "ignore" });
    } catch {
      missing ??= `${binary} is not on PATH`;
    }
  }
  if (wanted && missing !== undefined && flag === "1") {
    throw new Error(
      `GOVERNOR_REDIS_CLUSTER=1 but ${missing}: install redis-server (Debian's package brings redis-cli).`,
    );
  }
  return { run: wanted && missing === undefined, missing };
}

/** A connected cluster client for `rootNodes` (for test processes outside this package). */
export async function connectCluster(
  rootNodes: { url: string }[],
): Promise<ReturnType<typeof createCluster>> {
  const cluster = createCluster({ rootNodes, defaults: { socket: { connectTimeout: 1_000 } } });
  cluster.on("error", () => {});
  return await cluster.connect();
}

/** Starts 6 nodes and joins them into a cluster; `offset` picks ports apart from other files'. */
export async function startLocalCluster(offset = 0): Promise<LocalCluster> {
  const base = Number(process.env.GOVERNOR_REDIS_CLUSTER_PORT ?? "");
  const ports: number[] = [];
  for (let i = 0; i < 6; i++) {
    ports.push(
      Number.isInteger(base) && base > 0 ? base + offset + i : await freeClusterPort(ports),
    );
  }
  const dir = mkdtempSync(join(tmpdir(), "governor-cluster-"));
  const processes = redisProcesses();
  const { alive, command } = processes;
  const clients: ReturnType<typeof createCluster>[] = [];

  async function start(port: number): Promise<void> {
    const nodeDir = join(dir, String(port));
    mkdirSync(nodeDir, { recursive: true });
    await processes.start(port, [
      ...serverArgs(port, nodeDir),
      "--cluster-enabled",
      "yes",
      "--cluster-config-file",
      "nodes.conf",
      // A primary is taken for failed after 2 s: a failover takes 3-5 s (1 s let a loaded
      // machine's slow answers look like failures).
      "--cluster-node-timeout",
      "2000",
      // A replica whose link broke a while ago may still be promoted (the failover tests
      // break it on purpose, to lose writes).
      "--cluster-replica-validity-factor",
      "0",
    ]);
  }

  async function nodes(port?: number): Promise<ClusterNode[]> {
    const live = port ?? ports.find(alive) ?? ports[0];
    const text = String(await command(live as number, ["CLUSTER", "NODES"]));
    return text
      .trim()
      .split("\n")
      .map((line) => {
        const [id, address, flags, primaryId, , , , , ...slots] = line.split(" ");
        return {
          id: id as string,
          port: Number((address as string).split(":")[1]?.split("@")[0]),
          primary: (flags as string).includes("master") && !(flags as string).includes("fail"),
          primaryId: primaryId === "-" ? undefined : primaryId,
          slots: slots
            .filter((s) => !s.startsWith("["))
            .map((s) => {
              const [from, to] = s.split("-").map(Number);
              return [from as number, (to ?? from) as number] as const;
            }),
        };
      });
  }

  async function settled(options: { replica?: number; timeoutMs?: number } = {}): Promise<void> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      try {
        const live = ports.filter(alive);
        const states = await Promise.all(
          live.map(async (p) => String(await command(p, ["CLUSTER", "INFO"]))),
        );
        // Every replica has finished its sync (WAIT gets no answer from one still syncing).
        const links = await Promise.all(
          live.map(async (p) => String(await command(p, ["INFO", "replication"]))),
        );
        const ok =
          states.every((s) => s.includes("cluster_state:ok")) &&
          links.every((s) => s.includes("role:master") || s.includes("master_link_status:up"));
        const primaries = (await nodes()).filter((n) => n.primary && n.slots.length > 0);
        const replicaOk =
          options.replica === undefined ||
          (await nodes(options.replica)).some((n) => n.port === options.replica && !n.primary);
        if (ok && primaries.length === 3 && replicaOk) return;
      } catch {
        // A node still starting or just killed: ask again.
      }
      if (Date.now() > deadline) throw new Error("the local cluster did not settle in time");
      await sleep(100);
    }
  }

  await Promise.all(ports.map(start));
  await run(
    "redis-cli",
    [
      "--cluster",
      "create",
      ...ports.map((p) => `127.0.0.1:${p}`),
      "--cluster-replicas",
      "1",
      "--cluster-yes",
    ],
    { timeout: 60_000 },
  );
  await settled();

  return {
    ports,
    rootNodes: ports.slice(0, 3).map((p) => ({ url: `redis://127.0.0.1:${p}` })),
    command,
    nodes,
    async primaryOf(slot) {
      const found = (await nodes()).find(
        (n) => n.primary && n.slots.some(([from, to]) => slot >= from && slot <= to),
      );
      if (found === undefined) throw new Error(`no primary serves slot ${slot}`);
      return found;
    },
    kill: processes.kill,
    restart: start,
    settled,
    async client() {
      const cluster = await connectCluster(
        ports.slice(0, 3).map((p) => ({ url: `redis://127.0.0.1:${p}` })),
      );
      clients.push(cluster);
      return cluster;
    },
    async stop() {
      for (const cluster of clients.splice(0)) cluster.destroy();
      await processes.killAll();
      removeDir(dir);
    },
  };
}

/** A free loopback port whose cluster bus port (+10000) is free too. */
async function freeClusterPort(taken: number[]): Promise<number> {
  for (;;) {
    const port = await bindPort(0);
    if (port + 10_000 > 65_535 || taken.includes(port)) continue;
    if ((await bindPort(port + 10_000).catch(() => 0)) !== 0) return port;
  }
}
