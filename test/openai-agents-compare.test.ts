/**
 * What the Agents SDK does by itself with failing tools (its real Runner loop, its own error
 * formatting) against the same tools governed, with the same scripted model: a persistent model
 * that repeats a failed call, and fixes its arguments when the text it reads tells it how.
 * `GOVERNOR_PRINT_COMPARISON=1` prints the table quoted in docs/openai-agents.md.
 */
import { createGovernor, type PolicyInput } from "@governor/core";
import { GovernorStopError, governedTool, governMcpServer } from "@governor/openai-agents";
import {
  crashMessage,
  fixtureSecrets,
  type HttpFaultServer,
  leaksSecrets,
  type Scenario,
  startHttpServer,
} from "@governor/testkit";
import { type Agent, type FunctionTool, MCPServerStreamableHttp, tool } from "@openai/agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  FAST_RETRIES,
  type ModelView,
  runTask,
  SDK_UNSUPPORTED,
  SKIP_REASON,
  type Step,
} from "./openai-agents-support.ts";

const MAX_TURNS = 6;
const POLICY: PolicyInput = {
  ...FAST_RETRIES,
  tools: { get_note: { effect: "read_only" }, send_email: { effect: "mutating" } },
  servers: { notes: { trustAnnotations: true } },
};

interface Measured {
  calls: number;
  turns: number;
  saw: string;
  ended: string;
  writes: number;
  leaked: boolean;
}

type Call = { readonly name: string; readonly args: Record<string, unknown> };

/** Repeats a failed call; fixes its arguments when the text it read names the fix. */
function persistent(
  first: Call,
  done: (text: string) => boolean,
  fix?: (text: string) => Record<string, unknown> | undefined,
) {
  return (v: ModelView): Step => {
    if (v.turn === 1) return { calls: [first] };
    const text = v.last[0]?.text ?? "";
    if (done(text)) return { say: "done" };
    const fixed = fix?.(text);
    return { calls: [fixed ? { name: first.name, args: fixed } : first] };
  };
}

function ending(output: unknown, error: unknown): string {
  if (error === undefined) return `final output (${String(output)})`;
  const inner = (error as { error?: unknown }).error ?? error;
  if (inner instanceof GovernorStopError) return `GovernorStopError (${inner.reason})`;
  const e = inner as { name?: string; reason?: string };
  return e.reason ? `${e.name} (${e.reason})` : String(e.name);
}

async function measure(
  tools: FunctionTool<unknown, never, unknown>[],
  mcpServers: Agent["mcpServers"],
  react: (v: ModelView) => Step,
  counts: () => { calls: number; writes: number },
): Promise<Measured> {
  const { model, output, error } = await runTask({ tools, mcpServers }, react, {
    maxTurns: MAX_TURNS,
  });
  const texts = model.views.flatMap((v) => v.last.map((r) => r.text));
  return {
    ...counts(),
    turns: model.views.length,
    saw: (texts[0] ?? "(nothing)").replace(/\s+/g, " ").slice(0, 90),
    ended: ending(output, error),
    leaked: texts.some((t) => leaksSecrets(t, fixtureSecrets())),
  };
}

/** A function tool's behaviour by call number; counts calls and committed writes. */
interface FnCase {
  readonly name: string;
  readonly tool: "get_note" | "send_email";
  readonly first: Record<string, unknown>;
  readonly run: (n: number, args: Record<string, unknown>, commit: () => void) => string;
  readonly done: (text: string) => boolean;
  readonly fix?: (text: string) => Record<string, unknown> | undefined;
}

const jsonRpc = () =>
  Object.assign(
    new Error(`MCP error -32603: internal error at /srv/app/db.js (key ${fixtureSecrets()[0]})`),
    {
      name: "McpError",
      code: -32603,
    },
  );

