import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import {
  CallToolResultSchema,
  type JSONRPCMessage,
  ListToolsResultSchema,
  type McpError,
} from "@modelcontextprotocol/sdk/types.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { plainToolResult, sendToolCallsDirectly } from "./upstream-tool-calls.ts";

// biome-ignore lint/suspicious/noExplicitAny: the fake server reads what it was sent
type Wire = JSONRPCMessage & { id?: string | number; method?: string; params?: any };

/** Results of other shapes, answered to the tool of their name (each a copy per answer). */
const SHAPES: Record<string, object> = {
  get reordered() {
    return { isError: false, vendor: { x: [1] }, content: [{ text: "a", type: "text" }] };
  },
  get structured() {
    return { content: [], structuredContent: { n: 1, list: [{ a: "b" }] } };
  },
  get extraBlockKey() {
    return { content: [{ type: "text", text: "a", note: "stripped by the schema" }] };
  },
  get image() {
    return { content: [{ type: "image", data: "aGk=", mimeType: "image/png" }] };
  },
  get meta() {
    return { content: [], _meta: { "vendor/x": 1 } };
  },
  get noContent() {
    return { isError: true };
  },
  get badIsError() {
    return { content: [], isError: "yes" };
  },
};

/**
 * A server on the other end of an in-memory pair that answers by tool name: `ok`, `fail` (an
 * error answer), `bad` (a result the schema refuses), `hang` (no answer); initialize and
 * tools/list as a server would. Every message it reads is kept.
 */
async function connected(direct: boolean) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const seen: Wire[] = [];
  serverSide.onmessage = (raw) => {
    const message = raw as Wire;
    seen.push(message);
    if (message.id === undefined || message.method === undefined) return;
    const answer = (body: object) =>
      void serverSide.send({ jsonrpc: "2.0", id: message.id, ...body } as JSONRPCMessage);
    if (message.method === "initialize") {
      answer({
        result: {
          protocolVersion: message.params.protocolVersion,
          capabilities: { tools: {} },
          serverInfo: { name: "s", version: "1" },
        },
      });
    } else if (message.method === "tools/list") {
      answer({ result: { tools: [] } });
    } else if (message.method === "tools/call") {
      const name = message.params.name;
      if (name === "ok") answer({ result: { content: [{ type: "text", text: "fine" }] } });
      if (name === "fail") answer({ error: { code: -32050, message: "nope", data: { x: 1 } } });
      if (name === "bad") answer({ result: { content: "not a list" } });
      if (name in SHAPES) answer({ result: SHAPES[name] });
    }
  };
  await serverSide.start();
  const client = new Client({ name: "c", version: "1" });
  const route = direct ? sendToolCallsDirectly(client) : undefined;
  await client.connect(clientSide);
  route?.attach(clientSide);
  const call = (name: string, options?: object) =>
    client.request(
      { method: "tools/call", params: { name, arguments: {} } },
      CallToolResultSchema,
      options,
    );
  return { client, call, seen, serverSide };
}

/** What a promise settled with, as comparable data. */
async function settled(promise: Promise<unknown>) {
  try {
    return { value: await promise };
  } catch (error) {
    const e = error as McpError & { issues?: unknown };
    return {
      error: {
        type: e?.constructor?.name,
        message: e?.message,
        code: e?.code,
        data: e?.data,
        issues: e?.issues,
      },
    };
  }
}

