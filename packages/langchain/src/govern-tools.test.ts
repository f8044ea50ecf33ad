import {
  createGovernor,
  type GovernorOptions,
  type HostError,
  type PolicyInput,
  type Run,
} from "@governor/core";
import { ToolMessage } from "@langchain/core/messages";
import { StructuredTool, type StructuredToolInterface, tool } from "@langchain/core/tools";
import { createAgent, toolRetryMiddleware } from "langchain";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type Ended, runScriptedAgent } from "../../../test/support/langchain-agent.ts";
import {
  call,
  ScriptedChatModel,
  type ScriptedTurn,
  say,
} from "../../../test/support/scripted-chat-model.ts";
import { governorMiddleware } from "./agent.ts";
import { governTool, governTools } from "./govern-tools.ts";
import { governMcpTools } from "./mcp-tools.ts";
import { GovernorStopError } from "./stop.ts";

function governor(policy: PolicyInput = {}, options: GovernorOptions = {}) {
  return createGovernor(policy, { metrics: false, random: () => 0.5, ...options });
}

const SECRET = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";
const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 };
const USER = { messages: [{ role: "user", content: "Do the task" }] };

/** Runs langchain's prebuilt agent (`createAgent`) with the script; governed when `run` is set. */
function runAgent(
  tools: StructuredToolInterface[],
  script: readonly ScriptedTurn[],
  run?: Run,
  onHostError?: (error: HostError) => void,
): Promise<Ended> {
  return runScriptedAgent(
    script,
    run ? governTools(tools, { run, ...(onHostError && { onHostError }) }) : tools,
    run ? [governorMiddleware(run)] : [],
  );
}

/** Every tool message the model was shown, over all its turns. */
function shown(model: ScriptedChatModel): ToolMessage[] {
  return model.toolMessages();
}

const noteSchema = z.object({ id: z.string() });
type Guard = ReturnType<typeof governorMiddleware>;

