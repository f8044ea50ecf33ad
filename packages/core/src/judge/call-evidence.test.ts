import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import { assessFailure } from "./assess.ts";
import { readCallEvidence } from "./call-evidence.ts";
import { classify } from "./classify.ts";
import { decide } from "./decide.ts";
import { explainClassification } from "./explain.ts";
import { type Failure, failureFromError, failureFromResult } from "./failure.ts";

const policy = loadPolicy({});
const tool = resolveToolPolicy(policy, "t");
const textFailure = (text: string): Failure =>
  failureFromResult({ content: [{ type: "text", text }], isError: true });
const schema = (...names: string[]) => ({
  type: "object",
  properties: Object.fromEntries(names.map((n) => [n, { type: "string" }])),
});

describe("readCallEvidence", () => {
  it("knows nothing without arguments or schema", () => {
    expect(readCallEvidence("ENOENT: open '/data/memory.json'", undefined)).toEqual({
      targets: "none",
    });
    expect(readCallEvidence("ENOENT: open '/data/memory.json'", {})).toEqual({ targets: "none" });
  });

  it("a path the arguments hold is the model's: equal, relative to a root, or under a root it named", () => {
    const text = (p: string) => `ENOENT: no such file or directory, open '${p}'`;
    for (const [path, args] of [
      ["/home/dev/proj/src/mian.ts", { path: "/home/dev/proj/src/mian.ts" }],
      ["/vault/notes/today.md", { path: "notes/today.md" }],
      ["/vault/notes/today.md", { path: "./notes/today.md" }],
      ["/etc/passwd", { path: "../../etc/passwd" }],
      ["/home/ana/notes/a.md", { path: "~/notes/a.md" }],
      ["/srv/repo/src/a.ts", { root: "/srv/repo", pattern: "*.ts" }],
      ["/srv/repo/a.ts", { files: [{ name: "a.ts" }] }],
    ] as const) {
      expect(readCallEvidence(text(path), { args }).targets, path).toBe("own");
    }
  });

  it("a path or connection host absent from the arguments is the server's own", () => {
    expect(
      readCallEvidence("ENOENT: no such file or directory, open '/data/memory.json'", {
        args: { entities: [{ name: "alice", observations: ["likes tea"] }] },
      }),
    ).toEqual({ targets: "foreign" });
    expect(
      readCallEvidence("getaddrinfo ENOTFOUND db.internal.example", { args: { sql: "select 1" } })
        .targets,
    ).toBe("foreign");
    expect(
      readCallEvidence("Error: connect ECONNREFUSED 10.0.0.5:5432", { args: { table: "users" } })
        .targets,
    ).toBe("foreign");
  });

  it("a URL host counts for the model when it chose it, never against it", () => {
    expect(
      readCallEvidence("Failed to fetch https://Foo.Example/a: 502 Bad Gateway", {
        args: { url: "https://foo.example/a" },
      }).targets,
    ).toBe("own");
    // A server's own API host is in every text it sends: not evidence of a server-side fault.
    expect(
      readCallEvidence("GET https://api.vendor.example/v2/items/7 returned 404", {
        args: { id: 7 },
      }).targets,
    ).toBe("none");
  });

  it("names the argument whose value the text echoes, or the schema property it names; never values", () => {
    const byValue = readCallEvidence("City 'Parris' not found", { args: { city: "Parris" } });
    expect(byValue.argument).toEqual({ name: "city", by: "value" });
    expect(JSON.stringify(byValue)).not.toContain("Parris");
    expect(
      readCallEvidence("Value for 'timeout' must be at most 60", {
        inputSchema: schema("timeout", "query"),
      }).argument,
    ).toEqual({ name: "timeout", by: "property" });
    // A property name inside another word, a short value or a common word is no evidence.
    expect(
      readCallEvidence("request_timeout_ms exceeded", { inputSchema: schema("timeout") }).argument,
    ).toBeUndefined();
    expect(
      readCallEvidence("id 42 is bad; null", { args: { n: 42, flag: "null" } }).argument,
    ).toBeUndefined();
  });

  it("names a property the server's prose names its own way, where it is named as an argument", () => {
    const inputSchema = schema("webhookSecret", "target_dir", "label", "request");
    for (const [text, name] of [
      ["webhook secret is required for signed deliveries", "webhookSecret"],
      ["The Target Dir must be absolute", "target_dir"],
      ["Label parameter must not be empty", "label"],
      ["Label is missing", "label"],
    ] as const) {
      expect(readCallEvidence(text, { inputSchema }).argument, text).toEqual({
        name,
        by: "property",
      });
    }
    // The same words as the text's own English name no argument: nothing says what is wrong
    // with them, or the word is one a sentence opens with.
    for (const text of [
      "Request was throttled; retry in 5 s",
      "A delivery already exists for this webhook secret",
      "Labels are stored per project",
      "target dirs are cleaned nightly",
    ]) {
      expect(readCallEvidence(text, { inputSchema }).argument, text).toBeUndefined();
    }
  });

  it("a call that breaks its own schema names the argument it breaks it by, where the text names none", () => {
    const inputSchema = {
      type: "object",
      properties: {
        sku: { type: "string" },
        count: { type: "integer" },
        price: { type: "number" },
        tier: { type: "string", enum: ["basic", "plus"] },
        tags: { type: ["array", "null"] },
        memo: { type: "string", nullable: true },
        file: { type: "file" },
        shape: { enum: [{ kind: "round" }, { kind: "square" }] },
        note: { anyOf: [{ type: "string" }, { type: "null" }], type: "string" },
      },
      required: ["sku"],
    };
    const text = "Request rejected by upstream";
    for (const [args, name] of [
      [{ count: 2 }, "sku"],
      [{ sku: "A-1", count: "two" }, "count"],
      [{ sku: "A-1", count: true }, "count"],
      [{ sku: "A-1", count: 2.5 }, "count"],
      [{ sku: "A-1", tier: "gold" }, "tier"],
      [{ sku: "A-1", tags: "x" }, "tags"],
    ] as const) {
      expect(readCallEvidence(text, { args, inputSchema }).argument, JSON.stringify(args)).toEqual({
        name,
        by: "schema",
      });
    }
    // A call that keeps its schema (an integer is a number, null where allowed, a property the
    // schema does not declare) shows nothing, nor does one the schema cannot plainly be read
    // against: a number sent as its digits (many servers take it), null where `nullable` allows
    // it, a type JSON Schema does not name, an enum of objects, a type widened by `anyOf`.
    for (const args of [
      { sku: "A-1", count: 2, price: 3, tier: "plus", tags: null },
      { sku: "A-1", extra: { deep: true } },
      { sku: "A-1", count: "2", price: " 3.5" },
      { sku: "A-1", memo: null, file: "report.pdf", shape: { kind: "round" }, note: null },
    ]) {
      expect(readCallEvidence(text, { args, inputSchema }).argument).toBeUndefined();
    }
    expect(
      readCallEvidence("price must be positive", { args: { count: 2 }, inputSchema }).argument,
    ).toEqual({ name: "price", by: "property" });
    // Without the arguments nothing is known to be missing; a required name no text could name
    // (not a plain identifier, or past 80 characters) is not read.
    expect(readCallEvidence(text, { inputSchema }).argument).toBeUndefined();
    for (const name of ["x".repeat(100_000), "two words"]) {
      const odd = { type: "object", properties: {}, required: [name] };
      expect(readCallEvidence(text, { args: {}, inputSchema: odd }).argument).toBeUndefined();
    }
  });

  it("a value only inside a URL of the text is the request's route, not the value refused", () => {
    const call = { args: { repo: "acme-web", branch: "release-9" }, inputSchema: schema("repo") };
    expect(
      readCallEvidence(
        "POST https://git.example.org/api/repos/acme-web/refs: 409 {message: Ref already taken}",
        call,
      ).argument,
    ).toBeUndefined();
    // The same value outside the URL, or a URL the model sent named whole, is the argument.
    expect(
      readCallEvidence("Ref release-9 already taken (https://git.example.org/api/repos/acme-web)", {
        ...call,
      }).argument,
    ).toEqual({ name: "branch", by: "value" });
    expect(
      readCallEvidence("Invalid URL: https://hooks.example.net/in/9f2c (no scheme allowed)", {
        args: { url: "https://hooks.example.net/in/9f2c" },
      }).argument,
    ).toEqual({ name: "url", by: "value" });
    expect(
      readCallEvidence("Webhook https://hooks.example.net/in/9f2c. rejected", {
        args: { url: "https://hooks.example.net/in/9f2c" },
      }).argument,
    ).toEqual({ name: "url", by: "value" });
    // A longer URL the value only opens is another URL, not the value named whole.
    expect(
      readCallEvidence("503 from https://hooks.example.net/in/9f2c0/retry", {
        args: { url: "https://hooks.example.net/in/9f2c" },
      }).argument,
    ).toBeUndefined();
    // On a write, a correction backed by nothing but the route stops (unbackedByCall).
    const write = resolveToolPolicy(
      loadPolicy({ tools: { create_ref: { effect: "mutating" } } }),
      "create_ref",
    );
    const c = classify(
      textFailure(
        "POST https://git.example.org/api/repos/acme-web/refs: 409 {message: Ref already taken}",
      ),
      write,
      call,
    );
    expect(c).toMatchObject({ action: "correct_arguments", unbackedByCall: true });
  });

  it("a text judged again (its hosts and paths remembered) is weighed against each call's own arguments", () => {
    const text =
      "ENOENT: open '/srv/data/a.json' after connect to db.internal failed (https://api.x.io/v1)";
    for (let round = 0; round < 3; round++) {
      expect(readCallEvidence(text, { args: { q: "x" } }).targets, `round ${round}`).toBe(
        "foreign",
      );
      expect(readCallEvidence(text, { args: { path: "/srv/data/a.json" } }).targets).toBe("own");
      expect(readCallEvidence(text, { args: { host: "db.internal" } }).targets).toBe("own");
      expect(readCallEvidence(text, { args: { url: "https://api.x.io/v2" } }).targets).toBe("own");
    }
    // A URL's host alone is never foreign, however often the text comes back.
    const urlOnly = "fetch https://api.x.io/v1 returned 500";
    for (let round = 0; round < 3; round++) {
      expect(readCallEvidence(urlOnly, { args: { q: "x" } }).targets).toBe("none");
      expect(readCallEvidence(urlOnly, { args: { u: "https://api.x.io" } }).targets).toBe("own");
    }
  });

  it("stays bounded on hostile input: deep and wide arguments, a long text", () => {
    let deep: unknown = "x";
    for (let i = 0; i < 10_000; i++) deep = { a: deep };
    const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, `v${i}`]));
    const text = `${"/a".repeat(50_000)} ${"https://h.example/".repeat(2_000)}`;
    const evidence = readCallEvidence(text, { args: { deep, ...wide }, inputSchema: deep });
    expect(evidence.targets).toBe("foreign");
  });
});

