import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A Redis server for the benchmark: REDIS_URL when set, else a private one on loopback. */
export async function redisForBench(): Promise<{ url: string; stop(): void } | undefined> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: () => {} };
  if (spawnSync("redis-server", ["--version"]).status !== 0) return undefined;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "governor-redis-"));
  const child: ChildProcess = spawn(
    "redis-server",
    [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      // The persistence RedisStore requires at connect (issue 8.3).
      "--appendonly",
      "yes",
      "--appendfsync",
      "everysec",
      "--dir",
      dir,
    ],
    { stdio: "ignore" },
  );
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 50; i++) {
    if (
      spawnSync("redis-cli", ["-p", String(port), "ping"])
        .stdout?.toString()
        .trim() === "PONG"
    )
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url, stop: () => child.kill() };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}