describe("governTools with createAgent (langchain 1.x)", () => {
  it("a wrong id: the model gets Governor's redacted correction and fixes the call", async () => {
    let calls = 0;
    const getNote = tool(
      async ({ id }) => {
        calls += 1;
        if (id !== "welcome") throw new Error(`Note "${id}" not found (key ${SECRET})`);
        return "Welcome!";
      },
      { name: "get_note", description: "Reads a note", schema: noteSchema },
    );
    const script = [
      call("get_note", { id: "wellcome" }, "c1"),
      call("get_note", { id: "welcome" }, "c2"),
      say("It says Welcome!"),
    ];

    // Alone, LangChain's ToolNode hands the model the raw message, secret included.
    const plain = await runAgent([getNote], script);
    expect(plain.error).toBeUndefined();
    expect(String(shown(plain.model)[0]?.content)).toContain(SECRET);
    expect(String(shown(plain.model)[0]?.content)).toContain("Please fix your mistakes");

    calls = 0;
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const governed = await runAgent([getNote], script, run);
    expect(governed.error).toBeUndefined();
    const [first, second] = shown(governed.model);
    expect(first?.status).toBe("error");
    expect(first?.tool_call_id).toBe("c1");
    expect(String(first?.content)).toMatch(/^get_note: Note "wellcome" not found/);
    expect(String(first?.content)).not.toContain(SECRET);
    expect(String(first?.content)).not.toContain("Please fix your mistakes");
    expect(second).toMatchObject({ status: "success", content: "Welcome!", tool_call_id: "c2" });
    expect(governed.messages.at(-1)?.content).toBe("It says Welcome!");
    expect(calls).toBe(2);
    expect(run.summary()).toMatchObject({ calls: 2, failures: 1, reason: "completed" });
  });

  it("a 503 is retried inside the call: the model sees only the success", async () => {
    let calls = 0;
    const getNote = tool(
      async ({ id }) => {
        calls += 1;
        if (calls <= 2) throw new Error("503 Service Unavailable");
        return `note ${id}`;
      },
      { name: "get_note", description: "Reads a note", schema: noteSchema },
    );
    const run = governor({
      tools: { get_note: { effect: "read_only", retry: FAST_RETRY } },
    }).startRun();
    const ended = await runAgent([getNote], [call("get_note", { id: "a" }, "c1"), say("ok")], run);
    expect(ended.error).toBeUndefined();
    expect(calls).toBe(3);
    expect(ended.model.turns).toHaveLength(2);
    expect(shown(ended.model)).toHaveLength(1);
    expect(shown(ended.model)[0]).toMatchObject({ status: "success", content: "note a" });
    expect(JSON.stringify(ended.model.turns)).not.toMatch(/Service Unavailable|\b503\b/); // not a random id that holds "503"
    expect(run.summary()).toMatchObject({ calls: 1, attempts: 3, retries: 2 });
  });

  it("a permission error ends the run after one call: invoke rejects with GovernorStopError", async () => {
    let calls = 0;
    const deleteNote = tool(
      async () => {
        calls += 1;
        throw new Error("403 Forbidden: permission denied for user u-17");
      },
      { name: "delete_note", description: "Deletes a note", schema: noteSchema },
    );
    const script = [
      call("delete_note", { id: "x" }, "c1"),
      call("delete_note", { id: "y" }, "c2"),
      call("delete_note", { id: "z" }, "c3"),
      say("gave up"),
    ];

    // Alone, the agent hands the model the error and lets it try again until it gives up.
    const plain = await runAgent([deleteNote], script);
    expect(plain.error).toBeUndefined();
    expect(calls).toBe(3);
    expect(plain.model.turns).toHaveLength(4);

    calls = 0;
    const run = governor().startRun();
    const governed = await runAgent([deleteNote], script, run);
    expect(calls).toBe(1);
    expect(governed.model.turns).toHaveLength(1);
    expect(governed.error).toBeInstanceOf(GovernorStopError);
    const stop = governed.error as GovernorStopError;
    expect(stop).toMatchObject({ code: "run_ended", reason: "forbidden", tool: "delete_note" });
    expect(stop.personResolvable).toBe(true);
    expect(stop.summary).toMatchObject({ reason: "forbidden", calls: 1, attempts: 1 });
    expect(stop.modelText).toMatch(/^delete_note: /);
    expect(run.ended).toBe(true);
  });

  it("an uncertain write stops with its idempotency key, which reached the tool as an argument", async () => {
    const keys: unknown[] = [];
    const sendEmail = tool(
      async ({ idempotency_key }) => {
        keys.push(idempotency_key);
        // The request went out; the answer never came back.
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
      },
      {
        name: "send_email",
        description: "Sends an email",
        schema: z.object({ to: z.string(), idempotency_key: z.string().optional() }),
      },
    );
    const gov = governor({
      tools: {
        send_email: {
          effect: "mutating",
          retry: FAST_RETRY,
          idempotency: { argument: "idempotency_key" },
        },
      },
    });
    const run = gov.startRun();
    const ended = await runAgent(
      [sendEmail],
      [call("send_email", { to: "a@example.com" }, "c1"), say("sent")],
      run,
    );
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^gk_[0-9a-f]{32}$/);
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    const stop = ended.error as GovernorStopError;
    expect(stop.reason).toBe("uncertain_mutation");
    expect(stop.idempotencyKey).toBe(keys[0]);
    expect(stop.message).toContain(String(keys[0]));
    expect(ended.model.turns).toHaveLength(1);
    // The model never sees the key; the last turn's tool message is Governor's stop text.
    const last = ended.messages.at(-1) as ToolMessage;
    expect(last.status).toBe("error");
    expect(String(last.content)).not.toContain(String(keys[0]));
  });

  it("a JSON-RPC error goes to the host, never to the model", async () => {
    const getNote = tool(
      async () => {
        throw Object.assign(new Error(`Internal error at db-7.internal key=${SECRET}`), {
          code: -32603,
        });
      },
      { name: "get_note", description: "Reads a note", schema: noteSchema },
    );
    const hostErrors: HostError[] = [];
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const ended = await runAgent(
      [getNote],
      [call("get_note", { id: "x" }, "c1"), say("done")],
      run,
      (error) => hostErrors.push(error),
    );
    expect(hostErrors).toHaveLength(1);
    expect(hostErrors[0]?.message).not.toContain(SECRET);
    expect(String((hostErrors[0]?.cause as Error | undefined)?.message)).toContain(SECRET);
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    expect(ended.error).toMatchObject({ reason: "protocol_error" });
    expect((ended.error as GovernorStopError).hostError).toBe(hostErrors[0]);
    const last = ended.messages.at(-1) as ToolMessage;
    expect(String(last.content)).toMatch(/^get_note: the call could not be completed\. /);
    expect(JSON.stringify(ended.messages)).not.toContain(SECRET);
    // The host's name, in what any message says (its own ids are random UUIDs, which may hold
    // "db-7" by chance).
    expect(JSON.stringify(ended.messages.map((m) => m.content))).not.toContain("db-7");
  });

  it.each([
    ["null", null],
    ["42", 42],
    ["undefined", undefined],
  ])(
    "a tool that throws %s said nothing the model can act on: the host gets it (malformed_response), the model is not told to change its arguments",
    async (_what, thrown) => {
      let calls = 0;
      const getNote = tool(
        async () => {
          calls += 1;
          throw thrown;
        },
        { name: "get_note", description: "Reads a note", schema: noteSchema },
      );
      const hostErrors: HostError[] = [];
      const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
      const ended = await runAgent(
        [getNote],
        [call("get_note", { id: "x" }, "c1"), call("get_note", { id: "y" }, "c2"), say("done")],
        run,
        (error) => hostErrors.push(error),
      );
      expect(calls).toBe(1);
      expect(hostErrors.map((e) => e.reason)).toEqual(["malformed_response"]);
      expect(ended.error).toMatchObject({ reason: "malformed_response" });
      const last = ended.messages.at(-1) as ToolMessage;
      expect(String(last.content)).toMatch(/^get_note: the call could not be completed\. /);
      expect(JSON.stringify(ended.messages)).not.toMatch(/arguments/i);
    },
  );

  it("a JSON-RPC error after a write went out: GovernorStopError names the write's key, as its hostError does", async () => {
    const archive = tool(
      async () => {
        throw Object.assign(new Error("Internal error"), { code: -32603 });
      },
      { name: "archive_note", description: "Archives a note", schema: noteSchema },
    );
    const hostErrors: HostError[] = [];
    const run = governor({ tools: { archive_note: { effect: "mutating" } } }).startRun();
    const ended = await runAgent(
      [archive],
      [call("archive_note", { id: "x" }, "c1"), say("done")],
      run,
      (error) => hostErrors.push(error),
    );
    const key = hostErrors[0]?.idempotencyKey;
    expect(key).toMatch(/^gk_/);
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    expect(ended.error).toMatchObject({ reason: "protocol_error", idempotencyKey: key });
  });

  it("toolRetryMiddleware never repeats a governed write: governed tools do not throw", async () => {
    let calls = 0;
    const sendEmail = tool(
      async () => {
        calls += 1;
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
      },
      { name: "send_email", description: "Sends an email", schema: z.object({ to: z.string() }) },
    );
    const run = governor({ tools: { send_email: { effect: "mutating" } } }).startRun();
    const model = new ScriptedChatModel([call("send_email", { to: "a" }, "c1"), say("ok")]);
    const agent = createAgent({
      model,
      tools: governTools([sendEmail], { run }),
      middleware: [
        // Its declared types do not satisfy exactOptionalPropertyTypes; the object is fine.
        toolRetryMiddleware({
          maxRetries: 3,
          initialDelayMs: 1,
          jitter: false,
        }) as unknown as Guard,
        governorMiddleware(run),
      ],
    });
    await expect(agent.invoke(USER)).rejects.toMatchObject({ reason: "uncertain_mutation" });
    expect(calls).toBe(1);
  });
});