describe("classify with what the call knows (issue 12.3)", () => {
  it("ENOENT on a path the model never gave is the server's storage: stop, misconfigured", () => {
    // Texts of two servers: a memory server's JSON file, an Obsidian vault's config.
    for (const text of [
      "ENOENT: no such file or directory, open '/data/memory.json'",
      "ENOENT: no such file or directory, stat '/vault/.obsidian/config.json'",
    ]) {
      const c = classify(textFailure(text), tool, { args: { path: "notes/today.md" } });
      expect(c, text).toMatchObject({
        action: "stop",
        reason: "misconfigured",
        source: "evidence",
      });
    }
    // The same text without arguments, or on the model's own path: the model fixes the path.
    const text = "ENOENT: no such file or directory, open '/vault/notes/today.md'";
    expect(classify(textFailure(text), tool).action).toBe("correct_arguments");
    expect(classify(textFailure(text), tool, { args: { path: "notes/today.md" } })).toMatchObject({
      action: "correct_arguments",
      reason: "not_found",
      source: "rule",
    });
  });

  it("a database host the model never named is the server's configuration", () => {
    const c = classify(textFailure("getaddrinfo ENOTFOUND pg.internal.example"), tool, {
      args: { query: "select 1" },
    });
    expect(c).toMatchObject({ action: "stop", reason: "misconfigured" });
    const own = classify(textFailure("getaddrinfo ENOTFOUND pg.example"), tool, {
      args: { host: "pg.example" },
    });
    expect(own).toMatchObject({ action: "correct_arguments", reason: "not_found" });
  });

  it("a retry-like text that names an argument and what is wrong with it is the model's", () => {
    const call = { inputSchema: schema("timeout", "region") };
    // (`Value for 'timeout' must be at most 60` is read as an argument by the rules themselves, and
    // so are these now: "timed out" and "timeout" are generic words that yield to the phrasing of
    // the argument, rules.ts `weak`.)
    for (const text of [
      "Upstream timed out; region must be one of eu, us",
      "timeout: expected a number of seconds",
    ]) {
      expect(classify(textFailure(text), tool, call), text).toMatchObject({
        action: "correct_arguments",
        reason: "invalid_argument",
      });
    }
    // A retry no rule reads otherwise, whose text names an argument and what is wrong with it.
    for (const text of [
      "Service unavailable; region should be eu or us",
      "Upstream timed out; region should be eu or us",
    ]) {
      expect(classify(textFailure(text), tool, call), text).toMatchObject({
        action: "correct_arguments",
        reason: "invalid_argument",
        source: "evidence",
      });
    }
    // An argument cue that is only the model's own value (`must-have`) is no cue.
    expect(
      classify(textFailure("Service unavailable for tag 'must-have', region eu"), tool, {
        ...call,
        args: { tag: "must-have" },
      }).action,
    ).toBe("retry_dependency");
    // No argument cue: a timeout stays a timeout, even when an argument is named.
    expect(
      classify(textFailure("Request timed out after 30000 ms"), tool, {
        args: { timeout: 30000 },
      }).action,
    ).toBe("retry_dependency");
  });

  it("a transient failure that only echoes the request, or names its load as 'too many', stays a retry", () => {
    // The value the call sent is echoed in the request the text reports (a URL, the parameters),
    // and a cue stands elsewhere in the text: nothing says the value is wrong.
    for (const [text, args] of [
      [
        "list_runs: throttled: GET https://ci.example.org/v2/pipelines/4471/runs: 429 (expected to reset in 20 s)",
        { pipeline: "4471" },
      ],
      [
        "search failed for params {'label': 'nightly-build'}: 503 Service Unavailable; the index must be warmed",
        { label: "nightly-build" },
      ],
    ] as const) {
      expect(
        classify(textFailure(text), tool, {
          args,
          inputSchema: schema(...Object.keys(args)),
        }).action,
        text,
      ).toBe("retry_dependency");
    }
    // A property named beside the server's load is no complaint about the argument either.
    expect(
      classify(textFailure("report generation failed: too many connections to the store"), tool, {
        args: { report: "weekly" },
        inputSchema: schema("report"),
      }).action,
    ).toBe("retry_dependency");
    // A value the text names as too many is still the model's.
    expect(
      classify(textFailure("Service unavailable; tags has too many items (at most 10)"), tool, {
        inputSchema: schema("tags"),
      }).action,
    ).toBe("correct_arguments");
  });

  it("person-only cues win over an echoed argument", () => {
    const c = classify(
      textFailure("You need the admin permission to delete project acme-prod"),
      tool,
      { args: { project: "acme-prod" }, inputSchema: schema("project") },
    );
    expect(c).toMatchObject({ action: "stop", reason: "forbidden", source: "rule" });
  });

  it("a refused URL the model chose is retried, then handed back to the model, not the end of the run", () => {
    const failure = textFailure(
      "Failed to fetch https://intranet.example/report: connect ECONNREFUSED intranet.example:443",
    );
    const c = classify(failure, tool, { args: { url: "https://intranet.example/report" } });
    expect(c).toMatchObject({
      action: "retry_dependency",
      reason: "connection_refused",
      onRetriesExhausted: "correct_arguments",
    });
    const base = {
      classification: c,
      tool,
      effect: "read_only" as const,
      repeats: 1,
      keyed: false,
      remainingMs: 60_000,
      random: () => 0.5,
    };
    expect(decide({ ...base, attempt: 1 }).action).toBe("retry_dependency");
    expect(decide({ ...base, attempt: tool.retry.attempts })).toMatchObject({
      action: "correct_arguments",
      reason: "connection_refused",
    });
    // The repeat rule and the corrections budget still apply to the handed-back call.
    expect(
      decide({ ...base, attempt: tool.retry.attempts, repeats: tool.maxRepeats }),
    ).toMatchObject({ action: "stop", reason: "repeated_failure" });
    expect(
      decide({ ...base, attempt: tool.retry.attempts, exhausted: ["corrections"] }),
    ).toMatchObject({ action: "stop", reason: "budget_exhausted", budget: "corrections" });
    // Without the call's arguments, the run ends after retries as before.
    expect(decide({ ...base, classification: classify(failure, tool), attempt: 3 })).toMatchObject({
      action: "stop",
      reason: "retries_exhausted",
    });
  });

  it("an uncertain mutation is still never repeated, whatever the evidence", () => {
    const c = classify(
      textFailure("Failed to post to https://hooks.example/x: 503 Service Unavailable"),
      tool,
      {
        args: { url: "https://hooks.example/x" },
      },
    );
    const d = decide({
      classification: c,
      tool,
      effect: "mutating",
      attempt: 1,
      repeats: 1,
      keyed: false,
      remainingMs: 60_000,
      random: () => 0.5,
    });
    expect(d).toMatchObject({ action: "stop", reason: "uncertain_mutation" });
  });
});

