/**
 * attack26: an Elixir/Erlang (BEAM) stack trace. Redaction drops the frames of Node, the JVM,
 * .NET, Python, Go, Rust, Ruby and PHP, but a BEAM frame, `(notes 0.1.0) lib/notes.ex:12:
 * Notes.create/1`, names only a relative path, so neither the frame rules nor the path rule read
 * it: the model read the server's modules, files and line numbers. Through a run with a host
 * executor, governClient over real stdio and `governor proxy`.
 */
import { join } from "node:path";
import { createGovernor } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, rawAnswersClient, startRawProxy } from "./proxy-support.ts";

const RAW_SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");

const TRACE = [
  "** (ArgumentError) title must not be empty",
  "    (notes 0.1.0) lib/notes/store.ex:42: Notes.Store.create/2",
  '    (elixir 1.15.7) lib/enum.ex:1693: Enum."-map/2-lists^map/1-1-"/2',
  "    (stdlib 5.0.2) gen_server.erl:1077: :gen_server.try_dispatch/4",
  "    (elixir) lib/kernel/parallel_compiler.ex:346: anonymous fn/5 in Kernel.ParallelCompiler.spawn_workers/8",
].join("\n");

/** What the frames name: none of it may reach the model. */
const FRAME_PARTS = [
  "store.ex",
  "Notes.Store.create",
  "enum.ex",
  "gen_server.erl",
  "try_dispatch",
  "parallel_compiler",
];

function expectNoFrame(text: string): void {
  for (const part of FRAME_PARTS) expect(text).not.toContain(part);
  // The message itself stays: the model can act on it.
  expect(text).toContain("title must not be empty");
}

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

function governor() {
  return createGovernor({ tools: { "*": { effect: "read_only" } } });
}

describe("attack26: an Elixir/Erlang stack trace", () => {
  it("a host executor's error: the model reads the message, not the frames", async () => {
    for (const trace of [TRACE, TRACE.replaceAll("\n", " ")]) {
      const outcome = await governor()
        .startRun()
        .call({ tool: "create_note", args: {} }, async () => {
          throw new Error(trace);
        });
      expect(outcome.kind).not.toBe("ok");
      if (outcome.kind !== "ok") expectNoFrame(outcome.result.content[0].text);
    }
  });

  const answers = JSON.stringify([
    { result: { isError: true, content: [{ type: "text", text: TRACE }] } },
  ]);

  it("governClient over stdio: the model reads no frame", async () => {
    const client = await rawAnswersClient("attack26-beam", answers);
    closers.push(() => client.close());
    const g = governor();
    const outcome = await governClient(client, { governor: g, server: "raw" }).callTool(
      g.startRun(),
      { name: "write_note", arguments: {} },
    );
    expect(outcome.kind).not.toBe("ok");
    expectNoFrame(JSON.stringify(toModelResult(outcome)));
  }, 30_000);

  it("governor proxy: the host reads no frame", async () => {
    const proxy = await startRawProxy(
      [],
      { command: process.execPath, args: [RAW_SERVER] },
      { env: { RAW_MODE: "answers", RAW_ANSWERS: answers } },
    );
    closers.push(() => proxy.close());
    proxy.send({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "write_note", arguments: {} },
    });
    const answer = await proxy.answer(1);
    expect((answer.result as CallToolResult).isError).toBe(true);
    expectNoFrame(JSON.stringify(answer.result));
  }, 60_000);
});
