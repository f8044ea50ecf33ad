import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GovernorError } from "../errors.ts";
import { globMatch, loadPolicy, policyJsonSchema, resolveToolPolicy } from "./policy.ts";

describe("loadPolicy", () => {
  it("fills defaults", () => {
    const p = loadPolicy({});
    expect(p.budgets).toEqual({
      calls: 100,
      failures: 30,
      retries: 20,
      corrections: 10,
      switches: 5,
      wallTimeMs: 600_000,
    });
    expect(p.retryBudget).toEqual({ ratio: 0.2, reserve: 10, windowMs: 10_000 });
    expect(p.observeOnly).toBe(false);
  });

  it("refuses bad input with every bad field's path and what is accepted", () => {
    let error: unknown;
    try {
      loadPolicy({
        tools: {
          create_note: {
            effect: "writes",
            rules: [{ action: "retry" }, { match: "(", action: "stop" }],
          },
        },
        budgets: { calls: 0 },
        extra: true,
      });
    } catch (err) {
      error = err;
    }
    expect(GovernorError.isInstance(error)).toBe(true);
    const message = (error as GovernorError).message;
    expect((error as GovernorError).code).toBe("invalid_policy");
    expect(message).toContain("tools.create_note.effect");
    expect(message).toMatch(/read_only.*idempotent.*mutating/);
    expect(message).toContain("tools.create_note.rules.0.action");
    expect(message).toContain(
      "tools.create_note.rules.1.match: must be a regular expression in RE2 syntax",
    );
    expect(message).toContain("budgets.calls");
    expect(message).toContain("extra");
    expect(message).toMatch(/\(\d+ issues\)/);
  });

  it("names the keys a settings object accepts when it meets one it does not know", () => {
    expect(() =>
      loadPolicy({ tools: { pay: { retry: { maxAttempts: 5, backoff: 1 } } }, budget: {} }),
    ).toThrow(
      [
        "Invalid policy (2 issues):",
        '  - tools.pay.retry: Unrecognized keys: "maxAttempts", "backoff" (accepted: attempts, baseDelayMs, maxDelayMs, maxHintMs)',
        '  - (root): Unrecognized key: "budget" (accepted: version, observeOnly, defaults, budgets, retryBudget, redaction, learning, servers, tools, $schema)',
      ].join("\n"),
    );
  });

  it("says which object a setting in the wrong shape takes, and names a map of tools as one", () => {
    expect(() =>
      loadPolicy({
        tools: { get_note: "read_only", pay: { retry: null } },
        servers: [{ name: "github" }],
        budgets: 50,
      }),
    ).toThrow(
      [
        "Invalid policy (4 issues):",
        "  - budgets: Invalid input: expected an object (keys: calls, failures, retries, corrections, switches, wallTimeMs), received number",
        "  - servers: Invalid input: expected an object mapping server names to their settings, received array",
        "  - tools.get_note: Invalid input: expected an object (keys: effect, access, rules, alternatives, retry, idempotency, breaker, loop, maxRepeats, learn, sensitiveArgs), received string",
        "  - tools.pay.retry: Invalid input: expected an object (keys: attempts, baseDelayMs, maxDelayMs, maxHintMs), received null",
      ].join("\n"),
    );
    expect(() => loadPolicy({ servers: { gh: { tools: ["get_*"] } } })).toThrow(
      "servers.gh.tools: Invalid input: expected an object mapping tool names or globs to their settings, received array",
    );
    expect(() => loadPolicy("[]")).toThrow(
      /\(root\): Invalid input: expected an object \(keys: version, /,
    );
  });

  it("accepts the $schema key an editor reads the policy's JSON Schema from, and only a string", () => {
    const file = JSON.stringify({
      $schema: "./node_modules/@governor/core/policy.schema.json",
      tools: { "get_*": { effect: "read_only" } },
    });
    expect(loadPolicy(file).tools["get_*"]?.effect).toBe("read_only");
    expect(() => loadPolicy({ $schema: 1 })).toThrow(
      "$schema: Invalid input: expected string, received number",
    );
    const schema = JSON.parse(
      readFileSync(new URL("../../policy.schema.json", import.meta.url), "utf8"),
    ) as { properties: Record<string, unknown>; additionalProperties?: unknown };
    expect(schema.properties).toHaveProperty("$schema");
  });

  it("refuses a rule with neither match nor code", () => {
    expect(() => loadPolicy({ defaults: { rules: [{ action: "stop" }] } })).toThrow(
      /needs `match`/,
    );
  });

  it("issue 8.9: refuses a sensitiveArgs entry that is not a name or a path, with its path", () => {
    expect(() =>
      loadPolicy({ tools: { edit_file: { sensitiveArgs: ["edits[].oldText", "a..b"] } } }),
    ).toThrow(/tools\.edit_file\.sensitiveArgs\.1: [\s\S]*`auth\.token` or `edits\[\]\.oldText`/);
    expect(
      loadPolicy({ tools: { edit_file: { sensitiveArgs: ["auth.token", "edits[0].oldText"] } } })
        .tools.edit_file?.sensitiveArgs,
    ).toEqual(["auth.token", "edits[0].oldText"]);
  });

  it("reads JSON text and reports bad JSON", () => {
    expect(loadPolicy('{"observeOnly": true}').observeOnly).toBe(true);
    expect(() => loadPolicy("{oops")).toThrow(/not valid JSON/);
  });
});

describe("resolveToolPolicy", () => {
  const policy = loadPolicy({
    defaults: { maxRepeats: 4, retry: { attempts: 2 } },
    tools: {
      "get_*": { effect: "read_only" },
      get_secret: { sensitiveArgs: ["token"], retry: { baseDelayMs: 5 } },
    },
    servers: {
      gh: { trustAnnotations: true, effect: "idempotent", tools: { "get_*": { maxRepeats: 2 } } },
    },
  });

  it("merges from the least to the most specific", () => {
    const t = resolveToolPolicy(policy, "get_secret");
    expect(t).toMatchObject({
      effect: "read_only",
      maxRepeats: 4,
      sensitiveArgs: ["token"],
      trustAnnotations: false,
    });
    expect(t.retry).toEqual({ attempts: 2, baseDelayMs: 5, maxDelayMs: 10_000, maxHintMs: 30_000 });
    const onServer = resolveToolPolicy(policy, "get_secret", "gh");
    expect(onServer).toMatchObject({ effect: "idempotent", maxRepeats: 2, trustAnnotations: true });
    expect(resolveToolPolicy(policy, "put_x").effect).toBeUndefined();
  });

  it("keeps results of keyed calls for replay by default", () => {
    const p = loadPolicy({ tools: { pay: { idempotency: { honorsKeys: true } } } });
    expect(resolveToolPolicy(p, "pay").idempotency).toEqual({
      honorsKeys: true,
      verify: false,
      replay: true,
      inProgress: [],
    });
    expect(resolveToolPolicy(p, "other").idempotency.replay).toBe(true);
  });
});

describe("globMatch", () => {
  it("matches exact names and globs, escaping regex characters", () => {
    expect(globMatch("get_*", "get_note")).toBe(true);
    expect(globMatch("get_?", "get_ab")).toBe(false);
    expect(globMatch("a.b", "axb")).toBe(false);
    expect(globMatch("*", "anything")).toBe(true);
  });
});

describe("the JSON Schema", () => {
  it("is generated from the zod schema and committed for editors", () => {
    const committed = JSON.parse(
      readFileSync(new URL("../../policy.schema.json", import.meta.url), "utf8"),
    );
    expect(committed).toEqual(policyJsonSchema());
  });
});

describe("issue 8.15: names that are Object.prototype members", () => {
  const names = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf"];

  it("resolve like any other name, from own entries only", () => {
    const policy = loadPolicy({
      tools: { "get_*": { effect: "read_only" }, toString: { effect: "idempotent" } },
      servers: { files: { tools: { constructor: { effect: "read_only" } } } },
    });
    for (const name of names) {
      for (const server of [undefined, ...names]) {
        const resolved = resolveToolPolicy(policy, name, server);
        expect(resolved.tool).toBe(name);
        expect(resolved.rules).toEqual([]);
        expect(resolved.retry.attempts).toBe(3);
      }
    }
    expect(resolveToolPolicy(policy, "toString").effect).toBe("idempotent");
    expect(resolveToolPolicy(policy, "constructor", "files").effect).toBe("read_only");
    expect(resolveToolPolicy(policy, "constructor").effect).toBeUndefined();
    expect(resolveToolPolicy(policy, "valueOf", "files").effect).toBeUndefined();
  });
});

describe("issue 9.8: __proto__ entries are refused with their path", () => {
  it("in JSON text, under tools, servers and a server's tools", () => {
    for (const [json, path] of [
      ['{"tools": {"__proto__": {"effect": "read_only"}}}', "tools.__proto__"],
      ['{"servers": {"__proto__": {"trustAnnotations": true}}}', "servers.__proto__"],
      [
        '{"servers": {"s": {"tools": {"__proto__": {"effect": "read_only"}}}}}',
        "servers.s.tools.__proto__",
      ],
    ] as const) {
      expect(() => loadPolicy(json), json).toThrow(
        new RegExp(`${path.replace(/\./g, "\\.")}: "__proto__" is not accepted as a name`),
      );
    }
  });

  it("in an object, as an own key or as a prototype set by a literal", () => {
    const own = JSON.parse('{"__proto__": {"effect": "read_only"}}');
    expect(() => loadPolicy({ tools: own })).toThrow(/tools\.__proto__/);
    const literal = { tools: { __proto__: { effect: "read_only" } } };
    expect(() => loadPolicy(literal)).toThrow(/tools\.__proto__: sets the object's prototype/);
    // Together with the schema's own issues, all counted.
    expect(() => loadPolicy({ tools: own, budgets: { calls: 0 } })).toThrow(
      /\(2 issues\)[\s\S]*budgets\.calls/,
    );
    // A null-prototype object is a plain record.
    const bare = Object.assign(Object.create(null), { t: { effect: "read_only" } });
    expect(loadPolicy({ tools: bare }).tools.t?.effect).toBe("read_only");
  });
});

describe("globMatch without regular expressions", () => {
  it("matches * and ? and nothing else specially", () => {
    expect(globMatch("get_*_v?", "get_note_v2")).toBe(true);
    expect(globMatch("get_*_v?", "get_note_v")).toBe(false);
    expect(globMatch("*a*b", "xaxxb")).toBe(true);
    expect(globMatch("*a*b", "xaxxbx")).toBe(false);
    expect(globMatch("a**", "a")).toBe(true);
    expect(globMatch("(x)+*", "(x)+y")).toBe(true);
    expect(globMatch("?", "")).toBe(false);
  });

  it("issue 8.12 (sibling): answers at once on a long invented name", () => {
    // As a regex, ^.*a.*a.*a.*b$ took 5 s on 300 letters, and grows with their cube.
    const started = performance.now();
    expect(globMatch("*a*a*a*b", "a".repeat(300))).toBe(false);
    expect(performance.now() - started).toBeLessThan(200);
    expect(globMatch("*a*a*a*a*a*a*b", "a".repeat(20_000))).toBe(false);
    expect(globMatch("*a*a*a*a*a*a*b", `${"a".repeat(20_000)}b`)).toBe(true);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
