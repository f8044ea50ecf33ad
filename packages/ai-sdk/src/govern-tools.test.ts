import {
  createGovernor,
  type GovernorOptions,
  type HostError,
  type PolicyInput,
  type Store,
} from "@governor/core";
import { replayedText } from "@governor/core/judge";
import { generateText, type ModelMessage, stepCountIs, type Tool, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { governTools } from "./govern-tools.ts";
import { governorStopCondition } from "./stop-condition.ts";
import { callTool, type Prompt, type Step, say, toolOutputs } from "./test-support/sdks.ts";

/** A mock model that plays the given steps in order (the real `generateText` drives it). */
function scripted(...steps: Step[]) {
  return new MockLanguageModelV3({ doGenerate: steps });
}

function governor(policy: PolicyInput = {}, options: GovernorOptions = {}) {
  return createGovernor(policy, { metrics: false, random: () => 0.5, ...options });
}

const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 };
const SECRET = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";

function noteTool(execute: (input: { id: string }) => Promise<unknown>) {
  return tool({
    description: "Reads a note",
    inputSchema: z.object({ id: z.string() }),
    execute,
  });
}

describe("governTools with generateText", () => {
  it("shows the model Governor's redacted text, not the raw error with its secret", async () => {
    const failing = async () => {
      // No path in it: since issue 12.3 a path the arguments do not name is the server's own
      // (misconfigured, a stop); the seed checks in agent-loop.test.ts cover paths.
      throw new Error(`Note "x" not found (query signed with ${SECRET})`);
    };

    // Without Governor, the AI SDK hands the thrown message to the model as it is.
    const plain = scripted(callTool("get_note", { id: "x" }), say("done"));
    await generateText({
      model: plain,
      tools: { get_note: noteTool(failing) },
      stopWhen: stepCountIs(3),
      prompt: "Read note x",
    });
    expect(JSON.stringify(plain.doGenerateCalls[1]?.prompt)).toContain(SECRET);

    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const model = scripted(callTool("get_note", { id: "x" }), say("done"));
    const result = await generateText({
      model,
      tools: governTools({ get_note: noteTool(failing) }, { run }),
      stopWhen: [stepCountIs(3), governorStopCondition(run)],
      prompt: "Read note x",
    });

    expect(model.doGenerateCalls).toHaveLength(2);
    const next = model.doGenerateCalls[1]?.prompt as Prompt;
    expect(JSON.stringify(next)).not.toContain(SECRET);
    expect(JSON.stringify(next)).not.toContain("/home/app");
    const [output] = toolOutputs(next);
    expect(output).toMatchObject({ type: "error-text" });
    const text = (output as { value: string }).value;
    expect(text).toMatch(/^get_note: /);
    expect(text).toContain("not found");
    // The step records a tool result (not a tool-error part) whose output is that same text.
    expect(result.steps[0]?.content.some((p) => p.type === "tool-error")).toBe(false);
    expect(result.steps[0]?.toolResults[0]?.output).toBe(text);
    expect(result.text).toBe("done");
    expect(run.ended).toBe(false);
  });

  it("retries a 503 inside the call: the model sees only the success", async () => {
    const run = governor({
      tools: { get_note: { effect: "read_only", retry: FAST_RETRY } },
    }).startRun();
    let calls = 0;
    const getNote = noteTool(async ({ id }) => {
      calls += 1;
      if (calls <= 2) throw new Error("503 Service Unavailable");
      return { id, body: "hello" };
    });
    const model = scripted(callTool("get_note", { id: "welcome" }), say("It says hello."));

    const result = await generateText({
      model,
      tools: governTools({ get_note: getNote }, { run }),
      stopWhen: [stepCountIs(3), governorStopCondition(run)],
      prompt: "Read the welcome note",
    });

    expect(calls).toBe(3);
    expect(model.doGenerateCalls).toHaveLength(2);
    const next = model.doGenerateCalls[1]?.prompt as Prompt;
    expect(toolOutputs(next)).toEqual([{ type: "json", value: { id: "welcome", body: "hello" } }]);
    expect(JSON.stringify(next)).not.toMatch(/Service Unavailable|\b503\b/); // not a random id that holds "503"
    expect(result.steps[0]?.toolResults).toHaveLength(1);
    expect(result.text).toBe("It says hello.");
    expect(run.summary()).toMatchObject({ calls: 1, attempts: 3, retries: 2, reason: "completed" });
  });

  it("ends the generation when a permission-denied failure stops the run", async () => {
    const tools = {
      delete_note: tool({
        inputSchema: z.object({ id: z.string() }),
        execute: async (): Promise<{ deleted: true }> => {
          throw new Error("permission denied: user cannot delete notes");
        },
      }),
    };
    const steps = () => [
      callTool("delete_note", { id: "x" }, "call_1"),
      callTool("delete_note", { id: "y" }, "call_2"),
      say("gave up"),
    ];

    const run = governor().startRun();
    const model = scripted(...steps());
    const result = await generateText({
      model,
      tools: governTools(tools, { run }),
      stopWhen: [stepCountIs(5), governorStopCondition(run)],
      prompt: "Delete note x",
    });

    expect(model.doGenerateCalls).toHaveLength(1);
    expect(result.steps).toHaveLength(1);
    expect(run.ended).toBe(true);
    expect(run.summary()).toMatchObject({ reason: "forbidden", calls: 1, attempts: 1 });
    const output = result.steps[0]?.toolResults[0]?.output;
    expect(output).toMatch(/^delete_note: permission denied/);
    expect(output).toContain("A person must grant access");

    // Without the stop condition, the model would get another turn after the stop.
    const other = governor().startRun();
    const unguarded = scripted(...steps());
    await generateText({
      model: unguarded,
      tools: governTools(tools, { run: other }),
      stopWhen: stepCountIs(5),
      prompt: "Delete note x",
    });
    expect(unguarded.doGenerateCalls.length).toBeGreaterThan(1);
  });

  it("uses the toolCallId as the logical call: one idempotency key across retries, and across runs in one idempotency scope", async () => {
    const gov = governor({
      tools: {
        send_email: {
          effect: "mutating",
          retry: FAST_RETRY,
          // The tool takes the key and deduplicates by it: only then may a write whose error
          // is text alone ("503 Service Unavailable") be retried (issue 8.1).
          idempotency: { argument: "idempotency_key", honorsKeys: true },
        },
      },
    });
    const keys: unknown[] = [];
    let failuresLeft = 2;
    const sendEmail = tool({
      inputSchema: z.object({ to: z.string(), idempotency_key: z.string().optional() }),
      execute: async (input) => {
        keys.push(input.idempotency_key);
        if (failuresLeft-- > 0) throw new Error("503 Service Unavailable");
        return { sent: true, to: input.to };
      },
    });
    const send = (run: ReturnType<typeof gov.startRun>, toolCallId: string) =>
      generateText({
        model: scripted(callTool("send_email", { to: "a@example.com" }, toolCallId), say("ok")),
        tools: governTools({ send_email: sendEmail }, { run }),
        stopWhen: [stepCountIs(3), governorStopCondition(run)],
        prompt: "Send it",
      });

    const first = await send(gov.startRun({ idempotencyScope: "job-1" }), "call_abc");
    expect(keys).toHaveLength(3);
    expect(new Set(keys).size).toBe(1);
    expect(keys[0]).toMatch(/^gk_[0-9a-f]{32}$/);
    expect(first.steps[0]?.toolResults[0]?.output).toEqual({ sent: true, to: "a@example.com" });

    // Another run (another worker) picking up the same tool call gets the recorded result: the
    // key comes from the toolCallId, not from the run, so the email is not sent twice.
    const replayed = await send(gov.startRun({ idempotencyScope: "job-1" }), "call_abc");
    expect(keys).toHaveLength(3);
    expect(replayed.steps[0]?.toolResults[0]?.output).toEqual({ sent: true, to: "a@example.com" });

    // A new tool call is a new logical call with its own key.
    await send(gov.startRun(), "call_def");
    expect(keys).toHaveLength(4);
    expect(keys[3]).not.toBe(keys[0]);
  });

  it("never sees input the AI SDK rejects itself (schema check before execute)", async () => {
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    let calls = 0;
    const model = scripted(callTool("get_note", { id: 42 }), say("done"));
    await generateText({
      model,
      tools: governTools({ get_note: noteTool(async () => ++calls) }, { run }),
      stopWhen: [stepCountIs(3), governorStopCondition(run)],
      prompt: "Read note 42",
    });
    // The AI SDK answers an invalid input with its own error text; execute never runs, so the
    // run's budgets and repeat rule do not count it.
    expect(calls).toBe(0);
    expect(run.summary()).toMatchObject({ calls: 0, failures: 0 });
    const [output] = toolOutputs(model.doGenerateCalls[1]?.prompt as Prompt);
    expect(output).toMatchObject({ type: "error-text" });
    expect((output as { value: string }).value).toContain("Invalid input for tool get_note");
  });

  it("keeps a failure routed to the host out of the model's context", async () => {
    const hostErrors: HostError[] = [];
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const model = scripted(callTool("get_note", { id: "x" }), say("done"));
    const result = await generateText({
      model,
      tools: governTools(
        {
          get_note: noteTool(async () => {
            // A JSON-RPC error from a remote peer (e.g. an MCP client inside the tool).
            throw Object.assign(new Error(`Internal error at db-7.internal key=${SECRET}`), {
              code: -32603,
            });
          }),
        },
        { run, onHostError: (error) => hostErrors.push(error) },
      ),
      stopWhen: [stepCountIs(3), governorStopCondition(run)],
      prompt: "Read note x",
    });

    expect(hostErrors).toHaveLength(1);
    // The host's message is redacted like the model's text; the raw error stays in its cause.
    expect(hostErrors[0]?.message).not.toContain(SECRET);
    expect(String((hostErrors[0]?.cause as Error | undefined)?.message)).toContain(SECRET);
    expect(run.summary().reason).toBe("protocol_error");
    expect(model.doGenerateCalls).toHaveLength(1);
    const output = result.steps[0]?.toolResults[0]?.output;
    expect(output).toMatch(/^get_note: the call could not be completed\. /);
    expect(JSON.stringify(result.steps)).not.toContain(SECRET);
  });

  it.each([
    ["null", null],
    ["42", 42],
    ["undefined", undefined],
  ])(
    "a tool that throws %s said nothing the model can act on: the host gets it (malformed_response), the model is not told to change its arguments",
    async (_what, thrown) => {
      const hostErrors: HostError[] = [];
      const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
      let calls = 0;
      const model = scripted(
        callTool("get_note", { id: "x" }),
        callTool("get_note", { id: "y" }, "call_2"),
        say("done"),
      );
      const result = await generateText({
        model,
        tools: governTools(
          {
            get_note: noteTool(async () => {
              calls += 1;
              throw thrown;
            }),
          },
          { run, onHostError: (error) => hostErrors.push(error) },
        ),
        stopWhen: [stepCountIs(4), governorStopCondition(run)],
        prompt: "Read note x",
      });
      expect(calls).toBe(1);
      expect(hostErrors.map((e) => e.reason)).toEqual(["malformed_response"]);
      expect(run.summary().reason).toBe("malformed_response");
      expect(model.doGenerateCalls).toHaveLength(1);
      const output = result.steps[0]?.toolResults[0]?.output;
      expect(output).toMatch(/^get_note: the call could not be completed\. /);
    },
  );

  it("issue 9.5: an aborted generateText stops Governor's retries and backoff at once", async () => {
    // Before the fix the call backed off and executed 4 more times after the abort.
    const run = governor({
      tools: {
        get_note: {
          effect: "read_only",
          retry: { attempts: 5, baseDelayMs: 400, maxDelayMs: 400 },
        },
      },
    }).startRun();
    const ac = new AbortController();
    let executions = 0;
    let executionsAfterAbort = 0;
    let abortedAt = 0;
    const getNote = noteTool(async () => {
      executions += 1;
      if (ac.signal.aborted) executionsAfterAbort += 1;
      if (executions === 1) {
        // Abort during the backoff that follows this first failure.
        setTimeout(() => {
          abortedAt = performance.now();
          ac.abort();
        }, 20);
      }
      throw new Error("503 Service Unavailable");
    });
    const model = scripted(callTool("get_note", { id: "x" }), say("done"));

    const settled = await generateText({
      model,
      tools: governTools({ get_note: getNote }, { run }),
      stopWhen: [stepCountIs(3), governorStopCondition(run)],
      abortSignal: ac.signal,
      prompt: "Read note x",
    }).then(
      () => performance.now(),
      () => performance.now(),
    );

    expect(abortedAt).toBeGreaterThan(0);
    expect(executions).toBe(1);
    expect(executionsAfterAbort).toBe(0);
    // Today's backoffs (about 200 ms each with random 0.5, four of them) would hold it ~800 ms.
    expect(settled - abortedAt).toBeLessThan(150);
    expect(run.summary()).toMatchObject({ reason: "aborted", attempts: 1 });
  });

  it("issue 8.10: a failing store never puts its raw error in the model's context", async () => {
    const STORE_SECRET = "redis://user:pw@10.0.0.5:6379";
    const fail = () => Promise.reject(new Error(`connect ECONNREFUSED ${STORE_SECRET} key gk_1`));
    // Every method fails, whatever methods the Store interface has.
    const failingStore = new Proxy(
      {},
      { get: (_target, prop) => (prop === "then" ? undefined : fail) },
    ) as Store;
    const hostErrors: HostError[] = [];
    let executions = 0;
    const run = governor({}, { store: failingStore }).startRun();
    const sendEmail = tool({
      inputSchema: z.object({ to: z.string() }),
      execute: async () => {
        executions += 1;
        return { sent: true };
      },
    });
    const model = scripted(callTool("send_email", { to: "a@example.com" }), say("done"));

    const result = await generateText({
      model,
      tools: governTools(
        { send_email: sendEmail },
        { run, onHostError: (error) => hostErrors.push(error) },
      ),
      stopWhen: [stepCountIs(3), governorStopCondition(run)],
      prompt: "Send it",
    });

    // Fail closed: the write did not run without its ledger entry.
    expect(executions).toBe(0);
    const seen = JSON.stringify([result.steps, model.doGenerateCalls.map((c) => c.prompt)]);
    expect(seen).not.toContain("redis://");
    expect(seen).not.toContain("10.0.0.5");
    expect(seen).not.toContain("pw@");
    const output = result.steps[0]?.toolResults[0]?.output;
    expect(output).toMatch(/^send_email: the call could not be completed\. /);
    expect(result.steps[0]?.content.some((p) => p.type === "tool-error")).toBe(false);
    // The host gets the error, the raw detail in its message or its causes.
    expect(hostErrors).toHaveLength(1);
    const chain: string[] = [];
    for (let e: unknown = hostErrors[0]; e instanceof Error; e = e.cause) chain.push(e.message);
    expect(chain.join("\n")).toContain(STORE_SECRET);
  });

  it("issue 8.10: any other rejection of run.call goes to the host with a fixed message, never to the model", async () => {
    const raw = new Error("connect ECONNREFUSED redis://user:pw@10.0.0.5:6379");
    const real = governor().startRun();
    // A run whose call rejects with something that is not a HostError (a bug, a core that
    // throws): the adapter must not rethrow it into the AI SDK.
    const run = { ...real, ended: false, call: () => Promise.reject(raw) } as typeof real;
    const hostErrors: HostError[] = [];
    const model = scripted(callTool("get_note", { id: "x" }), say("done"));
    const result = await generateText({
      model,
      tools: governTools(
        { get_note: noteTool(async () => ({ id: "x" })) },
        { run, onHostError: (error) => hostErrors.push(error) },
      ),
      stopWhen: stepCountIs(3),
      prompt: "Read note x",
    });
    const seen = JSON.stringify([result.steps, model.doGenerateCalls.map((c) => c.prompt)]);
    expect(seen).not.toContain("10.0.0.5");
    expect(result.steps[0]?.toolResults[0]?.output).toMatch(
      /^get_note: the call could not be completed\. /,
    );
    expect(hostErrors).toHaveLength(1);
    expect(hostErrors[0]).toMatchObject({ reason: "unexpected_error", tool: "get_note" });
    expect(hostErrors[0]?.message).not.toContain("10.0.0.5");
    expect(hostErrors[0]?.cause).toBe(raw);
  });

  const SECRET_TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
  const nonErrors: [string, () => unknown][] = [
    ["undefined", () => undefined],
    ["null", () => null],
    ["a string holding a token", () => `auth failed for token ${SECRET_TOKEN}`],
    ["a symbol", () => Symbol(SECRET_TOKEN)],
    ["a number", () => 42],
    [
      "a proxy that throws on every trap",
      () =>
        new Proxy(
          {},
          {
            get() {
              throw new Error(SECRET_TOKEN);
            },
            has() {
              throw new Error(SECRET_TOKEN);
            },
            ownKeys() {
              throw new Error(SECRET_TOKEN);
            },
            getPrototypeOf() {
              throw new Error(SECRET_TOKEN);
            },
            getOwnPropertyDescriptor() {
              throw new Error(SECRET_TOKEN);
            },
          },
        ),
    ],
    [
      "an object with throwing getters",
      () => ({
        get message(): string {
          throw new Error(SECRET_TOKEN);
        },
        get code(): number {
          throw new Error(SECRET_TOKEN);
        },
        toString(): string {
          throw new Error(SECRET_TOKEN);
        },
      }),
    ],
    ["an Error whose message holds a token", () => new Error(`bad token ${SECRET_TOKEN}`)],
  ];

  it.each(nonErrors)(
    "issue 9 (what held): a tool that throws %s gets a redacted error text, nothing rejects",
    async (_kind, make) => {
      const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
      const model = scripted(callTool("get_note", { id: "x" }), say("done"));
      const result = await generateText({
        model,
        tools: governTools(
          {
            get_note: noteTool(async () => {
              throw make();
            }),
          },
          { run },
        ),
        stopWhen: [stepCountIs(3), governorStopCondition(run)],
        prompt: "Read note x",
      });
      const output = result.steps[0]?.toolResults[0]?.output;
      expect(typeof output).toBe("string");
      expect(output).toMatch(/^get_note: /);
      expect(result.steps[0]?.content.some((p) => p.type === "tool-error")).toBe(false);
      const prompts = JSON.stringify(model.doGenerateCalls.map((c) => c.prompt));
      expect(prompts).not.toContain(SECRET_TOKEN);
      expect(JSON.stringify(result.steps)).not.toContain(SECRET_TOKEN);
    },
  );

  it("observe-only: a tool's error reaches the AI SDK untouched, as without Governor; the host is not told", async () => {
    // Observe-only enforces nothing: run.call hands back what the tool threw. Taken for trouble
    // in Governor, it became the host's `unexpected_error` and the model read "the run stops
    // here" from a run that went on.
    const hostErrors: HostError[] = [];
    const run = governor({
      observeOnly: true,
      tools: { get_note: { effect: "read_only" } },
    }).startRun();
    const model = scripted(callTool("get_note", { id: "x" }), say("done"));
    const result = await generateText({
      model,
      tools: governTools(
        {
          get_note: noteTool(async () => {
            throw new Error('Note "x" not found');
          }),
        },
        { run, onHostError: (e) => hostErrors.push(e) },
      ),
      stopWhen: [stepCountIs(3), governorStopCondition(run)],
      prompt: "Read note x",
    });
    expect(hostErrors).toEqual([]);
    expect(result.text).toBe("done");
    const failure = result.steps[0]?.content.find((p) => p.type === "tool-error");
    expect(failure).toMatchObject({ toolName: "get_note", error: new Error('Note "x" not found') });
    expect(toolOutputs(model.doGenerateCalls[1]?.prompt ?? [])).toEqual([
      { type: "error-text", value: 'Note "x" not found' },
    ]);
    expect(run.end().reason).toBe("completed");
  });

  describe("a replayed write and the tool's own toModelOutput", () => {
    // The ledger keeps a result as JSON (the memory store too): a replay hands back a Date as a
    // string, and none at all with `replay: false`. Handed to the tool's own toModelOutput, which
    // reads the live value's shape, that threw out of generateText: the loop crashed on a write
    // that was done, and did not run again.
    const replayTwice = async (policy: PolicyInput, make: () => Tool) => {
      const gov = governor(policy);
      const runs: { text: string; outputs: unknown[] }[] = [];
      for (let i = 0; i < 2; i++) {
        const run = gov.startRun({ idempotencyScope: "job-1" });
        const model = scripted(callTool("book", { room: "a" }, "call_1"), say("ok"));
        const result = await generateText({
          model,
          tools: governTools({ book: make() }, { run }),
          stopWhen: [stepCountIs(3), governorStopCondition(run)],
          prompt: "Book room a",
        });
        run.end();
        runs.push({
          text: result.text,
          outputs: toolOutputs(model.doGenerateCalls[1]?.prompt ?? []),
        });
      }
      return runs;
    };

    it("a result JSON changed (a Date now a string): the model reads it as JSON, the loop goes on", async () => {
      let booked = 0;
      const runs = await replayTwice({ tools: { book: { effect: "mutating" } } }, () =>
        tool({
          inputSchema: z.object({ room: z.string() }),
          execute: async () => {
            booked += 1;
            return { room: "a", at: new Date(0) };
          },
          toModelOutput: ({ output }) => ({
            type: "text",
            value: `booked at ${output.at.toISOString()}`,
          }),
        }),
      );
      expect(booked).toBe(1);
      expect(runs[0]?.outputs).toEqual([
        { type: "text", value: "booked at 1970-01-01T00:00:00.000Z" },
      ]);
      expect(runs[1]?.text).toBe("ok");
      expect(runs[1]?.outputs).toEqual([
        { type: "json", value: { room: "a", at: "1970-01-01T00:00:00.000Z" } },
      ]);
    });

    it("no result kept (replay: false): the model reads that it was done, not the tool's rendering of nothing", async () => {
      let booked = 0;
      const runs = await replayTwice(
        { tools: { book: { effect: "mutating", idempotency: { replay: false } } } },
        () =>
          tool({
            inputSchema: z.object({ room: z.string() }),
            execute: async () => {
              booked += 1;
              return { rooms: ["a"] };
            },
            toModelOutput: ({ output }) => ({ type: "text", value: output.rooms.join(", ") }),
          }),
      );
      expect(booked).toBe(1);
      expect(runs[0]?.outputs).toEqual([{ type: "text", value: "a" }]);
      expect(runs[1]?.text).toBe("ok");
      expect(runs[1]?.outputs).toEqual([{ type: "text", value: replayedText("book") }]);
    });
  });
});