describe("sendToolCallsDirectly", () => {
  it("settles a tools/call as the SDK's own request does: a result, an error answer, a result the schema refuses", async () => {
    for (const name of ["ok", "fail", "bad", ...Object.keys(SHAPES)]) {
      const sdk = await connected(false);
      const ours = await connected(true);
      const expected = await settled(sdk.call(name));
      expect(await settled(ours.call(name)), name).toEqual(expected);
      await Promise.all([sdk.client.close(), ours.client.close()]);
    }
  });

  it("sends its own requests under string ids; every other request goes through the SDK", async () => {
    const ours = await connected(true);
    await ours.call("ok");
    await ours.client.request({ method: "tools/list" }, ListToolsResultSchema);
    const call = ours.seen.find((m) => m.method === "tools/call");
    const list = ours.seen.find((m) => m.method === "tools/list");
    expect(call?.id).toMatch(/^governor-\d+$/);
    expect(typeof list?.id).toBe("number");
    // With progress, the SDK's own path (its token is its request id).
    await ours.call("ok", { onprogress: () => undefined });
    const withProgress = ours.seen.filter((m) => m.method === "tools/call").at(-1);
    expect(typeof withProgress?.id).toBe("number");
    await ours.client.close();
  });

  it("times out each request at its own deadline with one timer for all: the earliest first, a later one re-armed for, one answered in time never", async () => {
    const ours = await connected(true);
    const started = Date.now();
    const ended: Record<string, number> = {};
    const order: string[] = [];
    const timed = (label: string, name: string, timeout: number) =>
      settled(ours.call(name, { timeout })).then((result) => {
        ended[label] = Date.now() - started;
        order.push(label);
        return result;
      });
    // The longest first: the timer is armed for it, then again for each earlier deadline.
    const slow = timed("slow", "hang", 500);
    const fast = timed("fast", "hang", 30);
    const answered = timed("answered", "ok", 40);
    const middle = timed("middle", "hang", 250);
    const results = await Promise.all([slow, fast, answered, middle]);
    expect(results.map((r) => r.error?.data ?? r.value)).toEqual([
      { timeout: 500 },
      { timeout: 30 },
      { content: [{ type: "text", text: "fine" }] },
      { timeout: 250 },
    ]);
    // Each at its own deadline, not all at the first deadline armed for.
    expect(order).toEqual(["answered", "fast", "middle", "slow"]);
    expect(ended.fast).toBeGreaterThanOrEqual(29);
    expect(ended.middle).toBeGreaterThanOrEqual(249);
    expect(ended.slow).toBeGreaterThanOrEqual(499);
    // Each was told to the server once, and the answered call was not.
    const cancels = ours.seen.filter((m) => m.method === "notifications/cancelled");
    expect(cancels).toHaveLength(3);
    await ours.client.close();
  });

  it("times out and is cancelled as the SDK's request is, telling the server", async () => {
    const sdk = await connected(false);
    const ours = await connected(true);
    const expected = await settled(sdk.call("hang", { timeout: 20 }));
    expect(expected.error).toMatchObject({ code: -32001, data: { timeout: 20 } });
    expect(await settled(ours.call("hang", { timeout: 20 }))).toEqual(expected);
    const cancelled = ours.seen.find((m) => m.method === "notifications/cancelled");
    const sent = ours.seen.find((m) => m.method === "tools/call");
    expect(cancelled?.params).toEqual({
      requestId: sent?.id,
      reason: "McpError: MCP error -32001: Request timed out",
    });

    const abortSdk = new AbortController();
    const abortOurs = new AbortController();
    const sdkCall = settled(sdk.call("hang", { signal: abortSdk.signal }));
    const ourCall = settled(ours.call("hang", { signal: abortOurs.signal }));
    abortSdk.abort("the host cancelled");
    abortOurs.abort("the host cancelled");
    const sdkOutcome = await sdkCall;
    expect(sdkOutcome.error).toMatchObject({ code: -32001 });
    expect(await ourCall).toEqual(sdkOutcome);
    expect(ours.seen.filter((m) => m.method === "notifications/cancelled").at(-1)?.params).toEqual({
      requestId: ours.seen.filter((m) => m.method === "tools/call").at(-1)?.id,
      reason: "the host cancelled",
    });
    // A signal aborted before the call: nothing is sent.
    const before = ours.seen.length;
    const early = new AbortController();
    early.abort(new Error("too late"));
    expect(await settled(ours.call("ok", { signal: early.signal }))).toEqual(
      await settled(sdk.call("ok", { signal: early.signal })),
    );
    expect(ours.seen.length).toBe(before);
    await Promise.all([sdk.client.close(), ours.client.close()]);
  });

  it("rejects the calls out with -32000 when the connection closes, then says Not connected", async () => {
    const sdk = await connected(false);
    const ours = await connected(true);
    const sdkCall = settled(sdk.call("hang"));
    const ourCall = settled(ours.call("hang"));
    await Promise.all([sdk.serverSide.close(), ours.serverSide.close()]);
    const expected = await sdkCall;
    expect(expected.error).toMatchObject({
      code: -32000,
      message: "MCP error -32000: Connection closed",
    });
    expect(await ourCall).toEqual(expected);
    expect(await settled(ours.call("ok"))).toEqual(await settled(sdk.call("ok")));
  });

  it("hands an answer to an id it did not send to the SDK (which reports it)", async () => {
    const ours = await connected(true);
    const errors: string[] = [];
    ours.client.onerror = (error) => errors.push(error.message);
    await ours.serverSide.send({ jsonrpc: "2.0", id: "governor-999", result: {} });
    expect(errors.join("\n")).toMatch(/unknown message ID/);
    await ours.client.close();
  });
});

