/**
 * attack28: JSON-RPC errors the server sends with the codes the MCP SDK uses for its own local
 * failures (-32000 ConnectionClosed, -32001 RequestTimeout) and other codes. A server's error
 * response is the host's (docs/architecture.md §3), never text for the model.
 */
import { createGovernor } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import { afterAll, describe, expect, it } from "vitest";
import { rawAnswersClient } from "./proxy-support.ts";

const MARK = "internal-detail-QX7";

const ERRORS: [string, { code: unknown; message: string; data?: unknown }][] = [
  ["-32600", { code: -32600, message: `Invalid Request ${MARK}` }],
  ["-32601", { code: -32601, message: `Method not found ${MARK}` }],
  ["-32602", { code: -32602, message: `Invalid params ${MARK}` }],
  ["-32603", { code: -32603, message: `Internal error ${MARK}` }],
  ["-32000 from the peer", { code: -32000, message: `Connection closed ${MARK}` }],
  ["-32001 from the peer", { code: -32001, message: `Request timed out ${MARK}` }],
  ["-32050 custom", { code: -32050, message: `Backend said no ${MARK}` }],
  ["positive custom", { code: 42, message: `Custom failure ${MARK}` }],
  ["-32602 with data", { code: -32602, message: "Invalid params", data: { detail: MARK } }],
];

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

describe("attack28: a server's JSON-RPC error never reaches the model (governClient, stdio)", () => {
  const answers = JSON.stringify(ERRORS.map(([, error]) => ({ error })));

  it("each code goes to the host; the model reads no part of it", async () => {
    const client = await rawAnswersClient("attack28-codes", answers);
    closers.push(() => client.close());
    const seen: string[] = [];
    for (const [i, [what]] of ERRORS.entries()) {
      const g = createGovernor(
        {
          tools: { "*": { effect: "read_only", retry: { attempts: 1 } } },
        },
        { onHostError: () => undefined },
      );
      const outcome = await governClient(client, { governor: g, server: "raw" }).callTool(
        g.startRun(),
        { name: "write_note", arguments: { n: i } },
      );
      const modelText = JSON.stringify(toModelResult(outcome));
      const host = outcome.kind === "stop" && outcome.hostError !== undefined;
      if (!host || modelText.includes(MARK)) {
        seen.push(
          `${what}: ${outcome.kind} ${"reason" in outcome ? outcome.reason : ""} ${modelText}`,
        );
      }
    }
    expect(seen).toEqual([]);
  }, 30_000);
});