const FN_CASES: FnCase[] = [
  {
    name: "wrong id",
    tool: "get_note",
    first: { id: "drafts" },
    run: (_n, args) => {
      if (args.id !== "welcome")
        throw new Error(`no note with id "${args.id}"; known ids: welcome`);
      return "Welcome!";
    },
    done: (t) => t === "Welcome!",
    fix: (t) => (t.includes("known ids: welcome") ? { id: "welcome" } : undefined),
  },
  {
    name: "503 twice",
    tool: "get_note",
    first: { id: "welcome" },
    run: (n) => {
      if (n <= 2) throw new Error("503 Service Unavailable");
      return "Welcome!";
    },
    done: (t) => t === "Welcome!",
  },
  {
    name: "permission denied",
    tool: "send_email",
    first: { to: "a@example.com" },
    run: () => {
      throw new Error("403 Forbidden: the token lacks the mail.send scope");
    },
    done: () => false,
  },
  {
    name: "write committed, then 504",
    tool: "send_email",
    first: { to: "a@example.com" },
    run: (n, _args, commit) => {
      commit();
      if (n === 1) throw new Error("504 Gateway Timeout");
      return "sent";
    },
    done: (t) => t === "sent",
  },
  {
    name: "JSON-RPC -32603",
    tool: "get_note",
    first: { id: "welcome" },
    run: () => {
      throw jsonRpc();
    },
    done: () => false,
  },
  {
    name: "crash with secrets",
    tool: "get_note",
    first: { id: "welcome" },
    run: () => {
      throw new Error(`Unhandled: invalid state (${crashMessage()})`);
    },
    done: () => false,
  },
];

function fnTool(
  c: FnCase,
  governed: ReturnType<ReturnType<typeof createGovernor>["startRun"]> | undefined,
) {
  const counts = { calls: 0, writes: 0 };
  const options = {
    name: c.tool,
    description: "A tool",
    parameters: z.object({ id: z.string().optional(), to: z.string().optional() }),
    execute: async (args: Record<string, unknown>) => {
      counts.calls += 1;
      return c.run(counts.calls, args, () => {
        counts.writes += 1;
      });
    },
  };
  const made = governed ? governedTool(options, { run: governed }) : tool(options);
  return { made: made as FunctionTool<unknown, never, unknown>, counts };
}

/** An MCP case over Streamable HTTP: a fresh in-process fault server per measurement. */
interface McpCase {
  readonly name: string;
  readonly lowlevel?: boolean;
  readonly scenario?: Scenario;
  readonly first: Call;
  readonly done: (text: string) => boolean;
  readonly fix?: (text: string) => Record<string, unknown> | undefined;
}

const MCP_CASES: McpCase[] = [
  {
    name: "wrong id",
    first: { name: "get_note", args: { id: "drafts" } },
    done: (t) => t.includes("Welcome to the notes service"),
    fix: (t) => (t.includes("welcome") ? { id: "welcome" } : undefined),
  },
  {
    name: "503 twice",
    first: { name: "flaky_fetch", args: { url: "https://example.com" } },
    done: (t) => t.startsWith("200 OK"),
  },
  {
    name: "permission denied",
    first: { name: "delete_account", args: { id: "a1" } },
    done: () => false,
  },
  {
    name: "write committed, response lost",
    scenario: { append_log: [{ kind: "drop_after_commit" }] },
    first: { name: "append_log", args: { line: "hello" } },
    done: (t) => /appended|logged/i.test(t),
  },
  {
    name: "JSON-RPC -32603",
    lowlevel: true,
    first: { name: "internal", args: {} },
    done: () => false,
  },
  { name: "crash with secrets", first: { name: "crash_with_stack", args: {} }, done: () => false },
];

async function mcpMeasure(c: McpCase, governed: boolean): Promise<Measured> {
  const http: HttpFaultServer = await startHttpServer({
    ...(c.lowlevel !== undefined && { lowlevel: c.lowlevel }),
    ...(c.scenario !== undefined && { scenario: c.scenario }),
    jsonResponse: true,
  });
  const server = new MCPServerStreamableHttp({ name: "notes", url: http.url });
  await server.connect();
  try {
    const governor = createGovernor(POLICY, { metrics: false });
    const run = governor.startRun();
    const mcp = governed ? governMcpServer(server, { governor, run }) : server;
    const calls = () =>
      http.requests().filter((r) => (r as { method?: string }).method === "tools/call").length;
    return await measure([], [mcp], persistent(c.first, c.done, c.fix), () => ({
      calls: calls(),
      writes: http.state.effects().length,
    }));
  } finally {
    await server.close();
    await http.close();
  }
}

