import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  freePort,
  sendOnce,
  serverArgs,
  spawnRedis,
} from "../packages/redis/src/testing-process.ts";

/** A Redis server for the benchmark: REDIS_URL when set, else a private one on loopback. */
export async function redisForBench(): Promise<{ url: string; stop(): void } | undefined> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: () => {} };
  if (spawnSync("redis-server", ["--version"]).status !== 0) return undefined;
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  // The persistence RedisStore requires at connect (AOF), in a directory of its own.
  const dir = mkdtempSync(join(tmpdir(), "governor-redis-"));
  const child = await spawnRedis(serverArgs(port, dir), () => sendOnce(url, ["PING"]));
  return { url, stop: () => child.kill() };
}