describe("a local tool's success nested too deep to hand over", () => {
  /** An object nesting `levels` objects. */
  function nested(levels: number): unknown {
    let value: unknown = { id: "r-1" };
    for (let i = 0; i < levels; i += 1) value = { child: value };
    return value;
  }

  // 150 levels: past MAX_RESULT_DEPTH (the other adapters hand over no such result); 6000: past
  // what JSON.stringify reads, where LangChain's own formatting falls back to String(value).
  it.each([150, 6_000])(
    "a write nesting %i levels: the model reads that it was made, not its text, and it is made once",
    async (levels) => {
      let calls = 0;
      const createRecord = tool(
        async () => {
          calls += 1;
          return nested(levels);
        },
        {
          name: "create_record",
          description: "Creates a record",
          schema: z.object({ title: z.string() }),
        },
      );
      const run = governor({ tools: { create_record: { effect: "mutating" } } }).startRun();
      const ended = await runAgent(
        [createRecord],
        [call("create_record", { title: "a" }, "c1"), say("done")],
        run,
      );
      expect(ended.error).toBeUndefined();
      const [message] = shown(ended.model);
      expect(message?.tool_call_id).toBe("c1");
      expect(String(message?.content)).not.toContain("[object Object]");
      expect(String(message?.content)).toMatch(
        /^create_record: this call was made and succeeded, but its result nests deeper than 100 levels/,
      );
      expect(calls).toBe(1);

      // Invoked without a tool call, the governed tool answers the same text.
      const direct = await governTool(createRecord, {
        run: governor({ tools: { create_record: { effect: "read_only" } } }).startRun(),
      }).invoke({ title: "b" });
      expect(String(direct)).toMatch(/^create_record: this call was made and succeeded/);
    },
  );

  it("reads the content of a content_and_artifact pair, and a tool class's own private state", async () => {
    const pair = tool(async () => ["made r-1", nested(150)] as [string, unknown], {
      name: "create_record",
      description: "Creates a record",
      schema: z.object({ title: z.string() }),
      responseFormat: "content_and_artifact",
    });
    const run = governor({ tools: { create_record: { effect: "mutating" } } }).startRun();
    const [governedPair] = governTools([pair], { run });
    const message = (await governedPair?.invoke({
      type: "tool_call",
      id: "c1",
      name: "create_record",
      args: { title: "a" },
    })) as ToolMessage;
    // The artifact is not shown to the model: the content is handed over as it came.
    expect(message).toMatchObject({ status: "success", content: "made r-1" });

    class Counter extends StructuredTool {
      name = "count";
      description = "Counts";
      schema = z.object({ by: z.number() });
      #total = 0;
      protected async _call({ by }: { by: number }): Promise<string> {
        this.#total += by;
        return `total ${this.#total}`;
      }
    }
    const counter = new Counter();
    const [governedCounter] = governTools([counter], {
      run: governor({ tools: { count: { effect: "mutating" } } }).startRun(),
    });
    const counted = (await governedCounter?.invoke({
      type: "tool_call",
      id: "c2",
      name: "count",
      args: { by: 2 },
    })) as ToolMessage;
    expect(counted).toMatchObject({ status: "success", content: "total 2" });
  });

  it("a result as deep as MAX_RESULT_DEPTH still reaches the model as the tool's text", async () => {
    const getRecord = tool(async () => nested(99), {
      name: "get_record",
      description: "Reads a record",
      schema: z.object({ id: z.string() }),
    });
    const run = governor({ tools: { get_record: { effect: "read_only" } } }).startRun();
    const ended = await runAgent(
      [getRecord],
      [call("get_record", { id: "r" }, "c1"), say("ok")],
      run,
    );
    expect(ended.error).toBeUndefined();
    const [message] = shown(ended.model);
    expect(message?.status).toBe("success");
    expect(JSON.parse(String(message?.content))).toEqual(nested(99));
  });
});