describe("assessFailure with a call", () => {
  it("redacts the values of the tool's sensitive arguments from the message", () => {
    const p = loadPolicy({ tools: { login: { sensitiveArgs: ["password"] } } });
    const a = assessFailure(textFailure("Invalid password 'hunter2-Secret!' for user bob"), {
      policy: p,
      tool: resolveToolPolicy(p, "login"),
      effect: "read_only",
      call: { args: { user: "bob", password: "hunter2-Secret!" } },
    });
    expect(a.message).not.toContain("hunter2-Secret!");
    expect(a.decision.action).toBe("correct_arguments");
  });

  it("shows the model the text it gets once retries on its own target run out", () => {
    const a = assessFailure(textFailure("connect ECONNREFUSED 127.0.0.1:9999"), {
      policy,
      tool,
      effect: "read_only",
      call: { args: { url: "http://127.0.0.1:9999/" } },
    });
    expect(a.decision.action).toBe("retry_dependency");
    expect(a.message).toContain("point it at another address");
  });
});

describe("explainClassification", () => {
  const explain = (text: string, call?: Parameters<typeof classify>[2], p = tool) => {
    const f = textFailure(text);
    return explainClassification(f, p, classify(f, p, call), call);
  };

  it("names the step, what in it decided, and how sure it is", () => {
    expect(explain("NOPERM this user has no permissions")).toMatchObject({
      decidedBy: "rule",
      confidence: "medium",
    });
    expect(explain("NOPERM this user has no permissions").detail).toMatch(
      /^built-in rule #\d+ \(forbidden\): \/.*noperm/,
    );
    expect(explain("something odd happened")).toEqual({
      decidedBy: "default",
      detail:
        "no policy rule, signal or built-in rule matched, and the learned text model knows no word of the text: the default applies",
      confidence: "low",
    });
    const withRule = resolveToolPolicy(
      loadPolicy({ tools: { t: { rules: [{ match: "odd", action: "stop" }] } } }),
      "t",
    );
    expect(explain("something odd happened", undefined, withRule)).toMatchObject({
      decidedBy: "policy",
      detail: 'policy rule #0 of tool t (match "odd")',
      confidence: "high",
    });
    const evidence = explain("ENOENT: open '/data/memory.json'", { args: { q: "tea" } });
    expect(evidence).toMatchObject({ decidedBy: "evidence", confidence: "medium" });
    expect(evidence.detail).toContain("appears nowhere in the arguments");
  });

  it("names arguments, never their values", () => {
    const e = explain("Value 'sk-live-abcdef' for 'apiKeyRef' is invalid", {
      args: { apiKeyRef: "sk-live-abcdef" },
    });
    expect(JSON.stringify(e)).not.toContain("sk-live-abcdef");
  });
});

