import { createGovernor, type HostError, type Store } from "@governor/core";
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { createAgent } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { call, ScriptedChatModel, say } from "../../../test/support/scripted-chat-model.ts";
import { governorMiddleware } from "./agent.ts";
import { governTool, governTools } from "./govern-tools.ts";

const schema = z.object({ id: z.string() });
const toolCall = (id: string) => ({
  name: "get_note",
  args: { id: "x" },
  id,
  type: "tool_call" as const,
});

describe("attacks on the adapter's promises", () => {
  it("an aborted graph ends the call's retries and backoff at once, and stops the run", async () => {
    // A backoff of a minute: if the abort did not cut it, the test would time out.
    const run = createGovernor(
      {
        tools: {
          get_note: {
            effect: "read_only",
            retry: { attempts: 5, baseDelayMs: 60_000, maxDelayMs: 60_000 },
          },
        },
      },
      { metrics: false },
    ).startRun();
    const ac = new AbortController();
    let executions = 0;
    const getNote = tool(
      async () => {
        executions += 1;
        setTimeout(() => ac.abort(), 5);
        throw new Error("503 Service Unavailable");
      },
      { name: "get_note", description: "Reads a note", schema },
    );
    const model = new ScriptedChatModel([call("get_note", { id: "x" }, "c1"), say("done")]);
    const agent = createAgent({
      model,
      tools: governTools([getNote], { run }),
      middleware: [governorMiddleware(run)],
    });
    await expect(
      agent.invoke({ messages: [{ role: "user", content: "Read x" }] }, { signal: ac.signal }),
    ).rejects.toThrow();
    expect(executions).toBe(1);
    expect(run.summary()).toMatchObject({ reason: "aborted", attempts: 1 });
  });

  it("a failing store: the write does not run, the model gets a fixed text, the host the error", async () => {
    const STORE_SECRET = "redis://user:pw@10.0.0.5:6379";
    const fail = () => Promise.reject(new Error(`connect ECONNREFUSED ${STORE_SECRET}`));
    const store = new Proxy(
      {},
      { get: (_t, prop) => (prop === "then" ? undefined : fail) },
    ) as Store;
    const run = createGovernor({}, { metrics: false, store }).startRun();
    const hostErrors: HostError[] = [];
    let executions = 0;
    const sendEmail = governTool(
      tool(
        async () => {
          executions += 1;
          return "sent";
        },
        { name: "send_email", description: "Sends", schema: z.object({ to: z.string() }) },
      ),
      { run, onHostError: (e) => hostErrors.push(e) },
    );
    const out = await sendEmail.invoke({
      name: "send_email",
      args: { to: "a" },
      id: "c1",
      type: "tool_call",
    });
    expect(executions).toBe(0);
    expect(out).toBeInstanceOf(ToolMessage);
    const message = out as ToolMessage;
    expect(message.status).toBe("error");
    expect(String(message.content)).toMatch(/^send_email: the call could not be completed\. /);
    expect(String(message.content)).not.toContain("10.0.0.5");
    expect(hostErrors).toHaveLength(1);
    const chain: string[] = [];
    for (let e: unknown = hostErrors[0]; e instanceof Error; e = e.cause) chain.push(e.message);
    expect(chain.join("\n")).toContain(STORE_SECRET);
  });

  it("a run.call that rejects with a non-Governor error never throws into the graph", async () => {
    const real = createGovernor({}, { metrics: false }).startRun();
    const raw = new Error("bug with token sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0");
    const run = { ...real, ended: false, call: () => Promise.reject(raw) } as typeof real;
    const hostErrors: HostError[] = [];
    const wrapped = governTool(
      tool(async () => "ok", { name: "get_note", description: "Reads", schema }),
      { run, onHostError: (e) => hostErrors.push(e) },
    );
    const out = (await wrapped.invoke(toolCall("c9"))) as ToolMessage;
    expect(out.tool_call_id).toBe("c9");
    expect(String(out.content)).not.toContain("sk-live");
    expect(hostErrors[0]).toMatchObject({ reason: "unexpected_error", tool: "get_note" });
    expect(hostErrors[0]?.cause).toBe(raw);
  });

  it("a tool that returns an error ToolMessage itself is judged, not passed through", async () => {
    const run = createGovernor(
      { tools: { get_note: { effect: "read_only" } } },
      { metrics: false },
    ).startRun();
    const wrapped = governTool(
      tool(
        async (_input, config) =>
          new ToolMessage({
            status: "error",
            content: "Note not found (db at /var/lib/notes/db.sqlite)",
            tool_call_id: String(config.toolCall?.id),
          }),
        { name: "get_note", description: "Reads", schema },
      ),
      { run },
    );
    const out = (await wrapped.invoke(toolCall("c1"))) as ToolMessage;
    expect(out.status).toBe("error");
    expect(String(out.content)).toMatch(/^get_note: /);
    expect(String(out.content)).not.toContain("/var/lib");
    expect(run.summary()).toMatchObject({ failures: 1 });
  });

  it("observe-only: a tool's error, or the error ToolMessage it returns, reaches the graph as without Governor", async () => {
    // Observe-only enforces nothing: run.call hands back what the tool threw. Taken for trouble
    // in Governor, it became the host's `unexpected_error`, and the model read "The run stops
    // here." from a run that went on.
    const hostErrors: HostError[] = [];
    const run = createGovernor(
      { observeOnly: true, tools: { get_note: { effect: "read_only" } } },
      { metrics: false },
    ).startRun();
    const thrown = new Error('Note "x" not found');
    const throwing = tool(
      async () => {
        throw thrown;
      },
      { name: "get_note", description: "Reads a note", schema },
    );
    const governed = governTool(throwing, { run, onHostError: (e) => hostErrors.push(e) });
    await expect(governed.invoke(toolCall("c1"))).rejects.toBe(thrown);

    const answering = tool(
      async (_args, config) =>
        new ToolMessage({
          status: "error",
          content: 'Note "x" not found',
          tool_call_id: config.toolCall?.id ?? "",
        }),
      { name: "get_note", description: "Reads a note", schema },
    );
    const message = await governTool(answering, { run }).invoke(toolCall("c2"));
    expect(message).toMatchObject({
      status: "error",
      content: 'Note "x" not found',
      tool_call_id: "c2",
    });
    expect(hostErrors).toEqual([]);
    expect(run.end().reason).toBe("completed");
  });

  it("invoked with plain arguments (no tool call), a failure is Governor's text as a string", async () => {
    const run = createGovernor(
      { tools: { get_note: { effect: "read_only" } } },
      { metrics: false },
    ).startRun();
    const wrapped = governTool(
      tool(
        async ({ id }) => {
          throw new Error(`Note ${id} not found`);
        },
        { name: "get_note", description: "Reads", schema },
      ),
      { run },
    );
    const out = await wrapped.invoke({ id: "x" });
    expect(out).toMatch(/^get_note: Note x not found/);
    expect(AIMessage.isInstance(out)).toBe(false);
  });
});