describe("governTools", () => {
  const execOptions = (toolCallId: string, abortSignal?: AbortSignal) => ({
    toolCallId,
    messages: [] as ModelMessage[],
    ...(abortSignal !== undefined && { abortSignal }),
  });

  it("refuses options it could not work with, naming the field (without a run every call failed with a fixed text)", async () => {
    const run = governor().startRun();
    const tools = { get_note: noteTool(async () => "x") };
    const refused = (options: unknown, field: RegExp) =>
      expect(() => governTools(tools, options as never)).toThrow(
        expect.objectContaining({ code: "invalid_options", message: expect.stringMatching(field) }),
      );
    refused(
      {},
      /^governTools: run must be a Governor run \(governor\.startRun\(\)\), got undefined/,
    );
    refused(undefined, /run must be a Governor run/);
    refused({ run: governor() }, /run must be a Governor run .*got object/);
    refused({ run, onStop: "log" }, /onStop must be a function, got string/);
    refused({ run, onHostError: {} }, /onHostError must be a function, got object/);
    refused({ run, reconnect: true }, /reconnect must be a function, got boolean/);
    for (const reconnectTimeoutMs of [0, -5, Number.NaN, "1000"]) {
      refused(
        { run, reconnect: async () => ({}), reconnectTimeoutMs },
        /reconnectTimeoutMs must be a positive number of ms, got /,
      );
    }
    refused({ run, server: 7 }, /server must be a string/);
    expect(() => governTools(null as never, { run })).toThrow(/tools must be an object/);
    expect(Object.keys(governTools(tools, { run }))).toEqual(["get_note"]);
  });

  it("leaves tools without execute as they are and keeps a tool's own toModelOutput", async () => {
    // A tool the client answers itself (no execute).
    const clientSide = tool({
      inputSchema: z.object({ q: z.string() }),
      outputSchema: z.object({ answer: z.string() }),
    });
    const withOutput = tool({
      inputSchema: z.object({ id: z.string() }),
      execute: async ({ id }) => {
        if (id === "bad") throw new Error("no such note");
        return { id, words: 3 };
      },
      toModelOutput: ({ output }) => ({ type: "text", value: `${output.words} words` }),
    });
    const run = governor({ tools: { "*": { effect: "read_only" } } }).startRun();
    const governed = governTools({ clientSide, withOutput }, { run });
    expect(governed.clientSide).toBe(clientSide);

    const wrapped = governed.withOutput as Tool;
    const ok = await wrapped.execute?.({ id: "a" }, execOptions("c1"));
    expect(
      await wrapped.toModelOutput?.({ toolCallId: "c1", input: { id: "a" }, output: ok }),
    ).toEqual({ type: "text", value: "3 words" });
    const failed = await wrapped.execute?.({ id: "bad" }, execOptions("c2"));
    expect(typeof failed).toBe("string");
    expect(
      await wrapped.toModelOutput?.({ toolCallId: "c2", input: { id: "bad" }, output: failed }),
    ).toEqual({ type: "error-text", value: failed });
  });

  it("aborts the attempt when the AI SDK's abort signal fires, and stops the run", async () => {
    const run = governor({ tools: { wait: { effect: "read_only" } } }).startRun();
    let seen: AbortSignal | undefined;
    const governed = governTools(
      {
        wait: tool({
          inputSchema: z.object({}),
          execute: (_input, { abortSignal }) =>
            new Promise((_, reject) => {
              seen = abortSignal;
              abortSignal?.addEventListener("abort", () => reject(abortSignal.reason));
            }),
        }),
      },
      { run },
    );
    const ac = new AbortController();
    const pending = (governed.wait as Tool).execute?.({}, execOptions("c1", ac.signal));
    await new Promise((resolve) => setTimeout(resolve, 5));
    ac.abort();
    const text = await pending;
    expect(seen?.aborted).toBe(true);
    expect(text).toMatch(/^wait: /);
    expect(run.summary().reason).toBe("aborted");
  });
});

