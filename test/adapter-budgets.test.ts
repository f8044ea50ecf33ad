/**
 * Every run budget (calls, retries, corrections, switches, wall time) is enforced on every
 * surface, through the real SDKs' own loops: the AI SDK's `generateText` (ai 6 and ai 7),
 * LangChain's `createAgent`, the OpenAI Agents SDK's `Runner` over a function tool and over an
 * MCP server (its own `MCPServerStdio`), and `@governor/mcp`'s governed client over real stdio.
 * Each surface plays the same plan of tool calls (a scripted model that keeps calling until the
 * run stops); the test reads what the tool or the server saw, what the run's summary says, and
 * that nothing ran after the stop.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { governTools as aiGovernTools, governorStopCondition } from "@governor/ai-sdk";
import {
  type BudgetName,
  createGovernor,
  GovernorStopError,
  type PolicyInput,
  type Run,
  type RunSummary,
} from "@governor/core";
import { governTools as lcGovernTools } from "@governor/langchain";
import { governorMiddleware } from "@governor/langchain/agent";
import { governClient, toModelResult } from "@governor/mcp";
import { governedTool, governMcpServer, governorStopOf } from "@governor/openai-agents";
import { type Scenario, stateFileFor, stdioServerParams } from "@governor/testkit";
import { tool as lcTool } from "@langchain/core/tools";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { MCPServerStdio } from "@openai/agents";
import { createAgent } from "langchain";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { SDKS as AI_SDKS, callTool, say } from "../packages/ai-sdk/src/test-support/sdks.ts";
import {
  runTask,
  SDK_UNSUPPORTED,
  SKIP_REASON,
  stdioFaultServer,
} from "./openai-agents-support.ts";
import { call as lcCall, say as lcSay, ScriptedChatModel } from "./support/scripted-chat-model.ts";

/**
 * What the model asks for, one call a turn: a success, a wrong id, a 503, a 501 (another tool
 * must serve it), a call that never ends.
 */
type Intent = "ok" | "missing" | "flaky" | "unsupported" | "hang";

interface BudgetCase {
  readonly name: BudgetName | "wallTimeMs";
  /** The case's name in titles and files. */
  readonly label: string;
  readonly budgets: NonNullable<PolicyInput["budgets"]>;
  /** The policy names another tool for the plan's tools (a retry that gives up switches to it). */
  readonly alternative?: boolean;
  readonly plan: readonly Intent[];
  /** Attempts that reached the tool or the server. */
  readonly executions: number;
  /** The text the stopping call answered (the model's, or the one a stop error carries). */
  readonly stopText: RegExp;
}

const CASES: readonly BudgetCase[] = [
  {
    name: "calls",
    label: "calls",
    budgets: { calls: 2 },
    plan: ["ok", "ok", "ok"],
    executions: 2,
    stopText: /calls budget is spent/,
  },
  {
    name: "retries",
    label: "retries",
    budgets: { retries: 1 },
    plan: ["flaky"],
    executions: 2,
    stopText: /retries budget is spent/,
  },
  {
    name: "corrections",
    label: "corrections",
    budgets: { corrections: 1 },
    plan: ["missing", "missing"],
    executions: 2,
    stopText: /corrections budget is spent/,
  },
  {
    name: "switches",
    label: "switches",
    budgets: { switches: 1 },
    plan: ["unsupported", "unsupported"],
    executions: 2,
    stopText: /switches budget is spent/,
  },
  {
    name: "switches",
    label: "switches after retries",
    budgets: { switches: 0 },
    // Retries that run out would switch to the named tool: the stop names the switches budget,
    // not the retries.
    alternative: true,
    plan: ["flaky"],
    executions: 5,
    stopText: /switches budget is spent/,
  },
  {
    name: "wallTimeMs",
    label: "wallTimeMs",
    budgets: { wallTimeMs: 400 },
    // A call cut by the deadline gives up its retries: with another tool named, it used to be a
    // switch handed to the model after the run's time was up, and the run went on.
    alternative: true,
    plan: ["hang"],
    executions: 1,
    stopText: /deadline/,
  },
];

/** The policy of a case for the plan's `tools`. */
function policyFor(c: BudgetCase, tools: readonly string[], alternative: string): PolicyInput {
  const each = {
    effect: "read_only" as const,
    retry: { attempts: 5, baseDelayMs: 1, maxDelayMs: 2 },
    ...(c.alternative === true && { alternatives: [alternative] }),
  };
  return {
    budgets: c.budgets,
    retryBudget: { reserve: 10_000 },
    defaults: { breaker: { threshold: 100 } },
    tools: Object.fromEntries(tools.map((t) => [t, each])),
  };
}