function table(rows: { name: string; sdk: Measured; gov: Measured }[]): string {
  const cell = (m: Measured) =>
    `${m.calls} / ${m.turns} / ${m.writes} | ${m.saw} | ${m.ended}${m.leaked ? " **(leak)**" : ""}`;
  return rows.map((r) => `| ${r.name} | ${cell(r.sdk)} | ${cell(r.gov)} |`).join("\n");
}

describe.skipIf(SDK_UNSUPPORTED)(`the Agents SDK alone vs governed (${SKIP_REASON})`, () => {
  it("function tools: the SDK hides every error behind one fixed text; Governor ends the loops", async () => {
    const rows: { name: string; sdk: Measured; gov: Measured }[] = [];
    for (const c of FN_CASES) {
      const plain = fnTool(c, undefined);
      const sdk = await measure(
        [plain.made],
        [],
        persistent({ name: c.tool, args: c.first }, c.done, c.fix),
        () => plain.counts,
      );
      const run = createGovernor(POLICY, { metrics: false }).startRun();
      const gov = fnTool(c, run);
      const governed = await measure(
        [gov.made],
        [],
        persistent({ name: c.tool, args: c.first }, c.done, c.fix),
        () => gov.counts,
      );
      rows.push({ name: c.name, sdk, gov: governed });
    }
    if (process.env.GOVERNOR_PRINT_COMPARISON === "1") console.log(table(rows));
    const by = Object.fromEntries(rows.map((r) => [r.name, r]));
    // The SDK alone: one fixed text for every failure, so the model never learns the right id
    // and a permission error loops until maxTurns.
    expect(by["wrong id"]?.sdk.saw).toBe(
      "An error occurred while running the tool. Please try again.",
    );
    expect(by["wrong id"]?.sdk.ended).toBe("MaxTurnsExceededError");
    expect(by["wrong id"]?.gov.ended).toBe("final output (done)");
    expect(by["permission denied"]?.sdk.calls).toBe(MAX_TURNS);
    expect(by["permission denied"]?.gov.calls).toBe(1);
    expect(by["write committed, then 504"]?.sdk.writes).toBe(2);
    expect(by["write committed, then 504"]?.gov.writes).toBe(1);
    expect(by["write committed, then 504"]?.gov.ended).toBe(
      "GovernorStopError (uncertain_mutation)",
    );
    expect(by["JSON-RPC -32603"]?.gov.ended).toBe("HostError (protocol_error)");
    expect(by["503 twice"]?.gov.turns).toBe(2);
    for (const r of rows) expect(r.gov.leaked, r.name).toBe(false);
  });

  it("MCP servers: the SDK hands the raw isError text to the model; Governor redacts, retries, stops", async () => {
    const rows: { name: string; sdk: Measured; gov: Measured }[] = [];
    for (const c of MCP_CASES) {
      rows.push({ name: c.name, sdk: await mcpMeasure(c, false), gov: await mcpMeasure(c, true) });
    }
    if (process.env.GOVERNOR_PRINT_COMPARISON === "1") console.log(table(rows));
    const by = Object.fromEntries(rows.map((r) => [r.name, r]));
    expect(by["crash with secrets"]?.sdk.leaked).toBe(true);
    expect(by["write committed, response lost"]?.sdk.writes).toBe(2);
    expect(by["write committed, response lost"]?.gov.writes).toBe(1);
    expect(by["write committed, response lost"]?.gov.ended).toBe(
      "GovernorStopError (uncertain_mutation)",
    );
    expect(by["permission denied"]?.gov.calls).toBe(1);
    expect(by["503 twice"]?.gov.turns).toBe(2);
    expect(by["JSON-RPC -32603"]?.gov.ended).toBe("HostError (protocol_error)");
    for (const r of rows) expect(r.gov.leaked, r.name).toBe(false);
  }, 60_000);
});