describe("seed checks: nothing the model reads carries a stack, a path or a secret", () => {
  const PATH = "/home/app/src/notes/store.ts";
  const throwers: [string, () => unknown][] = [
    ["an Error with a secret and a path", () => new Error(`ENOENT ${PATH} token ${SECRET}`)],
    [
      "an Error whose message is a stack",
      () => {
        const e = new Error(`boom ${SECRET}`);
        return new Error(String(e.stack));
      },
    ],
    ["a string", () => `failed with ${SECRET} at ${PATH}`],
    ["undefined", () => undefined],
    ["an object", () => ({ detail: SECRET, path: PATH })],
  ];

  it.each(throwers)("a tool that throws %s", async (_kind, make) => {
    const getNote = tool(
      async () => {
        throw make();
      },
      { name: "get_note", description: "Reads a note", schema: noteSchema },
    );
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const ended = await runAgent(
      [getNote],
      [call("get_note", { id: "x" }, "c1"), call("get_note", { id: "y" }, "c2"), say("done")],
      run,
    );
    const seen = JSON.stringify(ended.model.turns);
    expect(seen).not.toContain(SECRET);
    expect(seen).not.toContain("/home/app");
    expect(seen).not.toMatch(/\bat .*:\d+:\d+/);
    for (const message of shown(ended.model))
      expect(String(message.content)).toMatch(/^get_note: /);
  });

  it("input that fails the schema: counted by Governor, no stack (createAgent alone sends one)", async () => {
    let calls = 0;
    const getNote = tool(
      async () => {
        calls += 1;
        return "ok";
      },
      { name: "get_note", description: "Reads a note", schema: noteSchema },
    );
    const script = [call("get_note", { id: 42 }, "c1"), say("done")];

    // Alone, langchain's ToolNode wraps the parsing error in a ToolInvocationError whose text
    // carries the error's stack: file paths of the host reach the model.
    const plain = await runAgent([getNote], script);
    expect(String(shown(plain.model)[0]?.content)).toMatch(/\bat .*node_modules.*:\d+:\d+/);

    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const ended = await runAgent([getNote], script, run);
    expect(calls).toBe(0);
    const [message] = shown(ended.model);
    expect(message?.status).toBe("error");
    expect(String(message?.content)).toMatch(/^get_note: .*expected string, received number/);
    expect(String(message?.content)).not.toMatch(/node_modules|:\d+:\d+/);
    expect(run.summary()).toMatchObject({ calls: 1, failures: 1 });
    expect(run.summary().lastFailure?.reason).toBe("invalid_argument");
  });
});