/** What one surface did with a case's plan. */
interface Played {
  readonly summary: RunSummary;
  readonly executions: number;
  /** The text of the call that stopped the run. */
  readonly stopText: string | undefined;
  /** Model turns that started after the stopping call's answer. */
  readonly turnsAfterStop: number;
}

function expectBudget(c: BudgetCase, played: Played): void {
  if (c.name === "wallTimeMs") {
    expect(played.summary.reason).toBe("deadline_exceeded");
  } else {
    expect(played.summary).toMatchObject({ reason: "budget_exhausted", budget: c.name });
  }
  expect(played.executions).toBe(c.executions);
  expect(played.stopText).toMatch(c.stopText);
  expect(played.turnsAfterStop).toBe(0);
}

const never = () => new Promise<never>(() => undefined);

/** The local tool every function-tool surface wraps: its behaviour is named by the id's intent. */
function lookupBody(counter: { n: number }) {
  return async ({ id }: { id: string }): Promise<string> => {
    counter.n += 1;
    if (id.startsWith("ok")) return `note ${id}`;
    if (id.startsWith("missing")) throw new Error(`No note with id "${id}". Known ids: welcome`);
    if (id.startsWith("flaky")) throw new Error("503 Service Unavailable");
    if (id.startsWith("unsupported")) throw new Error("501 Not Implemented");
    // Never answers, and ignores its signal: only Governor's deadline ends the call.
    return never();
  };
}

const ids = (plan: readonly Intent[]) => plan.map((intent, i) => `${intent}-${i + 1}`);
const LOCAL_POLICY = (c: BudgetCase) => policyFor(c, ["lookup"], "lookup_archive");
const STOP_TEXT = /The run stops here/;

describe.each(AI_SDKS)("$name: generateText", (entry) => {
  it.each(CASES)("the $label budget", async (c) => {
    const sdk = await entry.load();
    const counter = { n: 0 };
    const run = createGovernor(LOCAL_POLICY(c), { metrics: false }).startRun();
    const steps = ids(c.plan).map((id, i) => callTool("lookup", { id }, `c${i + 1}`));
    const model = sdk.scripted([...steps, say("done")]);
    const result = await sdk.generateText({
      model: model.model,
      tools: aiGovernTools(
        {
          lookup: sdk.tool({
            inputSchema: z.object({ id: z.string() }),
            execute: lookupBody(counter),
          }),
        },
        { run },
      ),
      stopWhen: [sdk.stepCountIs(10), governorStopCondition(run)],
      prompt: "Look the notes up",
    });
    const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => String(r.output)));
    const stopAt = outputs.findIndex((o) => STOP_TEXT.test(o));
    expectBudget(c, {
      summary: run.summary(),
      executions: counter.n,
      stopText: outputs[stopAt],
      // The model was called once per step; the stopping step is the last one.
      turnsAfterStop: model.prompts().length - (stopAt + 1),
    });
  });
});