describe("plainToolResult", () => {
  const text = fc.record({ type: fc.constant("text"), text: fc.string() });
  const block = fc.oneof(
    text,
    fc.record({ type: fc.constant("text"), text: fc.string(), extra: fc.jsonValue() }),
    fc.record({ type: fc.constant("image"), data: fc.string(), mimeType: fc.string() }),
    fc.record({ type: fc.string(), text: fc.jsonValue() }),
    fc.jsonValue(),
  );
  const result = fc.record(
    {
      content: fc.oneof({ arbitrary: fc.array(text), weight: 4 }, fc.array(block), fc.jsonValue()),
      isError: fc.oneof({ arbitrary: fc.boolean(), weight: 4 }, fc.jsonValue()),
      structuredContent: fc.oneof(
        { arbitrary: fc.dictionary(fc.string(), fc.jsonValue()), weight: 4 },
        fc.jsonValue(),
      ),
      _meta: fc.jsonValue(),
      other: fc.jsonValue(),
    },
    { requiredKeys: [] },
  );

  it("takes as read only results the SDK's schema accepts and would hand on equal", () => {
    let plain = 0;
    fc.assert(
      fc.property(result, (value) => {
        // As read off the wire: JSON, so `__proto__` keys are the object's own.
        const read = JSON.parse(JSON.stringify(value)) as unknown;
        if (!plainToolResult(read)) return;
        plain += 1;
        const parsed = CallToolResultSchema.safeParse(JSON.parse(JSON.stringify(value)));
        expect(parsed.success).toBe(true);
        expect(parsed.data).toEqual(read);
      }),
      { numRuns: 2000 },
    );
    expect(plain).toBeGreaterThan(80);
  });

  it("leaves to the schema what it would change or refuse", () => {
    for (const value of [
      { isError: true },
      { content: [{ type: "text", text: "a", annotations: { priority: 1 } }] },
      { content: [{ type: "text", text: 1 }] },
      { content: [], _meta: {} },
      { content: [], isError: "true" },
      { content: [], structuredContent: [] },
      JSON.parse('{"content":[],"structuredContent":{"__proto__":{"p":1}}}'),
      JSON.parse('{"content":[],"__proto__":{"p":1}}'),
      JSON.parse('{"content":[{"type":"text","text":"a","__proto__":{}}]}'),
      [],
      null,
    ]) {
      expect(plainToolResult(value), JSON.stringify(value)).toBe(false);
    }
    expect(plainToolResult({ content: [], vendor: { x: 1 } })).toBe(true);
  });
});
