import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type JSONRPCMessage,
  McpError,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { plainToolCall, routeToolCalls } from "./tool-call-route.ts";

type Answer = (request: CallToolRequest, signal: AbortSignal) => Promise<unknown>;

/**
 * A host's raw line end and an SDK `Server` whose tools/call handler is `answer`, with the route
 * (when `route`) giving the same `answer` tools/call before the SDK sees them. `taken` counts the
 * calls the route took.
 */
async function serve(answer: Answer, route: boolean, ready = true) {
  const [host, proxySide] = InMemoryTransport.createLinkedPair();
  const server = new Server({ name: "p", version: "1" }, { capabilities: { tools: {} } });
  const sdkSeen: RequestId[] = [];
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    sdkSeen.push(extra.requestId);
    return answer(request, extra.signal) as never;
  });
  const taken: { id: RequestId; signal: AbortSignal }[] = [];
  const errors: string[] = [];
  await server.connect(proxySide);
  if (route) {
    routeToolCalls(proxySide, {
      ready: () => ready,
      call: (request, id, signal) => {
        taken.push({ id, signal });
        return answer(request, signal) as never;
      },
      onerror: (error) => errors.push(error.message),
    });
  }
  const lines: JSONRPCMessage[] = [];
  host.onmessage = (message) => lines.push(message);
  await host.start();
  const send = (message: object) => host.send(message as JSONRPCMessage);
  const answered = async (id: RequestId) => {
    for (let i = 0; i < 200; i++) {
      const found = lines.find((m) => "id" in m && m.id === id);
      if (found !== undefined) return found;
      await new Promise((r) => setTimeout(r, 2));
    }
    return undefined;
  };
  return { send, answered, lines, taken, sdkSeen, errors, host, server };
}

const call = (id: RequestId, params: object) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params,
});

describe("routeToolCalls", () => {
  it("answers a tools/call as the SDK's Server does: a result, a thrown error with its code and data, one without", async () => {
    const answers: Answer[] = [
      async () => ({ content: [{ type: "text", text: "fine" }], isError: false }),
      async () => {
        throw new McpError(-32050, "nope", { why: 1 });
      },
      async () => {
        throw new Error("plain");
      },
    ];
    for (const answer of answers) {
      const sdk = await serve(answer, false);
      const ours = await serve(answer, true);
      const request = call(7, { name: "t", arguments: { a: 1 } });
      await sdk.send(request);
      await ours.send(request);
      const expected = await sdk.answered(7);
      expect(expected).toBeDefined();
      expect(await ours.answered(7)).toEqual(expected);
      expect(ours.taken).toHaveLength(1);
      expect(ours.sdkSeen).toHaveLength(0);
    }
  });

  it("answers a call that rejects with no error object (null, undefined) with -32603, where the SDK's Server sends no answer", async () => {
    for (const thrown of [null, undefined]) {
      const ours = await serve(() => Promise.reject(thrown), true);
      await ours.send(call(8, { name: "t" }));
      expect(await ours.answered(8)).toEqual({
        jsonrpc: "2.0",
        id: 8,
        error: { code: -32603, message: "Internal error" },
      });
      expect(ours.errors).toEqual([]);
    }
  });

  it("leaves to the SDK what it would not run: before initialize, a task, params its schema refuses", async () => {
    const answer: Answer = async () => ({ content: [] });
    const waiting = await serve(answer, true, false);
    await waiting.send(call(1, { name: "t" }));
    await waiting.answered(1);
    expect(waiting.sdkSeen).toEqual([1]);
    expect(waiting.taken).toHaveLength(0);
    for (const params of [{ name: "t", task: { ttl: 1000 } }, { name: 5 }]) {
      const sdk = await serve(answer, false);
      const ours = await serve(answer, true);
      await sdk.send(call(2, params));
      await ours.send(call(2, params));
      expect(ours.taken).toHaveLength(0);
      expect(await ours.answered(2)).toEqual(await sdk.answered(2));
    }
  });

  it("aborts a taken call on the host's cancel, with its reason, and sends no answer for it", async () => {
    let release: () => void = () => undefined;
    const answer: Answer = (_request, signal) =>
      new Promise((resolve) => {
        release = () => resolve({ content: [] });
        signal.addEventListener("abort", () => release());
      });
    const ours = await serve(answer, true);
    await ours.send(call(3, { name: "t" }));
    await new Promise((r) => setTimeout(r, 5));
    expect(ours.taken).toHaveLength(1);
    await ours.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 3, reason: "user stopped it" },
    });
    const [taken] = ours.taken;
    expect(taken?.signal.aborted).toBe(true);
    expect(taken?.signal.reason).toBe("user stopped it");
    expect(await ours.answered(3)).toBeUndefined();
    // A cancel of another id aborts nothing.
    await ours.send(call(4, { name: "t" }));
    await new Promise((r) => setTimeout(r, 5));
    await ours.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 9 },
    });
    expect(ours.taken[1]?.signal.aborted).toBe(false);
    release();
    expect(await ours.answered(4)).toMatchObject({ result: { content: [] } });
  });

  it("aborts the calls out when the host's transport closes", async () => {
    const answer: Answer = (_request, signal) =>
      new Promise((resolve) => signal.addEventListener("abort", () => resolve({ content: [] })));
    const ours = await serve(answer, true);
    await ours.send(call(5, { name: "t" }));
    await new Promise((r) => setTimeout(r, 5));
    await ours.host.close();
    expect(ours.taken[0]?.signal.aborted).toBe(true);
  });
});

describe("plainToolCall", () => {
  it("takes as they are only params the SDK's schema accepts and would hand on unchanged", () => {
    const cases: unknown[] = [
      { name: "t" },
      { name: "t", arguments: { a: 1, nested: { b: [1, "x"] } } },
      { name: "t", arguments: {}, _meta: { progressToken: "p" } },
      { name: "t", _meta: { progressToken: 3, "vendor/x": { y: 1 } } },
      { name: "t", _meta: {} },
      { name: 5 },
      { arguments: {} },
      { name: "t", arguments: [] },
      { name: "t", arguments: null },
      { name: "t", _meta: { progressToken: 1.5 } },
      { name: "t", _meta: { progressToken: null } },
      { name: "t", _meta: { "io.modelcontextprotocol/related-task": { taskId: "x" } } },
      { name: "t", task: { ttl: 5 } },
      { name: "t", extra: 1 },
      JSON.parse('{"name":"t","arguments":{"__proto__":{"polluted":true}}}'),
      [],
      null,
    ];
    let plain = 0;
    for (const params of cases) {
      const parsed = CallToolRequestSchema.safeParse({ method: "tools/call", params });
      if (!plainToolCall(params)) continue;
      plain += 1;
      expect(parsed.success, JSON.stringify(params)).toBe(true);
      expect(parsed.data?.params, JSON.stringify(params)).toEqual(params);
    }
    expect(plain).toBe(5);
  });
});