describe("reconnect (a new @ai-sdk/mcp client)", () => {
  /** What a tool of `@ai-sdk/mcp`'s client throws once its client is closed. */
  const closedClient = () =>
    Object.assign(new Error("Attempted to send a request from a closed client"), {
      name: "MCPClientError",
      [Symbol.for("vercel.ai.error.AI_MCPClientError")]: true,
    });

  it("the call that found the client closed is sent once more through the new client's tool; later calls use it", async () => {
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const sent: string[] = [];
    const dead = noteTool(async () => {
      sent.push("old");
      throw closedClient();
    });
    const fresh = noteTool(async ({ id }) => {
      sent.push(`new:${id}`);
      return `note ${id}`;
    });
    let reconnects = 0;
    const result = await generateText({
      model: scripted(
        callTool("get_note", { id: "a" }, "c1"),
        callTool("get_note", { id: "b" }, "c2"),
        say("done"),
      ),
      tools: governTools(
        { get_note: dead },
        {
          run,
          reconnect: async () => {
            reconnects += 1;
            return { get_note: fresh };
          },
        },
      ),
      stopWhen: [stepCountIs(4), governorStopCondition(run)],
      prompt: "Read a and b",
    });
    expect(sent).toEqual(["old", "new:a", "new:b"]);
    expect(reconnects).toBe(1);
    expect(result.steps.map((s) => s.toolResults[0]?.output)).toEqual([
      "note a",
      "note b",
      undefined,
    ]);
    // Nothing was sent on the closed client: not a failure of the call, no retry spent.
    expect(run.summary()).toMatchObject({ calls: 2, failures: 0, retries: 0 });
  });

  it("the tool sets of two runs given the same reconnect share it: one new client, used by both", async () => {
    const dead = noteTool(async () => {
      throw closedClient();
    });
    const fresh = noteTool(async ({ id }) => `note ${id}`);
    let reconnects = 0;
    const reconnect = async () => {
      reconnects += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { get_note: fresh };
    };
    const outputs = await Promise.all(
      ["a", "b"].map(async (id) => {
        const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
        const result = await generateText({
          model: scripted(callTool("get_note", { id }, `c-${id}`), say("done")),
          tools: governTools({ get_note: dead }, { run, reconnect }),
          stopWhen: [stepCountIs(3), governorStopCondition(run)],
          prompt: `Read ${id}`,
        });
        return result.steps[0]?.toolResults[0]?.output;
      }),
    );
    expect(outputs).toEqual(["note a", "note b"]);
    expect(reconnects).toBe(1);
  });

  it("a reconnect that fails, or whose tools lack the tool, goes to the host as session_expired", async () => {
    for (const reconnect of [
      async () => {
        throw new Error("spawn ENOENT");
      },
      async () => ({ other_tool: noteTool(async () => "x") }),
    ]) {
      const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
      const hostErrors: HostError[] = [];
      const result = await generateText({
        model: scripted(callTool("get_note", { id: "a" }, "c1"), say("done")),
        tools: governTools(
          {
            get_note: noteTool(async () => {
              throw closedClient();
            }),
          },
          { run, reconnect, onHostError: (e) => hostErrors.push(e) },
        ),
        stopWhen: [stepCountIs(4), governorStopCondition(run)],
        prompt: "Read a",
      });
      expect(hostErrors).toEqual([
        expect.objectContaining({
          reason: "session_expired",
          message: expect.stringMatching(
            /^get_note: Reconnect.*(ENOENT|no longer has the tool get_note)/,
          ),
        }),
      ]);
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(
        /^get_note: the call could not be completed\. /,
      );
    }
  });
});
