import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REASONS } from "@governor/core";
import { describe, expect, it } from "vitest";
import { governor, governorProcess } from "./cli.ts";

const lines = (objects: unknown[]) =>
  `${objects.map((o) => (typeof o === "string" ? o : JSON.stringify(o))).join("\n")}\n`;
const parse = (stdout: string) =>
  stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));

const contractInput = [
  { tool: "get_note", text: 'No note with id "drafts". Known ids: welcome, release-notes' },
  {
    tool: "search_repos",
    result: {
      content: [{ type: "text", text: "MCP error -32602: Tool search_repos not found" }],
      isError: true,
    },
  },
  { tool: "search_repos", text: "MCP error -32602: Tool search_repos not found" },
  { tool: "list", error: { code: -32601, message: "Method not found" } },
  { tool: "list", error: { code: -32602, message: "Unknown tool: list" } },
  { tool: "read", local: "timeout" },
  { tool: "write", local: "timeout", effect: "mutating" },
  { tool: "write", local: "connection_closed", effect: "idempotent" },
  { tool: "write", local: "connection_refused", effect: "mutating" },
  { tool: "read", local: "aborted" },
  { tool: "invoice", text: "504 Gateway Timeout", effect: "mutating" },
  { tool: "invoice", text: "504 Gateway Timeout" },
  {
    tool: "q",
    text: "Error at /home/app/src/db.js:4:2 with token sk-proj-abcdefghijklmnopqrstuvwx",
  },
];
const { stdout, status, stderr } = await governor(["classify"], lines(contractInput));
const out = parse(stdout);

