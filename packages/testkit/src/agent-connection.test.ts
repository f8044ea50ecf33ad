import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectFaultServer, type FaultConnection } from "./agent-connection.ts";
import { blindRetryRuntime, naiveRuntime } from "./agent-runtimes.ts";
import { countDuplicateWrites, readEffects } from "./effects.ts";

const task = { id: "t", title: "t", first: { name: "get_note", arguments: {} } };

describe("connectFaultServer (stdio) and the plain runtimes", () => {
  let dir: string;
  let effectsFile: string;
  let connection: FaultConnection;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "governor-agent-"));
    effectsFile = join(dir, "effects.jsonl");
    connection = await connectFaultServer({
      effectsFile,
      scenario: { get_note: [{ kind: "status", status: 503 }] },
    });
  });

  afterAll(async () => {
    await connection?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("counts calls on the wire, failed ones included, and lost ones after a reconnect", async () => {
    const blind = blindRetryRuntime(connection).startTask(task);
    const read = await blind.call({ name: "get_note", arguments: { id: "welcome" } });
    // 503, then the note: two calls on the wire, one failed.
    expect(read.observation).toMatchObject({ isError: false });
    expect(connection.counts()).toEqual({ toolCalls: 2, failedCalls: 1 });

    const naive = naiveRuntime(connection).startTask(task);
    const lost = await naive.call({ name: "write_then_drop", arguments: { title: "a" } });
    expect(lost.observation).toEqual({
      isError: true,
      text: "MCP error -32000: Connection closed",
    });
    expect(connection.closed).toBe(true);
    expect(connection.counts()).toEqual({ toolCalls: 3, failedCalls: 2 });

    // The next call reconnects to a new child on the same effects file: the write is repeated.
    const again = await naive.call({ name: "write_then_drop", arguments: { title: "a" } });
    expect(again.observation.isError).toBe(false);
    expect(connection.closed).toBe(false);
    expect(connection.counts()).toEqual({ toolCalls: 4, failedCalls: 2 });
    expect(countDuplicateWrites(readEffects(effectsFile))).toBe(1);
  });
});
