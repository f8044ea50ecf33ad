/**
 * attack27: hostile failures through each adapter's public API, read where the SDK hands them to
 * the model: LangGraph's ToolNode's ToolMessage content, the AI SDK's tool output as its
 * `toModelOutput` renders it (the `error-text` part), the Agents SDK's function tool output
 * (what `invoke` hands back to the run; a stop ends the run with a GovernorStopError instead).
 * A tool's Error with the secret in its cause, its stack (a browser frame), an AggregateError's
 * errors, an HTTP client's response body, a thrown string (a Rust panic), a thrown plain object,
 * and an MCP `isError` result handed back as it came (secrets in text, a resource, structuredContent).
 *
 * Found: a LangChain tool that returned an MCP `isError` result (a tool that hands on what its
 * MCP client answered) was a success to governTool: ToolNode wrote its JSON, the token, the
 * password, the path, as the ToolMessage's content. The other surfaces judged it a failure.
 */

import { governTools as aiGovern } from "@governor/ai-sdk";
import { createGovernor } from "@governor/core";
import { governTools as lcGovern } from "@governor/langchain";
import { GovernorStopError, governedTool } from "@governor/openai-agents";
import { AIMessage, type ToolMessage } from "@langchain/core/messages";
import { tool as lcTool } from "@langchain/core/tools";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { RunContext } from "@openai/agents";
import { tool as aiTool } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const SECRETS = [
  "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0",
  "hunter2xyz",
  "/srv/notes/app/db.js",
  "9f8e7d6c5b4a3210",
  "app.min.js",
  "src/store.rs",
  "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
];

function hostile(): unknown[] {
  const withCause = new Error("lookup failed", {
    cause: new Error("password=hunter2xyz at /srv/notes/app/db.js:3:4"),
  });
  const withStack = new Error("Note not found");
  withStack.stack =
    "Error: Note not found\n    at https://cdn.example.com/app.min.js:1:23456\n    at Object.get (/srv/notes/app/db.js:3:4)";
  const agg = new AggregateError(
    [
      new Error("token sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0 rejected"),
      new Error("the key is 9f8e7d6c5b4a3210"),
    ],
    "2 lookups failed",
  );
  const axiosLike = Object.assign(new Error("Request failed with status code 401"), {
    response: {
      status: 401,
      data: { error: "bad token ghp_abcdefghijklmnopqrstuvwxyz0123456789" },
    },
  });
  return [
    withCause,
    withStack,
    agg,
    axiosLike,
    "thread 'main' panicked at src/store.rs:12:9:\nnote store unavailable",
    { message: "the key is 9f8e7d6c5b4a3210", code: 500 },
    {
      isError: true,
      content: [
        { type: "text", text: "denied for token sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0" },
        {
          type: "resource",
          resource: { uri: "file:///srv/notes/app/db.js", text: "password=hunter2xyz" },
        },
        { type: "image", data: "aGVsbG8=", mimeType: "image/png" },
      ],
      structuredContent: { error: "bad", token: "ghp_abcdefghijklmnopqrstuvwxyz0123456789" },
    },
  ];
}

function leaks(text: string): string[] {
  return SECRETS.filter((s) => text.includes(s));
}

function governor() {
  return createGovernor(
    { tools: { "*": { effect: "read_only", retry: { attempts: 1 } } } },
    { metrics: false },
  );
}

const act = (h: unknown) => async () => {
  if (typeof h === "object" && h !== null && (h as { isError?: unknown }).isError === true)
    return h;
  throw h;
};

describe("attack27 probe: LangGraph ToolNode", () => {
  it.each(hostile().map((h, i) => [i, h] as const))("failure %i", async (_i, h) => {
    const run = governor().startRun();
    const t = lcTool(act(h) as never, {
      name: "get_note",
      description: "d",
      schema: z.object({ id: z.string() }),
    });
    const node = new ToolNode(lcGovern([t], { run }));
    const out = (await node.invoke({
      messages: [
        new AIMessage({
          content: "",
          tool_calls: [{ id: "c1", name: "get_note", args: { id: "a" } }],
        }),
      ],
    })) as { messages: ToolMessage[] };
    const text = JSON.stringify(out.messages.map((m) => m.content));
    expect(leaks(text)).toEqual([]);
  });
});

describe("attack27 probe: AI SDK", () => {
  it.each(hostile().map((h, i) => [i, h] as const))("failure %i", async (_i, h) => {
    const run = governor().startRun();
    const tools = aiGovern(
      { get_note: aiTool({ inputSchema: z.object({ id: z.string() }), execute: act(h) as never }) },
      { run },
    );
    const t = tools.get_note as unknown as {
      execute: (input: unknown, options: unknown) => Promise<unknown>;
      toModelOutput: (options: unknown) => unknown;
    };
    const output = await t.execute({ id: "a" }, { toolCallId: "c1", messages: [] });
    const model = await t.toModelOutput({ toolCallId: "c1", input: { id: "a" }, output });
    const text = JSON.stringify(model);
    expect(leaks(text)).toEqual([]);
  });
});

describe("attack27 probe: Agents SDK governedTool", () => {
  it.each(hostile().map((h, i) => [i, h] as const))("failure %i", async (_i, h) => {
    const run = governor().startRun();
    const t = governedTool(
      {
        name: "get_note",
        description: "d",
        parameters: z.object({ id: z.string() }),
        execute: act(h) as never,
      },
      { run },
    );
    let text: string;
    try {
      text = JSON.stringify(
        await t.invoke(new RunContext(), JSON.stringify({ id: "a" }), {
          toolCall: { callId: "c1" },
        } as never),
      );
    } catch (error) {
      // A stop ends run(): the model reads nothing more; the error keeps the text it would read.
      expect(error).toBeInstanceOf(GovernorStopError);
      text = (error as GovernorStopError).modelText ?? "";
    }
    expect(leaks(text)).toEqual([]);
  });
});
