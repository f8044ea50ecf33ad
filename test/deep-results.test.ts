/**
 * A success nested deeper than a host can write down: a server answers `tools/call` with a
 * `structuredContent` of 10,000 nested arrays, a JSON text every parser reads but no recursive
 * serializer writes (`JSON.stringify` throws a `RangeError`). Every surface hands the model an
 * `isError` text saying the call was made and succeeded instead (`deliverableResult`, one
 * mechanism), over real stdio and Streamable HTTP: the governed client, `governor proxy` (which
 * otherwise never answered the host), the OpenAI Agents `governMcpServer`, and the AI SDK's
 * `generateText` with a local tool and an `@ai-sdk/mcp` tool.
 */
import { join } from "node:path";
import { governTools } from "@governor/ai-sdk";
import { createGovernor } from "@governor/core";
import { MAX_RESULT_DEPTH } from "@governor/core/judge";
import { deliverableResult, governClient, toModelResult } from "@governor/mcp";
import { governMcpServer } from "@governor/openai-agents";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { MCPServerStdio } from "@openai/agents";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { SDKS as AI_SDKS, callTool, say } from "../packages/ai-sdk/src/test-support/sdks.ts";
import { SDK_UNSUPPORTED } from "./openai-agents-support.ts";
import { ROOT, startRawProxy } from "./proxy-support.ts";
import { startRawHttpMcp } from "./support/raw-http-mcp.ts";

const RAW_SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");
const DEPTH = 10_000;

/** What the model is handed must be writable: a host serializes it. */
function expectUndeliverableText(result: unknown): void {
  const json = JSON.stringify(result);
  expect(json.length).toBeLessThan(2000);
  const { content, isError } = result as CallToolResult;
  expect(isError).toBe(true);
  const text = (content[0] as { text: string }).text;
  expect(text).toContain("write_note: this call was made and succeeded");
  expect(text).toContain(`deeper than ${MAX_RESULT_DEPTH} levels`);
}