describe("LangChain: createAgent", () => {
  it.each(CASES)("the $label budget", async (c) => {
    const counter = { n: 0 };
    const run = createGovernor(LOCAL_POLICY(c), { metrics: false }).startRun();
    const lookup = lcTool(lookupBody(counter), {
      name: "lookup",
      description: "Reads a note",
      schema: z.object({ id: z.string() }),
    });
    const turns = ids(c.plan).map((id, i) => lcCall("lookup", { id }, `c${i + 1}`));
    const model = new ScriptedChatModel([...turns, lcSay("done")]);
    const agent = createAgent({
      model,
      tools: lcGovernTools([lookup], { run }),
      middleware: [governorMiddleware(run)],
    });
    const error = await agent
      .invoke({ messages: [{ role: "user", content: "Look the notes up" }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(GovernorStopError);
    const stop = error as GovernorStopError;
    expectBudget(c, {
      summary: run.summary(),
      executions: counter.n,
      stopText: stop.modelText,
      turnsAfterStop: model.turns.length - stopTurn(c),
    });
  });
});

/** The model turns up to the one whose call stopped the run (every plan stops on its last call). */
const stopTurn = (c: BudgetCase) => c.plan.length;

describe.skipIf(SDK_UNSUPPORTED)(`OpenAI Agents SDK: Runner (${SKIP_REASON})`, () => {
  it.each(CASES)("a function tool: the $label budget", async (c) => {
    const counter = { n: 0 };
    const run = createGovernor(LOCAL_POLICY(c), { metrics: false }).startRun();
    const lookup = governedTool(
      {
        name: "lookup",
        description: "Reads a note",
        parameters: z.object({ id: z.string() }),
        execute: lookupBody(counter),
      },
      { run },
    );
    const plan = ids(c.plan);
    const task = await runTask(
      { tools: [lookup] },
      (v) =>
        v.turn <= plan.length
          ? { calls: [{ name: "lookup", args: { id: plan[v.turn - 1] } }] }
          : { say: "done" },
      { maxTurns: 10 },
    );
    const stop = governorStopOf(task.error);
    expectBudget(c, {
      summary: run.summary(),
      executions: counter.n,
      stopText: stop?.modelText,
      turnsAfterStop: task.model.views.length - stopTurn(c),
    });
  });
});

/** The fault server's tools for each intent (distinct arguments: no loop detector in the way). */
function mcpCall(intent: Intent, n: number): { name: string; args: Record<string, unknown> } {
  if (intent === "ok") return { name: "search_notes", args: { query: `release ${n}` } };
  if (intent === "missing") return { name: "get_note", args: { id: `missing-${n}` } };
  if (intent === "flaky") return { name: "flaky_fetch", args: { url: `https://example.com/${n}` } };
  if (intent === "unsupported") return { name: "rate_limited", args: {} };
  return { name: "slow", args: { ms: 600_000 } };
}

/** flaky_fetch answers 503 every time, rate_limited a 501 text. */
const SCENARIO: Scenario = {
  flaky_fetch: Array.from({ length: 20 }, () => ({ kind: "status" as const, status: 503 })),
  // The text alone: the status step's draft metadata marks every 5xx retryable.
  rate_limited: Array.from({ length: 20 }, () => ({
    kind: "error" as const,
    text: "501 Not Implemented",
  })),
};
const MCP_TOOLS = ["search_notes", "get_note", "flaky_fetch", "rate_limited", "slow"];
const MCP_POLICY = (c: BudgetCase) => policyFor(c, MCP_TOOLS, "search_notes");

/** Calls that reached the fault server's tools, from its persisted counters. */
function serverCalls(effectsFile: string): number {
  const { counters } = JSON.parse(readFileSync(stateFileFor(effectsFile), "utf8")) as {
    counters: Record<string, number>;
  };
  return Object.values(counters).reduce((a, b) => a + b, 0);
}

describe("@governor/mcp: governClient over stdio", () => {
  const dir = mkdtempSync(join(tmpdir(), "governor-budgets-"));
  const clients: Client[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(CASES)("the $label budget", async (c) => {
    const effectsFile = join(dir, `mcp-${c.label.replaceAll(" ", "-")}.jsonl`);
    const client = new Client({ name: "budgets", version: "1.0.0" });
    clients.push(client);
    await client.connect(
      new StdioClientTransport(stdioServerParams({ scenario: SCENARIO, effectsFile })),
    );
    const governor = createGovernor(MCP_POLICY(c), { metrics: false });
    const governed = governClient(client, { governor, server: "notes" });
    const run: Run = governor.startRun();
    // An agent loop: one call a turn, until a call stops the run.
    let turns = 0;
    let stopText: string | undefined;
    for (const [i, intent] of c.plan.entries()) {
      if (run.ended) break;
      turns += 1;
      const { name, args } = mcpCall(intent, i + 1);
      const outcome = await governed.callTool(run, { name, arguments: args, callId: `c${i + 1}` });
      if (outcome.kind === "stop") {
        const [block] = toModelResult(outcome).content;
        stopText = block?.type === "text" ? block.text : undefined;
      }
    }
    expectBudget(c, {
      summary: run.summary(),
      executions: serverCalls(effectsFile),
      stopText,
      turnsAfterStop: turns - stopTurn(c),
    });
  });
});

describe.skipIf(SDK_UNSUPPORTED)(`OpenAI Agents SDK: governMcpServer (${SKIP_REASON})`, () => {
  const dir = mkdtempSync(join(tmpdir(), "governor-budgets-agents-"));
  const opened: MCPServerStdio[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((server) => server.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(CASES)(
    "the $label budget",
    async (c) => {
      const effectsFile = join(dir, `agents-${c.label.replaceAll(" ", "-")}.jsonl`);
      const server = await stdioFaultServer("notes", opened, { scenario: SCENARIO, effectsFile });
      const governor = createGovernor(MCP_POLICY(c), { metrics: false });
      const run = governor.startRun();
      const task = await runTask(
        { mcpServers: [governMcpServer(server, { governor, run })] },
        (v) => {
          const intent = c.plan[v.turn - 1];
          return intent === undefined ? { say: "done" } : { calls: [mcpCall(intent, v.turn)] };
        },
        { maxTurns: 10 },
      );
      const stop = governorStopOf(task.error);
      expectBudget(c, {
        summary: run.summary(),
        executions: serverCalls(effectsFile),
        stopText: stop?.modelText,
        turnsAfterStop: task.model.views.length - stopTurn(c),
      });
    },
    60_000,
  );
});