describe("governor classify (docs/architecture.md §9 contract)", () => {
  it("prints one JSON line per input line, in order, and exits 0", () => {
    expect(stderr).toBe("");
    expect(status).toBe(0);
    expect(out).toHaveLength(contractInput.length);
    for (const o of out) {
      expect(Object.keys(o).sort()).toEqual(["action", "fingerprint", "message", "reason"]);
      expect(o.fingerprint).toMatch(/^[0-9a-f]{16}$/);
      expect(Object.keys(REASONS)).toContain(o.reason);
      expect(o.message === null).toBe(o.action === "host");
    }
  });

  it("routes each form as the contract says", () => {
    const pairs = out.slice(0, 12).map((o) => `${o.action}/${o.reason}`);
    expect(pairs).toEqual([
      "correct_arguments/not_found",
      "switch_tool/unknown_tool",
      "switch_tool/unknown_tool",
      "host/protocol_error",
      "switch_tool/unknown_tool",
      "retry_dependency/timeout",
      "stop/uncertain_mutation",
      "retry_dependency/connection_closed",
      "retry_dependency/connection_refused",
      "stop/aborted",
      "stop/uncertain_mutation",
      "retry_dependency/timeout",
    ]);
  });

  it("gives the text and result forms the same fingerprint", () => {
    expect(out[1].fingerprint).toBe(out[2].fingerprint);
  });

  it("gives retry_dependency the text the model would get once retries run out", () => {
    expect(out[5].message).toMatch(/^read: /);
    expect(out[5].message).toMatch(/3 attempts/);
  });

  it("redacts model-facing text", () => {
    expect(out[12].message).not.toMatch(/home|sk-proj|db\.js/);
  });

  it("marks a malformed line in its place and exits 1 at the end (a real process)", async () => {
    const r = await governorProcess(
      ["classify"],
      lines([
        { tool: "a", text: "x" },
        "{not json",
        { text: "no tool" },
        { tool: "b", local: "melted" },
        { tool: "c", text: "404 not found" },
      ]),
    );
    const o = parse(r.stdout);
    expect(r.status).toBe(1);
    expect(o).toHaveLength(5);
    expect(o[0].action).toBe("correct_arguments");
    expect(o[1].error).toMatch(/^line 2: not valid JSON/);
    expect(o[2].error).toMatch(/^line 3: /);
    expect(o[3].error).toMatch(/^line 4: /);
    expect(o[4].reason).toBe("not_found");
  });

  it("names what is wrong in a malformed line, and what is accepted", async () => {
    const r = await governor(
      ["classify"],
      lines([
        { tool: "a", local: "melted" },
        { tool: "a", text: "x", effect: "writes" },
        { tool: "a", error: { code: "E1", message: "x" } },
        { tool: "a", result: { content: "x", isError: true } },
        { tool: "a", text: "x", local: "timeout" },
        { tool: "a" },
        "[1]",
        { tool: "a", text: "x", extra: 1 },
      ]),
    );
    const o = parse(r.stdout).map((line) => line.error);
    expect(r.status).toBe(1);
    expect(o[0]).toMatch(
      /^line 1: local: .*"timeout"\|"connection_closed"\|"connection_refused"\|"aborted"/,
    );
    expect(o[1]).toMatch(/^line 2: effect: .*"read_only"\|"idempotent"\|"mutating"/);
    expect(o[2]).toMatch(/^line 3: error\.code: .*expected number/);
    expect(o[3]).toMatch(/^line 4: result\.content: .*expected array/);
    expect(o[4]).toMatch(/^line 5: "text" and "local" together: expected one of \{"tool","text"\}/);
    expect(o[5]).toMatch(/^line 6: no "text", "result", "error" or "local": expected one of/);
    expect(o[6]).toMatch(/^line 7: expected a JSON object, got an array: one of/);
    expect(o[7]).toMatch(/^line 8: \(line\): Unrecognized key: "extra"/);
  });

  it("issue 9 (what held): goes on after binary lines, a 30 MB line and broken JSON", async () => {
    // Bytes that are not UTF-8 (NULs, lone continuation bytes, 0xFF), none a line break.
    const binary = Buffer.from(
      Array.from({ length: 4_096 }, (_, i) => (i * 131 + 7) % 256).filter(
        (b) => b !== 0x0a && b !== 0x0d,
      ),
    );
    const huge = "x".repeat(30 * 1024 * 1024);
    const r = await governor(
      ["classify"],
      Buffer.concat([
        binary,
        Buffer.from(
          `\n${lines([
            { tool: "big", text: `503 Service Unavailable ${huge}` },
            `{"tool": "cut", "text": "${huge}`,
            '{"tool": "a", "text": ',
            { tool: "after", text: "404 not found" },
          ])}`,
        ),
      ]),
    );
    const o = parse(r.stdout);
    expect(r.status).toBe(1);
    expect(o).toHaveLength(5);
    expect(o[0].error).toMatch(/^line 1: /);
    expect(o[1]).toMatchObject({ action: "retry_dependency", reason: "unavailable" });
    expect(o[1].message.length).toBeLessThan(1_000);
    expect(o[2].error).toMatch(/^line 3: not valid JSON/);
    expect(o[2].error.length).toBeLessThan(1_000);
    expect(o[3].error).toMatch(/^line 4: not valid JSON/);
    expect(o[4]).toMatchObject({ action: "correct_arguments", reason: "not_found" });
  }, 120_000);

  it("uses the policy file: its rules and the tool's effect", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gov-"));
    const file = join(dir, "policy.json");
    writeFileSync(
      file,
      JSON.stringify({
        tools: {
          pay: { effect: "mutating" },
          q: { rules: [{ match: "frobnicat", action: "stop", reason: "business_rule" }] },
        },
      }),
    );
    const r = await governor(
      ["classify", "--policy", file],
      lines([
        { tool: "pay", local: "timeout" },
        { tool: "q", text: "frobnicator refused" },
      ]),
    );
    expect(parse(r.stdout).map((o) => o.reason)).toEqual(["uncertain_mutation", "business_rule"]);
  });

  it("issue 8.15: goes on past tool and server names that are Object.prototype members", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gov-"));
    const file = join(dir, "policy.json");
    writeFileSync(file, JSON.stringify({ servers: { files: { tools: { "*": {} } } } }));
    const names = ["constructor", "toString", "__proto__", "hasOwnProperty"];
    const input = names.flatMap((name) => [
      { tool: name, text: "Invalid date" },
      { tool: "x", server: name, text: "Invalid date" },
      { tool: name, server: "files", error: { code: -32601, message: `Unknown tool: ${name}` } },
    ]);
    const r = await governor(["classify", "--policy", file], lines(input));
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const out = parse(r.stdout);
    expect(out).toHaveLength(input.length);
    expect(out.map((o) => o.action)).toEqual(
      names.flatMap(() => ["correct_arguments", "correct_arguments", "switch_tool"]),
    );
  });

  it("issue 8.1: a partial success is a stop; a busy text from a mutating tool is not retried", async () => {
    const r = await governor(
      ["classify"],
      lines([
        {
          tool: "create_order",
          text: "Order ORD-1001 was created, but we could not connect to the mail service",
        },
        { tool: "create_order", text: "database is busy, try again later", effect: "mutating" },
        { tool: "create_order", text: "database is busy, try again later" },
        { tool: "x", error: { code: -32603, message: "tool registry not found" } },
        { tool: "x", error: { code: 0, message: "Request cancelled" } },
      ]),
    );
    expect(r.status).toBe(0);
    expect(parse(r.stdout).map((o) => `${o.action}/${o.reason}`)).toEqual([
      "stop/partial_success",
      "stop/uncertain_mutation",
      "retry_dependency/unavailable",
      "host/protocol_error",
      "host/protocol_error",
    ]);
  });

  it("refuses a bad policy file with the field's path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gov-"));
    const file = join(dir, "policy.json");
    writeFileSync(file, JSON.stringify({ tools: { pay: { effect: "maybe" } } }));
    const r = await governor(["classify", "--policy", file], "");
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("tools.pay.effect");
  });
});

const argsDir = mkdtempSync(join(tmpdir(), "gov-"));
const policyFile = join(argsDir, "policy.json");
writeFileSync(policyFile, JSON.stringify({ tools: { login: { sensitiveArgs: ["password"] } } }));
const enoent = "ENOENT: no such file or directory, open '/data/memory.json'";
const argsInput = [
  // Lines without args stay valid and are judged on the text alone.
  { tool: "remember", text: enoent },
  { tool: "remember", text: enoent, args: { fact: "likes tea" } },
  {
    tool: "query",
    // Read as a timeout on its own; the schema shows `region` is an argument of the call.
    text: "Upstream timed out; region should be eu or us",
    inputSchema: { type: "object", properties: { region: { type: "string" } } },
  },
  {
    tool: "login",
    text: "Invalid password 'hunter2-Secret!'",
    args: { password: "hunter2-Secret!" },
  },
  { tool: "q", text: "x", args: ["not", "an", "object"] },
  { tool: "q", text: "x", inputSchema: "object" },
  // A low-level server's thrown error, as JSON-RPC -32603, with and without the call's args.
  {
    tool: "get_note",
    error: { code: -32603, message: 'No note with id "drafts"' },
    args: { id: "drafts" },
  },
  { tool: "get_note", error: { code: -32603, message: 'No note with id "drafts"' } },
];
const plain = await governor(["classify", "--policy", policyFile], lines(argsInput));
const explained = await governor(
  ["classify", "--policy", policyFile, "--explain"],
  lines(argsInput),
);
const argsOut = parse(plain.stdout);
const withWhy = parse(explained.stdout);

describe("governor classify: args, inputSchema and --explain (issue 12.3, 12.7)", () => {
  it("weighs the text with the call: a path the model never gave is the server's", () => {
    expect(argsOut[0]).toMatchObject({ action: "correct_arguments", reason: "not_found" });
    expect(argsOut[1]).toMatchObject({ action: "stop", reason: "misconfigured" });
    expect(argsOut[2]).toMatchObject({ action: "correct_arguments", reason: "invalid_argument" });
    // Without --explain the output keeps the contract's four fields.
    expect(Object.keys(argsOut[1]).sort()).toEqual(["action", "fingerprint", "message", "reason"]);
  });

  it("a -32603 that names the call's argument is the model's; without args, the host's", () => {
    expect(argsOut[6]).toMatchObject({ action: "correct_arguments", reason: "not_found" });
    expect(argsOut[7]).toMatchObject({ action: "host", message: null });
  });

  it("redacts the values of sensitive arguments given in args", () => {
    expect(argsOut[3].message).not.toContain("hunter2-Secret!");
  });

  it("names a bad args or inputSchema and what is accepted", () => {
    expect(plain.status).toBe(1);
    expect(argsOut[4]).toEqual({ error: "line 5: args: expected an object, got an array" });
    expect(argsOut[5]).toEqual({ error: "line 6: inputSchema: expected an object, got a string" });
  });

  it("--explain adds which step decided and how sure it is", () => {
    expect(withWhy[0].explain).toMatchObject({ decidedBy: "rule", confidence: "medium" });
    expect(withWhy[0].explain.detail).toMatch(/^built-in rule #\d+ \(not_found\)/);
    expect(withWhy[1].explain).toMatchObject({ decidedBy: "evidence", confidence: "medium" });
    expect(withWhy[2].explain.detail).toContain('"region"');
    for (const [i, o] of withWhy.slice(0, 4).entries()) {
      const { explain, ...rest } = o;
      expect(rest).toEqual(argsOut[i]);
      expect(JSON.stringify(explain)).not.toContain("hunter2-Secret!");
    }
  });
});

describe("governor check", () => {
  it("prints the resolved policy, or each bad field's path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "gov-"));
    const good = join(dir, "good.json");
    const bad = join(dir, "bad.json");
    writeFileSync(good, JSON.stringify({ budgets: { calls: 7 } }));
    writeFileSync(
      bad,
      JSON.stringify({ budgets: { calls: -1 }, servers: { s: { trustAnnotations: "yes" } } }),
    );
    const ok = await governor(["check", good]);
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout).budgets.calls).toBe(7);
    const no = await governor(["check", bad]);
    expect(no.status).toBe(1);
    expect(no.stdout).toContain("budgets.calls");
    expect(no.stdout).toContain("servers.s.trustAnnotations");
  });
});
