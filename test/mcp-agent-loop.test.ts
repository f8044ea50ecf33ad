/**
 * The agent loop of docs/mcp.md, run against the fault server over stdio with a scripted (fake)
 * model. The loop below is the one the guide shows, character for character (checked below).
 */
import { readFileSync } from "node:fs";
import {
  createGovernor,
  type Governor,
  type HostError,
  type PolicyInput,
  type RunSummary,
} from "@governor/core";
import { type GovernedClient, governClient, toModelResult } from "@governor/mcp";
import { readEffects, stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { shutdown, tempDir } from "./mcp-support.ts";

// docs/mcp.md agent loop: begin
/** A tool call as the model asked for it. */
interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

type Message =
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls: ToolCall[] }
  | { role: "tool"; toolCallId: string; result: CallToolResult };

/** Your model client: given the conversation and the tools, the next assistant message. */
interface Model {
  next(
    messages: readonly Message[],
    tools: readonly Tool[],
  ): Promise<{ content: string; toolCalls: ToolCall[] }>;
}

interface TaskResult {
  answer: string | undefined;
  summary: RunSummary;
  messages: Message[];
}

async function runTask(
  task: string,
  model: Model,
  notes: GovernedClient,
  governor: Governor,
): Promise<TaskResult> {
  const run = governor.startRun();
  const messages: Message[] = [{ role: "user", content: task }];
  for (let turn = 0; turn < 20; turn++) {
    // Hides the tools the policy denies and those whose breaker is open.
    const tools = await notes.listTools();
    const reply = await model.next(messages, tools);
    messages.push({ role: "assistant", content: reply.content, toolCalls: reply.toolCalls });
    if (reply.toolCalls.length === 0) {
      return { answer: reply.content, summary: run.end(), messages };
    }

    let stopped = false;
    for (const call of reply.toolCalls) {
      // Retries happen inside; what comes back is final for this call.
      const outcome = await notes.callTool(run, {
        name: call.name,
        arguments: call.arguments,
        callId: call.id,
      });
      // Every tool call gets its result, even after a stop: no dangling tool call.
      messages.push({ role: "tool", toolCallId: call.id, result: toModelResult(outcome) });
      if (outcome.kind === "stop") stopped = true;
    }
    // The run ended: why is in the summary (forbidden, uncertain_mutation, protocol_error, ...).
    if (stopped) return { answer: undefined, summary: run.end(), messages };
  }
  return { answer: undefined, summary: run.end(), messages };
}
// docs/mcp.md agent loop: end

/** A model that plays a script: each turn, the calls (or the answer) it is given. */
function scripted(turns: Array<ToolCall[] | string>): Model & { seen: (readonly Message[])[] } {
  const seen: (readonly Message[])[] = [];
  let turn = 0;
  return {
    seen,
    async next(messages) {
      seen.push([...messages]);
      const step = turns[turn++];
      if (step === undefined || typeof step === "string")
        return { content: step ?? "done", toolCalls: [] };
      return { content: "", toolCalls: step };
    },
  };
}

const tmp = tempDir();
const clients: Client[] = [];
const pids: number[] = [];

async function setup(policy: PolicyInput = {}) {
  const effectsFile = tmp.file(`effects-${clients.length}.jsonl`);
  const hostErrors: HostError[] = [];
  const params = stdioServerParams({
    effectsFile,
    scenario: { get_note: [{ kind: "ok" }, { kind: "exit" }] },
  });
  const client = new Client({ name: "agent-loop-test", version: "1.0.0" });
  clients.push(client);
  const connect = async () => {
    const transport = new StdioClientTransport(params);
    await client.connect(transport);
    if (transport.pid !== null) pids.push(transport.pid);
  };
  await connect();
  const governor = createGovernor(
    {
      defaults: { retry: { baseDelayMs: 1, maxDelayMs: 5 } },
      servers: { notes: { trustAnnotations: true } },
      ...policy,
    },
    { metrics: false, onHostError: (error) => void hostErrors.push(error) },
  );
  const notes = governClient(client, {
    governor,
    server: "notes",
    requestTimeoutMs: 1000,
    reconnect: connect,
  });
  return { governor, notes, hostErrors, effectsFile };
}

afterAll(async () => {
  await shutdown(clients, []);
  const { waitForExit } = await import("@governor/testkit");
  for (const pid of pids) expect(await waitForExit(pid)).toBe(true);
  tmp.cleanup();
});

describe("the agent loop of docs/mcp.md over stdio", () => {
  it("is the loop the guide shows", () => {
    const source = readFileSync(new URL(import.meta.url), "utf8");
    const loop = source.slice(
      source.indexOf("// docs/mcp.md agent loop: begin\n") +
        "// docs/mcp.md agent loop: begin\n".length,
      source.indexOf("// docs/mcp.md agent loop: end"),
    );
    const doc = readFileSync(new URL("../docs/mcp.md", import.meta.url), "utf8");
    expect(doc).toContain(loop);
  });

  it("answers every tool call: a correction, a crash resumed after reconnect, then the answer", async () => {
    const { governor, notes } = await setup();
    const model = scripted([
      [{ id: "c1", name: "get_note", arguments: { id: "drafts" } }],
      // The 2nd get_note call makes the server exit; it is read-only, so it resumes after a reconnect.
      [
        { id: "c2", name: "get_note", arguments: { id: "welcome" } },
        { id: "c3", name: "get_note", arguments: { id: "release-notes" } },
      ],
      "The welcome note says hello.",
    ]);
    const result = await runTask("Summarize the welcome note", model, notes, governor);
    expect(result.answer).toBe("The welcome note says hello.");
    expect(result.summary).toMatchObject({ reason: "completed", calls: 3 });
    const toolMessages = result.messages.filter((m) => m.role === "tool");
    expect(toolMessages.map((m) => m.toolCallId)).toEqual(["c1", "c2", "c3"]);
    const [first, second, third] = toolMessages.map((m) => m.result);
    expect(first?.isError).toBe(true);
    expect(JSON.stringify(first?.content)).toContain("welcome, release-notes");
    expect(second?.isError).toBeUndefined();
    expect(third?.isError).toBeUndefined();
  });

  it("a stop ends the run with its reason; later calls of the same turn are still answered", async () => {
    const { governor, notes, effectsFile } = await setup();
    const model = scripted([
      [
        { id: "c1", name: "delete_account", arguments: { id: "acct-1" } },
        { id: "c2", name: "append_log", arguments: { line: "deleted acct-1" } },
      ],
      "unreachable",
    ]);
    const result = await runTask("Delete account acct-1", model, notes, governor);
    expect(result.answer).toBeUndefined();
    expect(result.summary).toMatchObject({ reason: "forbidden", personResolvable: true });
    expect(result.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId)).toEqual([
      "c1",
      "c2",
    ]);
    expect(model.seen).toHaveLength(1);
    expect(readEffects(effectsFile)).toEqual([]);
  });
});
