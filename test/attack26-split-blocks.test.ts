/**
 * attack26: a secret cut across three or more text blocks of a failure. The join of two blocks
 * (failure.ts `joinBlocks`) looked at one joint at a time and kept a block on its own line when the
 * text before it already read as a secret alone: the third piece of a key, a JWT's signature, the
 * tail of a path, or a key sent one character a block, reached the model as written. Over real
 * stdio (governClient) and through `governor proxy`.
 */
import { join } from "node:path";
import { createGovernor, failureFromResult } from "@governor/core";
import { redact } from "@governor/core/judge";
import { governClient, toModelResult } from "@governor/mcp";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, rawAnswersClient, startRawProxy } from "./proxy-support.ts";

const RAW_SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");

/** Each case: the blocks a server sends, and pieces of the secret none of which may be read. */
const CASES: { blocks: string[]; pieces: string[] }[] = [
  // A 32-character key in three blocks: the third alone is 15 of its characters.
  {
    blocks: ["refused: sk-live-", "T3stk1tF4keApiK", "ey0000000000000"],
    pieces: ["T3stk1tF4ke", "ey0000000000000"],
  },
  // The same key in two blocks, the first already a key alone: its tail stayed on its own line.
  {
    blocks: ["refused: sk-live-T3stk1tF4keApiK", "ey0000000000000 (rejected)"],
    pieces: ["ey0000000000000"],
  },
  // A JWT in three blocks: the signature, its secret part, came through whole.
  {
    blocks: [
      "bad bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
      "eyJzdWIiOiJ0ZXN0a2l0LWZha2UifQ",
      ".dGVzdGtpdC1mYWtlLXNpZ25hdHVyZQ",
    ],
    pieces: ["dGVzdGtpdC1mYWtlLXNpZ25hdHVyZQ", "eyJzdWIiOiJ0ZXN0a2l0LWZha2UifQ"],
  },
  // A path in three blocks: its tail named the key file.
  { blocks: ["cannot open /ho", "me/ali", "ce/.ssh/id_rsa"], pieces: ["id_rsa", "ali"] },
  // An AWS key one character a block: the model read it spaced out, whole.
  { blocks: ["key ", ..."AKIAIOSFODNN7EXAMPLE".split("")], pieces: ["A K I A I O S F O D"] },
];

/** What the model reads of a failure with these blocks, as the judge reads it. */
function modelText(blocks: string[]): string {
  const failure = failureFromResult({
    isError: true,
    content: blocks.map((text) => ({ type: "text", text })),
  });
  // The text the model reads is the failure's text redacted (then one line).
  return redact(failure.text);
}

function expectNoPiece(text: string, pieces: string[]): void {
  for (const piece of pieces) expect(text).not.toContain(piece);
}

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

describe("attack26: a secret cut across three or more text blocks", () => {
  it("the judge's text of the blocks hands redaction the secret whole", () => {
    for (const { blocks, pieces } of CASES) expectNoPiece(modelText(blocks), pieces);
  });

  it("keeps blocks that do not cut a word one a line", () => {
    const failure = failureFromResult({
      isError: true,
      content: [
        { type: "text", text: "not found" },
        { type: "text", text: "Try" },
        { type: "text", text: "again" },
      ],
    });
    expect(failure.text).toBe("not found\nTry\nagain");
  });

  const answers = JSON.stringify(
    CASES.map(({ blocks }) => ({
      result: { isError: true, content: blocks.map((text) => ({ type: "text", text })) },
    })),
  );

  it("governClient over stdio hands the model none of the pieces", async () => {
    const client = await rawAnswersClient("attack26-split", answers);
    closers.push(() => client.close());
    for (const [i, { pieces }] of CASES.entries()) {
      // A fresh governor each: no breaker or repeat from the call before.
      const governor = createGovernor({ tools: { write_note: { effect: "read_only" } } });
      const governed = governClient(client, { governor, server: "raw" });
      const outcome = await governed.callTool(governor.startRun(), {
        name: "write_note",
        arguments: { n: i },
      });
      expect(outcome.kind).not.toBe("ok");
      expectNoPiece(JSON.stringify(toModelResult(outcome)), pieces);
    }
  }, 30_000);

  it("governor proxy answers the host with none of the pieces", async () => {
    const proxy = await startRawProxy(
      [],
      { command: process.execPath, args: [RAW_SERVER] },
      { env: { RAW_MODE: "answers", RAW_ANSWERS: answers } },
    );
    closers.push(() => proxy.close());
    for (const [i, { pieces }] of CASES.entries()) {
      proxy.send({
        jsonrpc: "2.0",
        id: i + 1,
        method: "tools/call",
        params: { name: "write_note", arguments: { n: i } },
      });
      const answer = await proxy.answer(i + 1);
      expect((answer.result as CallToolResult).isError).toBe(true);
      expectNoPiece(JSON.stringify(answer.result), pieces);
    }
  }, 60_000);
});