/** A JSON-RPC answer with a result nested `depth` arrays deep, as a raw text. */
function deepAnswer(id: unknown, depth: number): string {
  const nested = `${"[".repeat(depth)}${"]".repeat(depth)}`;
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"done"}],"structuredContent":{"rows":${nested}}}}`;
}

/**
 * A Streamable HTTP server written by hand (JSON answers): the SDK's own server cannot write a
 * result this deep either.
 */
async function rawHttpServer(
  depth: number,
): Promise<{ url: URL; calls: () => number; close: () => Promise<void> }> {
  let calls = 0;
  const server = await startRawHttpMcp({
    name: "raw-http",
    tool: "write_note",
    answers: "json",
    onRequest: (message, _res, reply) => {
      calls++;
      reply(deepAnswer(message.id, depth));
    },
  });
  return { url: server.url, calls: () => calls, close: server.close };
}

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

describe("a success nested deeper than a host can write", () => {
  it("deliverableResult keeps a result within the depth and replaces a deeper or cyclic one", () => {
    let nested: unknown[] = [];
    for (let i = 1; i < MAX_RESULT_DEPTH - 2; i++) nested = [nested];
    // The result, `structuredContent` and `rows` take three levels: exactly the limit.
    const within: CallToolResult = { content: [], structuredContent: { rows: nested } };
    expect(deliverableResult(within, "write_note")).toBe(within);
    expectUndeliverableText(
      deliverableResult({ content: [], structuredContent: { rows: [nested] } }, "write_note"),
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expectUndeliverableText(
      deliverableResult({ content: [], structuredContent: cyclic }, "write_note"),
    );
  });

  it.each(["read_only", "mutating"] as const)(
    "governClient over stdio hands the model a text saying the %s call was made",
    async (effect) => {
      const client = new Client({ name: "deep-test", version: "1" });
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [RAW_SERVER],
        env: {
          ...(process.env as Record<string, string>),
          RAW_MODE: "deep",
          RAW_DEPTH: String(DEPTH),
        },
      });
      await client.connect(transport);
      closers.push(() => client.close());
      const governor = createGovernor({ tools: { write_note: { effect } } });
      const governed = governClient(client, { governor, server: "raw" });
      const run = governor.startRun();
      const outcome = await governed.callTool(run, { name: "write_note", arguments: { t: "a" } });
      expect(outcome.kind).toBe("ok");
      expectUndeliverableText(toModelResult(outcome));
      // The call succeeded: the run goes on, and counts no failure.
      expect(run.ended).toBe(false);
      const summary = await run.end();
      expect(summary.failures).toBe(0);
    },
    30_000,
  );

  it("governClient over Streamable HTTP does the same, the call made once", async () => {
    const http = await rawHttpServer(DEPTH);
    closers.push(http.close);
    const client = new Client({ name: "deep-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(http.url));
    closers.push(() => client.close());
    const governor = createGovernor({ tools: { write_note: { effect: "mutating" } } });
    const governed = governClient(client, { governor, server: "raw" });
    const outcome = await governed.callTool(governor.startRun(), {
      name: "write_note",
      arguments: { t: "a" },
    });
    expectUndeliverableText(toModelResult(outcome));
    expect(http.calls()).toBe(1);
  }, 30_000);

  it("governor proxy answers the host (it never did), then answers the next call as ever", async () => {
    const proxy = await startRawProxy(
      [],
      { command: process.execPath, args: [RAW_SERVER] },
      { env: { RAW_MODE: "deep,ok", RAW_DEPTH: String(DEPTH) } },
    );
    closers.push(() => proxy.close());
    const call = (id: number, t: string) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "write_note", arguments: { t } },
    });
    proxy.send(call(1, "a"));
    const first = await proxy.answer(1);
    expectUndeliverableText(first.result);
    proxy.send(call(2, "b"));
    const second = await proxy.answer(2);
    expect((second.result as CallToolResult).content).toEqual([{ type: "text", text: "done 2" }]);
  }, 60_000);

  it.skipIf(SDK_UNSUPPORTED)(
    "the OpenAI Agents governMcpServer hands the SDK the same text",
    async () => {
      const server = new MCPServerStdio({
        name: "raw",
        command: process.execPath,
        args: [RAW_SERVER],
        env: {
          RAW_MODE: "deep",
          RAW_DEPTH: String(DEPTH),
        },
        clientSessionTimeoutSeconds: 60,
      });
      await server.connect();
      closers.push(() => server.close());
      const governor = createGovernor({ tools: { write_note: { effect: "mutating" } } });
      const governed = governMcpServer(server, { governor, run: governor.startRun() });
      const full = await (
        governed as unknown as {
          callToolResult(name: string, args: Record<string, unknown>): Promise<CallToolResult>;
        }
      ).callToolResult("write_note", { t: "a" });
      expectUndeliverableText(full);
      const content = await governed.callTool("write_note", { t: "b" });
      expect(JSON.stringify(content)).toContain("this call was made and succeeded");
    },
    60_000,
  );
});

/** A value nested `depth` arrays deep, made without recursion. */
function deepValue(depth: number): unknown {
  let value: unknown[] = [];
  for (let i = 0; i < depth; i++) value = [value];
  return { rows: value };
}

describe.each(AI_SDKS)("$name: generateText with a success nested too deep", (entry) => {
  /** The model's input for the tool result: what it read, as the SDK wrote it. */
  const toolTexts = (prompts: unknown[]) =>
    JSON.stringify(prompts.at(-1)).match(/write_note: this call was made and succeeded/g) ?? [];

  it("a local tool's value reaches the model as the text saying the call was made", async () => {
    const sdk = await entry.load();
    const governor = createGovernor({ tools: { write_note: { effect: "mutating" } } });
    const run = governor.startRun();
    let executions = 0;
    const model = sdk.scripted([callTool("write_note", { t: "a" }, "c1"), say("done")]);
    const result = await sdk.generateText({
      model: model.model,
      tools: governTools(
        {
          write_note: sdk.tool({
            inputSchema: z.object({ t: z.string() }),
            execute: async () => {
              executions += 1;
              return deepValue(DEPTH) as { rows: unknown[] };
            },
          }),
        },
        { run },
      ),
      stopWhen: sdk.stepCountIs(4),
      prompt: "Write a",
    });
    expect(result.text).toBe("done");
    expect(executions).toBe(1);
    expect(toolTexts(model.prompts())).toHaveLength(1);
  }, 30_000);

  it("an @ai-sdk/mcp tool over stdio does the same", async () => {
    const sdk = await entry.load();
    const client = await sdk.mcp.createMCPClient({
      transport: new sdk.mcpStdio.Experimental_StdioMCPTransport({
        command: process.execPath,
        args: [RAW_SERVER],
        env: { RAW_MODE: "deep", RAW_DEPTH: String(DEPTH) },
        stderr: "ignore",
      }),
      onUncaughtError: () => {},
    });
    closers.push(() => client.close());
    const governor = createGovernor({ tools: { write_note: { effect: "mutating" } } });
    const model = sdk.scripted([callTool("write_note", { t: "a" }, "c1"), say("done")]);
    const result = await sdk.generateText({
      model: model.model,
      tools: governTools((await client.tools()) as Parameters<typeof governTools>[0], {
        run: governor.startRun(),
      }),
      stopWhen: sdk.stepCountIs(4),
      prompt: "Write a",
    });
    expect(result.text).toBe("done");
    expect(toolTexts(model.prompts())).toHaveLength(1);
  }, 30_000);
});
