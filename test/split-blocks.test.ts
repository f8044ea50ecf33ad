/**
 * A failure whose secrets a server cut in two across its text blocks: each half alone reads as a
 * word, and joined one a line the model read both. Over real stdio, through the governed client
 * and `governor proxy`: the model reads placeholders, never a half.
 */
import { join } from "node:path";
import { createGovernor, failureFromResult, type ToolResultLike } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, startRawProxy } from "./proxy-support.ts";

const RAW_SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");
const HALVES = ["4f9aQ2xZ", "7bN1mK8pL3vR6tY0", "AKIAIOSFOD", "NN7EXAMPLE"];

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

function expectNoHalf(text: string): void {
  for (const half of HALVES) expect(text).not.toContain(half);
  expect(text).toContain("[token]");
}

describe("a secret cut across two text blocks", () => {
  const textOf = (result: ToolResultLike) => failureFromResult(result).text;

  it("a failure's text joins a word cut in two when it is a secret whole, and keeps other blocks a line each", () => {
    expect(
      textOf({
        isError: true,
        content: [
          { type: "text", text: "key AKIAIOSFOD" },
          { type: "text", text: "NN7EXAMPLE" },
        ],
      }),
    ).toBe("key AKIAIOSFODNN7EXAMPLE");
    expect(
      textOf({
        isError: true,
        content: [
          { type: "text", text: "not found" },
          { type: "text", text: "Try again" },
        ],
      }),
    ).toBe("not found\nTry again");
  });

  it("governClient over stdio hands the model placeholders", async () => {
    const client = new Client({ name: "split-test", version: "1" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [RAW_SERVER],
        env: { ...(process.env as Record<string, string>), RAW_MODE: "split" },
      }),
    );
    closers.push(() => client.close());
    const governor = createGovernor({ tools: { write_note: { effect: "read_only" } } });
    const governed = governClient(client, { governor, server: "raw" });
    const outcome = await governed.callTool(governor.startRun(), {
      name: "write_note",
      arguments: { t: "a" },
    });
    expect(outcome.kind).not.toBe("ok");
    expectNoHalf(JSON.stringify(toModelResult(outcome)));
  }, 30_000);

  it("governor proxy answers the host with placeholders", async () => {
    const proxy = await startRawProxy(
      [],
      { command: process.execPath, args: [RAW_SERVER] },
      { env: { RAW_MODE: "split" } },
    );
    closers.push(() => proxy.close());
    proxy.send({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "write_note", arguments: { t: "a" } },
    });
    const answer = await proxy.answer(1);
    expect((answer.result as CallToolResult).isError).toBe(true);
    expectNoHalf(JSON.stringify(answer.result));
  }, 60_000);
});
