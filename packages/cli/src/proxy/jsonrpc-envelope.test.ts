import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { HostStdioTransport } from "./host-stdio.ts";
import { checkHostMessage, toolCallParamsProblem } from "./jsonrpc-envelope.ts";

describe("checkHostMessage", () => {
  it("passes requests, notifications and responses as JSON-RPC 2.0 and MCP have them", () => {
    for (const message of [
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: "a", method: "tools/call", params: { name: "t" } },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 7, result: {} },
      { jsonrpc: "2.0", id: 7, error: { code: -1, message: "no" } },
    ]) {
      expect(checkHostMessage(message)).toEqual({ kind: "message", message });
    }
  });

  it("rejects what has no answer but an error, with the id when it has a usable one", () => {
    const cases: [unknown, number, unknown, RegExp][] = [
      [[{ jsonrpc: "2.0", id: 1, method: "ping" }], -32600, null, /batches are not supported/],
      [null, -32600, null, /a JSON object, got null/],
      [7, -32600, null, /a JSON object, got a number/],
      [{ id: 3, method: "ping" }, -32600, 3, /jsonrpc must be "2.0", got nothing/],
      [
        { jsonrpc: "2.0", id: null, method: "ping" },
        -32600,
        null,
        /id must be a string or an integer, got null/,
      ],
      [{ jsonrpc: "2.0", id: 1.5, method: "ping" }, -32600, null, /got a fraction/],
      [{ jsonrpc: "2.0", id: 4, method: 9 }, -32600, 4, /method must be a string/],
      [
        { jsonrpc: "2.0", id: 5, method: "x", params: [1] },
        -32602,
        5,
        /^Invalid params: params must be an object, got an array/,
      ],
    ];
    for (const [value, code, id, message] of cases) {
      const checked = checkHostMessage(value);
      expect(checked).toMatchObject({ kind: "reject", code, id });
      expect(checked.kind === "reject" && checked.message).toMatch(message);
    }
  });

  it("drops malformed notifications and responses (JSON-RPC answers neither)", () => {
    for (const value of [
      { jsonrpc: "2.0", method: "notifications/x", params: "p" },
      { jsonrpc: "2.0", id: 1 },
      { jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "m" } },
      { jsonrpc: "2.0", result: {} },
      { jsonrpc: "2.0", id: 1, error: "bad" },
    ]) {
      expect(checkHostMessage(value).kind).toBe("drop");
    }
  });

  it("names what is wrong with tools/call params, and only that", () => {
    expect(toolCallParamsProblem({ name: "t", arguments: { a: 1 } })).toBeUndefined();
    expect(toolCallParamsProblem({ name: "t" })).toBeUndefined();
    expect(toolCallParamsProblem(undefined)).toMatch(/^params must be an object, got nothing/);
    expect(toolCallParamsProblem({ name: 5 })).toMatch(/^name must be a string/);
    expect(toolCallParamsProblem({ name: "t", arguments: "x" })).toMatch(
      /^arguments must be an object/,
    );
    expect(toolCallParamsProblem({ name: "t", _meta: [] })).toMatch(/^_meta must be an object/);
    // A long or secret value is described, never quoted.
    expect(toolCallParamsProblem({ name: "sk-live-0123456789abcdefghij" })).toBeUndefined();
    expect(
      toolCallParamsProblem({ name: "t", arguments: "sk-live-0123456789abcdefghij" }),
    ).not.toContain("sk-live");
  });
});

describe("HostStdioTransport", () => {
  it("reads lines however the bytes are cut (CRLF, UTF-8 split), and answers bad ones", async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const problems: string[] = [];
    const transport = new HostStdioTransport(stdin, stdout, (m) => problems.push(m));
    const received: unknown[] = [];
    transport.onmessage = (m) => received.push(m);
    await transport.start();
    const text = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"日本"}}\r\n\n{oops\n`;
    const bytes = Buffer.from(text);
    for (let at = 0; at < bytes.length; at += 3) stdin.write(bytes.subarray(at, at + 3));
    await new Promise((resolve) => setImmediate(resolve));
    expect(received).toEqual([{ jsonrpc: "2.0", id: 1, method: "ping", params: { x: "日本" } }]);
    const answer = JSON.parse(String(stdout.read())) as { id: unknown; error: { code: number } };
    expect(answer).toMatchObject({ id: null, error: { code: -32700 } });
    expect(problems).toEqual([
      expect.stringMatching(/^parse error: a line from the host is not JSON/),
    ]);
    await transport.close();
  });

  it("answers a line longer than 10 Mi characters once, and reads the next line", async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const transport = new HostStdioTransport(stdin, stdout);
    const received: unknown[] = [];
    transport.onmessage = (m) => received.push(m);
    await transport.start();
    const chunk = "x".repeat(1024 * 1024);
    for (let i = 0; i < 12; i++) stdin.write(chunk);
    stdin.write(`tail of the long line\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n`);
    await new Promise((resolve) => setImmediate(resolve));
    const answers = String(stdout.read()).trim().split("\n");
    expect(answers.map((line) => JSON.parse(line))).toEqual([
      {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32700, message: "Parse error: a line is longer than 10485760 characters" },
      },
    ]);
    expect(received).toEqual([{ jsonrpc: "2.0", id: 2, method: "ping" }]);
    await transport.close();
  });

  it("settles a send at once when the pipe takes the line, at its drain when it is full, and rejects one it cannot write", async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough({ highWaterMark: 64 });
    const transport = new HostStdioTransport(stdin, stdout);
    await transport.start();
    let first = false;
    await transport.send({ jsonrpc: "2.0", id: 1, result: {} }).then(() => {
      first = true;
    });
    expect(first).toBe(true);
    // Over the high-water mark: settled only once the reader drains the pipe.
    let second = false;
    const full = transport
      .send({ jsonrpc: "2.0", id: 2, result: { text: "x".repeat(200) } })
      .then(() => {
        second = true;
      });
    await new Promise((resolve) => setImmediate(resolve));
    expect(second).toBe(false);
    stdout.resume();
    await full;
    expect(second).toBe(true);
    await expect(
      transport.send({ jsonrpc: "2.0", id: 3, result: { n: 1n } } as never),
    ).rejects.toThrow(/BigInt/);
    await transport.close();
  });
});
