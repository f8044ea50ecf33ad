/**
 * `governor proxy` speaks JSON-RPC 2.0 as MCP asks, over its real stdio, to a host that sends what
 * it should not: a line that is not JSON, a batch, `id: null`, a message that is not an object,
 * tool calls with bad params. Each gets its JSON-RPC error (and a line on stderr), never silence
 * or an internal error with a validation dump. And once the real server has exited, requests other
 * than tool calls reconnect as tool calls do, and `ping` does not answer for a dead server.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stdioServerParams } from "@governor/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RawMessage, type RawProxy, startHttpProxy, startRawProxy } from "./proxy-support.ts";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "governor-proxy-hygiene-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The proxy as a child process, driven line by line as a host would (or should not). */
const startRawHost = (server = faultServer()) => startRawProxy([], server);

function faultServer() {
  const params = stdioServerParams({ effectsFile: join(dir, `effects-${Math.random()}.jsonl`) });
  return { command: params.command, args: params.args ?? [] };
}

const nullIdError = (code: number) => (m: RawMessage) => m.id === null && m.error?.code === code;

describe("governor proxy: JSON-RPC hygiene over stdio", { timeout: 120_000 }, () => {
  it("answers a line that is not JSON with -32700 and id null, and says so on stderr", async () => {
    const host = await startRawHost();
    try {
      host.sendLine('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"');
      const error = await host.take(nullIdError(-32700), "a parse error");
      expect(error).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32700, message: expect.stringMatching(/^Parse error: /) },
      });
      // stderr is another pipe than stdout: its line may come after the reply.
      await expect
        .poll(host.stderr, { timeout: 10_000 })
        .toMatch(/governor proxy: parse error: a line from the host is not JSON/);
      // The connection goes on.
      host.sendLine(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }));
      expect(await host.answer(2)).toHaveProperty("result.tools");
    } finally {
      await host.close();
    }
  });

  it("answers a batch, id null and a message that is not an object with -32600", async () => {
    const host = await startRawHost();
    try {
      const cases: [string, RegExp][] = [
        [
          JSON.stringify([{ jsonrpc: "2.0", id: 3, method: "ping" }]),
          /batch.*not supported.*one message per line/i,
        ],
        [JSON.stringify({ jsonrpc: "2.0", id: null, method: "ping" }), /id.*string or an integer/],
        [JSON.stringify("ping"), /must be a JSON object/],
        ["42", /must be a JSON object/],
        [JSON.stringify({ jsonrpc: "1.0", id: 4, method: "ping" }), /jsonrpc.*"2\.0"/],
      ];
      for (const [line, message] of cases) {
        host.sendLine(line);
        const error = await host.take((m) => m.error?.code === -32600, `-32600 for ${line}`);
        expect(error.error?.message).toMatch(message);
        expect(error.id === null || error.id === 4).toBe(true);
      }
      await expect
        .poll(() => host.stderr().match(/governor proxy: invalid request/g), { timeout: 10_000 })
        .toHaveLength(cases.length);
      host.sendLine(JSON.stringify({ jsonrpc: "2.0", id: 5, method: "ping" }));
      expect(await host.answer(5)).toEqual({ jsonrpc: "2.0", id: 5, result: {} });
    } finally {
      await host.close();
    }
  });

  it("answers tools/call with bad params with -32602 and a short message", async () => {
    const host = await startRawHost();
    try {
      const cases: [unknown, RegExp][] = [
        [
          { name: "search_notes", arguments: ["q"] },
          /^Invalid params: arguments must be an object/,
        ],
        [{ name: 5, arguments: {} }, /^Invalid params: name must be a string/],
        [{ arguments: {} }, /^Invalid params: name must be a string/],
        [["search_notes"], /^Invalid params: params must be an object/],
      ];
      let id = 10;
      for (const [params, message] of cases) {
        id += 1;
        host.sendLine(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params }));
        const reply = await host.answer(id);
        expect(reply.error?.code).toBe(-32602);
        expect(reply.error?.message).toMatch(message);
        // Short: one sentence, no validation dump.
        expect(reply.error?.message.length).toBeLessThan(160);
        expect(reply.error?.message).not.toMatch(/\n|expected|received|"path"/);
      }
      await expect
        .poll(() => host.stderr().match(/governor proxy: invalid params/g), { timeout: 10_000 })
        .toHaveLength(cases.length);
    } finally {
      await host.close();
    }
  });
});