describe("a JSON-RPC -32603 that is the tool's own failure (low-level servers)", () => {
  const internal = (message: string) => failureFromError({ code: -32603, message });

  it("goes to the model when its text names the call's argument and reads as the model's to fix", () => {
    for (const [message, args, reason] of [
      ['No note with id "drafts"', { id: "drafts" }, "not_found"],
      ["Repository acme/widgets not found", { repo: "acme/widgets" }, "not_found"],
      ["Invalid date format: 2025-13-45", { since: "2025-13-45" }, "invalid_argument"],
    ] as const) {
      expect(classify(internal(message), tool, { args }), message).toMatchObject({
        action: "correct_arguments",
        reason,
        certainty: "unknown",
        source: "evidence",
      });
    }
  });

  it("reads the text with the call's own values masked: an echoed id is not a status", () => {
    expect(
      classify(internal('No note with id "unauthorized-export"'), tool, {
        args: { id: "unauthorized-export" },
      }),
    ).toMatchObject({ action: "correct_arguments", reason: "not_found", source: "evidence" });
  });

  it("stays the host's without the call, without an echoed argument, or when only a person can fix it", () => {
    const host = { action: "host", reason: "protocol_error", certainty: "unknown" };
    expect(classify(internal('No note with id "drafts"'), tool)).toMatchObject(host);
    expect(
      classify(internal("tool registry not found"), tool, { args: { id: "drafts" } }),
    ).toMatchObject(host);
    expect(
      classify(internal("Permission denied for note drafts"), tool, { args: { id: "drafts" } }),
    ).toMatchObject(host);
    // Other JSON-RPC codes are not a thrown tool error of a low-level server.
    expect(
      classify(failureFromError({ code: -32000, message: 'No note with id "drafts"' }), tool, {
        args: { id: "drafts" },
      }),
    ).toMatchObject({ action: "host" });
  });

  it("explains itself", () => {
    const f = internal('No note with id "drafts"');
    const call = { args: { id: "drafts" } };
    const e = explainClassification(f, tool, classify(f, tool, call), call);
    expect(e).toMatchObject({ decidedBy: "evidence", confidence: "medium" });
    expect(e.detail).toContain("JSON-RPC error code -32603");
    expect(e.detail).not.toContain("drafts");
  });
});