describe("calls to a tool that does not exist (issue 29)", () => {
  const getNote = () =>
    tool(async () => "Welcome!", {
      name: "get_note",
      description: "Reads a note",
      schema: noteSchema,
    });
  // A model that keeps calling a tool it was never given, with other arguments each time.
  const script = Array.from({ length: 12 }, (_, i) =>
    call("get_notes", { id: `n${i}` }, `c${i + 1}`),
  );

  it("createAgent alone answers them itself until its recursion limit; governed, the third one stops the run", async () => {
    const plain = await runAgent([getNote()], script);
    // ToolNode's own answer each time, and nothing bounds the loop but the graph's limit.
    expect(plain.model.turns.length).toBeGreaterThan(10);
    expect(String(shown(plain.model)[0]?.content)).toMatch(/get_notes/);

    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const ended = await runAgent([getNote()], script, run);
    expect(ended.model.turns).toHaveLength(3);
    expect(ended.error).toBeInstanceOf(GovernorStopError);
    expect(ended.error).toMatchObject({ reason: "repeated_failure", tool: "get_notes" });
    expect(run.summary()).toMatchObject({
      reason: "repeated_failure",
      calls: 3,
      failures: 3,
      actions: { switch_tool: 2, stop: 1 },
    });
    expect(run.summary().lastFailure).toMatchObject({ tool: "get_notes", reason: "unknown_tool" });
    // The model read ToolNode's answer, which names the tools that exist; none of Governor's.
    const answers = ended.messages.filter((m): m is ToolMessage => ToolMessage.isInstance(m));
    expect(answers).toHaveLength(3);
    for (const answer of answers) expect(String(answer.content)).toMatch(/get_note\b/);
  });

  it("a known tool called beside an unknown one runs and is not counted as unknown", async () => {
    let reads = 0;
    const counted = tool(
      async () => {
        reads += 1;
        return "Welcome!";
      },
      { name: "get_note", description: "Reads a note", schema: noteSchema },
    );
    const run = governor({ tools: { get_note: { effect: "read_only" } } }).startRun();
    const both: ScriptedTurn = {
      calls: [
        { name: "get_note", args: { id: "welcome" }, id: "k1" },
        { name: "get_notes", args: { id: "welcome" }, id: "u1" },
      ],
    };
    const ended = await runAgent([counted], [both, say("done")], run);
    expect(ended.error).toBeUndefined();
    expect(reads).toBe(1);
    expect(run.summary()).toMatchObject({ calls: 2, failures: 1, actions: { switch_tool: 1 } });
    expect(run.summary().lastFailure?.tool).toBe("get_notes");
  });
});

describe("options", () => {
  it("refuses options it could not work with, naming the field (without a run every call failed with a fixed text)", async () => {
    const run = governor().startRun();
    const echo = tool(async () => "x", { name: "echo", schema: z.object({}) });
    const refused = (call: () => unknown, message: RegExp) =>
      expect(call).toThrow(
        expect.objectContaining({
          code: "invalid_options",
          message: expect.stringMatching(message),
        }),
      );
    refused(() => governTools([echo], {} as never), /^governTools: run must be a Governor run/);
    refused(() => governTools([], { run: governor() } as never), /run must be .*got object/);
    refused(
      () => governTool(echo, { run, onHostError: "log" } as never),
      /onHostError must be a function/,
    );
    refused(() => governTool(echo, { run, server: 1 } as never), /server must be a string/);
    refused(() => governTool({} as never, { run }), /tool must be a LangChain tool/);
    await expect(governMcpTools({} as never, { run })).rejects.toThrow(/client must be/);
    await expect(governMcpTools({} as never, {} as never)).rejects.toThrow(/run must be/);
    expect(governTools([echo], { run })).toHaveLength(1);
  });
});