describe("governor proxy: JSON-RPC hygiene over Streamable HTTP", { timeout: 120_000 }, () => {
  it("answers tools/call with bad params with -32602 and a short message", async () => {
    const proxy = await startHttpProxy([], faultServer());
    try {
      const post = async (body: unknown, session?: string) => {
        const response = await fetch(proxy.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...(session !== undefined && { "mcp-session-id": session }),
          },
          body: JSON.stringify(body),
        });
        const text = await response.text();
        const data = /^data: (.*)$/m.exec(text)?.[1] ?? text;
        return { session: response.headers.get("mcp-session-id") ?? undefined, data };
      };
      const init = await post({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "raw-host", version: "1.0.0" },
        },
      });
      await post({ jsonrpc: "2.0", method: "notifications/initialized" }, init.session);
      const bad = await post(
        {
          jsonrpc: "2.0",
          id: 2,
          method: "tools/call",
          params: { name: "search_notes", arguments: ["q"] },
        },
        init.session,
      );
      expect(JSON.parse(bad.data)).toEqual({
        jsonrpc: "2.0",
        id: 2,
        error: {
          code: -32602,
          message:
            "Invalid params: arguments must be an object of the tool's arguments, got an array",
        },
      });
    } finally {
      await proxy.stop();
    }
  });
});

/** Makes the fault server exit (its `exit_now` tool), and waits for the proxy's answer. */
async function exitServer(host: RawProxy): Promise<void> {
  host.send({
    jsonrpc: "2.0",
    id: "exit",
    method: "tools/call",
    params: { name: "exit_now", arguments: {} },
  });
  await host.answer("exit");
}

describe("governor proxy: after the server exits", { timeout: 120_000 }, () => {
  it("reconnects for resources, prompts and ping as for tool calls", async () => {
    const host = await startRawHost();
    try {
      await exitServer(host);
      // The fault server has no resources or prompts: its own -32601 says the request reached it
      // (a proxy that did not reconnect answers "Not connected").
      for (const method of ["resources/list", "prompts/list"]) {
        host.sendLine(JSON.stringify({ jsonrpc: "2.0", id: method, method, params: {} }));
        const reply = await host.answer(method);
        expect(reply.error, JSON.stringify(reply)).toMatchObject({ code: -32601 });
      }
      host.sendLine(JSON.stringify({ jsonrpc: "2.0", id: "ping", method: "ping" }));
      expect(await host.answer("ping")).toEqual({ jsonrpc: "2.0", id: "ping", result: {} });
    } finally {
      await host.close();
    }
  });

  it("answers ping and resources/list with an error while the server cannot be started again", async () => {
    // A server that starts once: every later start fails at once.
    const flag = join(dir, `started-${Math.random()}`);
    const real = faultServer();
    const script = `const fs=require("node:fs");if(fs.existsSync(${JSON.stringify(flag)}))process.exit(3);fs.writeFileSync(${JSON.stringify(flag)},"");const c=require("node:child_process").spawn(process.argv[1],process.argv.slice(2),{stdio:"inherit"});c.on("exit",(code)=>process.exit(code??1));`;
    const host = await startRawHost({
      command: process.execPath,
      args: ["-e", script, real.command, ...real.args],
    });
    try {
      await exitServer(host);
      host.sendLine(JSON.stringify({ jsonrpc: "2.0", id: "ping", method: "ping" }));
      const ping = await host.answer("ping");
      expect(ping.error, JSON.stringify(ping)).toMatchObject({
        code: -32603,
        message: expect.stringMatching(/governor proxy: the server is not reachable/),
      });
      host.sendLine(JSON.stringify({ jsonrpc: "2.0", id: "res", method: "resources/list" }));
      const resources = await host.answer("res");
      expect(resources.error?.message).toMatch(/governor proxy: the server is not reachable/);
    } finally {
      await host.close();
    }
  });
});
