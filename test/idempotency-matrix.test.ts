import { readFileSync } from "node:fs";
import {
  type CallOutcome,
  createGovernor,
  type PolicyInput,
  type VerifyResult,
} from "@governor/core";
import { governClient } from "@governor/mcp";
import {
  connectHttp,
  connectInMemory,
  createFaultServer,
  FaultState,
  startHttpServer,
} from "@governor/testkit";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import {
  EXPECTED,
  KINDS,
  type Kind,
  type Mode,
  renderMatrix,
  STEPS,
} from "./idempotency-matrix.ts";

/**
 * The fault matrix of docs/idempotency.md: every kind of tool against every way a call can go
 * wrong, end to end against the fault server. The effects the server records are counted, so a
 * duplicated write cannot hide. The table in the docs is rendered from EXPECTED and checked here.
 */

function describeOutcome(outcome: CallOutcome<CallToolResult>): string {
  if (outcome.kind === "ok") return outcome.replayed ? "ok (verified)" : "ok";
  return `${outcome.kind} ${outcome.reason}`;
}

async function runCell(
  kind: Kind,
  mode: Mode,
): Promise<{ outcome: CallOutcome<CallToolResult>; effects: number }> {
  const { tool, args, policy } = KINDS[kind];
  const scenario = { [tool]: [STEPS[mode]], write_then_drop: [] };
  const verify = (state: FaultState) => ({
    append_log: async (): Promise<VerifyResult> =>
      state.effects().some((e) => e.tool === "append_log" && e.args.line === args.line)
        ? { effect: "present", result: { content: [{ type: "text", text: "written (verified)" }] } }
        : { effect: "absent" },
  });
  const policyInput: PolicyInput = {
    tools: policy,
    defaults: { retry: { baseDelayMs: 1, maxDelayMs: 5 } },
    servers: { fault: { breaker: { threshold: 100 } } },
  };

  if (mode === "lost_after_commit") {
    const http = await startHttpServer({ scenario });
    const { client } = await connectHttp(http.url);
    try {
      const governor = createGovernor(policyInput, { metrics: false, verify: verify(http.state) });
      const governed = governClient(client, { governor, server: "fault", requestTimeoutMs: 300 });
      const outcome = await governed.callTool(governor.startRun(), { name: tool, arguments: args });
      return { outcome, effects: http.state.effects().filter((e) => e.tool === tool).length };
    } finally {
      await client.close();
      await http.close();
    }
  }

  const state = new FaultState({ scenario });
  const { client } = await connectInMemory(createFaultServer({ state }));
  const reconnect = async () => {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await createFaultServer({ state }).connect(serverSide);
    await client.connect(clientSide);
  };
  try {
    const governor = createGovernor(policyInput, { metrics: false, verify: verify(state) });
    const governed = governClient(client, {
      governor,
      server: "fault",
      requestTimeoutMs: 200,
      reconnect,
    });
    const outcome = await governed.callTool(governor.startRun(), { name: tool, arguments: args });
    return { outcome, effects: state.effects().filter((e) => e.tool === tool).length };
  } finally {
    await client.close();
  }
}

describe("the fault matrix: no effect is ever duplicated", () => {
  for (const kind of Object.keys(KINDS) as Kind[]) {
    for (const mode of Object.keys(STEPS) as Mode[]) {
      it(`${kind} × ${mode} → ${EXPECTED[kind][mode]}`, async () => {
        const { outcome, effects } = await runCell(kind, mode);
        expect(`${describeOutcome(outcome)}, ${effects}`).toBe(EXPECTED[kind][mode]);
        expect(effects).toBeLessThanOrEqual(1);
        if (outcome.kind === "stop")
          expect(outcome.result.content[0].text).toMatch(/may have happened/);
      });
    }
  }

  it("is the table in docs/idempotency.md", () => {
    const doc = readFileSync(new URL("../docs/idempotency.md", import.meta.url), "utf8");
    // Compared without spacing, so a Markdown formatter may pad the table.
    const squash = (text: string) => text.replace(/\s+/g, "").replace(/-+/g, "-");
    expect(squash(doc)).toContain(squash(renderMatrix()));
  });
});
