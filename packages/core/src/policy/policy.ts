import { z } from "zod";
import { GovernorError } from "../errors.ts";
import { LEARNING_DEFAULTS, type LearningSettings } from "../judge/learned.ts";
import { ACTIONS, CERTAINTIES } from "../reasons.ts";
import { REASONS, type Reason } from "../types.ts";
import { patternProblem } from "./policy-pattern.ts";
import { SENSITIVE_PATH, SENSITIVE_PATH_MESSAGE } from "./sensitive.ts";

const reasonNames = Object.keys(REASONS) as [Reason, ...Reason[]];

const effect = z.enum(["read_only", "idempotent", "mutating"]);
const action = z.enum(ACTIONS);
const positiveInt = z.int().positive();
const nonNegativeInt = z.int().nonnegative();

/**
 * A rule's `match`: run by a linear-time engine (RE2), compiled here, once; refused with the
 * engine's reason when it uses what RE2 cannot run in linear time (lookahead, backreferences).
 */
const rulePattern = z
  .string()
  .min(1)
  .superRefine((source, ctx) => {
    const problem = patternProblem(source);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  });

/**
 * A settings object: unknown keys are refused, and the message names the accepted ones (zod's
 * own says only which keys it did not know, so a misspelt `maxAttempts` left the reader guessing).
 */
function settings<const Shape extends z.core.$ZodShape>(shape: Shape) {
  const accepted = Object.keys(shape).join(", ");
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === "unrecognized_keys") {
        return `Unrecognized key${issue.keys.length === 1 ? "" : "s"}: ${issue.keys.map((k) => JSON.stringify(k)).join(", ")} (accepted: ${accepted})`;
      }
      // zod's own says "expected object": a tool written as `"get_note": "read_only"` left the
      // reader to guess which object.
      return issue.code === "invalid_type"
        ? `Invalid input: expected an object (keys: ${accepted}), received ${kindOf(issue.input)}`
        : undefined;
    },
  });
}

/**
 * Names (of tools, globs or servers) to their settings. zod's own message for a list in its place
 * says "expected record", a word the policy's docs never use.
 */
function named<T extends z.core.$ZodType>(what: string, value: T) {
  return z.record(z.string().min(1), value, {
    error: (issue) =>
      issue.code === "invalid_type"
        ? `Invalid input: expected an object mapping ${what} to their settings, received ${kindOf(issue.input)}`
        : undefined,
  });
}

/** What a JSON value is, in the words of zod's messages. */
function kindOf(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "array" : typeof value;
}

/** A policy rule: a failure whose text matches `match` (or whose code is `code`) gets `action`. */
const ruleSchema = settings({
  match: rulePattern
    .optional()
    .describe(
      "Regular expression in RE2 syntax (linear time: no lookahead, no backreferences), tested case-insensitively on the first 4000 characters of the failure text.",
    ),
  code: z
    .union([z.int(), z.string().min(1)])
    .optional()
    .describe("JSON-RPC code, HTTP status or Node error code."),
  action,
  reason: z
    .enum(reasonNames)
    .optional()
    .describe("Reason reported in metrics; defaults from the action."),
  certainty: z
    .enum(CERTAINTIES)
    .optional()
    .describe(
      "What a match says of the call's effect: failed (refused before any effect, so a write may be retried), not_sent, or unknown. Defaults to what the failure shows; a tool's text alone shows unknown.",
    ),
  hint: z
    .string()
    .max(300)
    .optional()
    .describe("Extra guidance appended to the model-facing text."),
}).refine((r) => r.match !== undefined || r.code !== undefined, {
  message: "a rule needs `match` (a regular expression) or `code` (a number or string), or both",
});

// Nested settings carry no zod defaults: a tool that sets one field must not reset the others
// to their defaults over a less specific layer. Defaults apply once, at resolution.
const RETRY_DEFAULTS = { attempts: 3, baseDelayMs: 200, maxDelayMs: 10_000, maxHintMs: 30_000 };
const retrySchema = settings({
  attempts: positiveInt
    .max(20)
    .optional()
    .describe("Attempts per call, the first included (default 3)."),
  baseDelayMs: nonNegativeInt.optional().describe("Base of the exponential backoff (default 200)."),
  maxDelayMs: nonNegativeInt.optional().describe("Cap on one backoff delay (default 10000)."),
  maxHintMs: nonNegativeInt
    .optional()
    .describe("Longest server Retry-After hint honored (default 30000)."),
});

const idempotencySchema = settings({
  argument: z
    .string()
    .min(1)
    .optional()
    .describe("Tool argument that carries the key, e.g. idempotency_key."),
  honorsKeys: z
    .boolean()
    .optional()
    .describe("The server deduplicates calls by key (default false)."),
  verify: z
    .boolean()
    .optional()
    .describe("A verify step is registered for this tool in the governor options (default false)."),
  replay: z
    .boolean()
    .optional()
    .describe("Keep a success's result to replay for the same logical call (default true)."),
  inProgress: z
    .array(rulePattern)
    .optional()
    .describe(
      "Regular expressions (RE2 syntax, case-insensitive) for the server's own answer that a request with this key is still in progress: retried with the same key when the tool honours keys, else a stop (uncertain_mutation). Built-in phrasings and idempotency_key_in_use are always recognised.",
    ),
});

const BREAKER_DEFAULTS = { threshold: 5, cooldownMs: 30_000 };
const breakerSchema = settings({
  threshold: positiveInt
    .optional()
    .describe("Consecutive failures that open the breaker (default 5)."),
  cooldownMs: nonNegativeInt.optional().describe("How long it stays open (default 30000)."),
});

const LOOP_DEFAULTS = { maxIdentical: 3, exempt: false };
const loopSchema = settings({
  maxIdentical: positiveInt
    .optional()
    .describe("Identical calls (tool + arguments) with the same result (default 3)."),
  exempt: z.boolean().optional().describe("Never stop this tool for loops (default false)."),
});

/** Settings that can be given globally, per server, or per tool; the most specific wins. */
const toolSettingsShape = {
  effect: effect
    .optional()
    .describe("What the tool does; unset means mutating unless trusted annotations say otherwise."),
  access: z.enum(["allow", "deny", "confirm"]).optional(),
  rules: z.array(ruleSchema).optional(),
  alternatives: z
    .array(z.string().min(1))
    .optional()
    .describe("Tools that can serve the request instead."),
  retry: retrySchema.optional(),
  idempotency: idempotencySchema.optional(),
  breaker: breakerSchema.optional(),
  loop: loopSchema.optional(),
  maxRepeats: positiveInt
    .max(100)
    .optional()
    .describe("Same fingerprint this many times stops the run."),
  learn: z
    .boolean()
    .optional()
    .describe(
      "Learn from this tool's outcomes and apply learned demotions (default true while learning.enabled); false keeps its decisions as the rules give them.",
    ),
  sensitiveArgs: z
    .array(z.string().min(1).regex(SENSITIVE_PATH, SENSITIVE_PATH_MESSAGE))
    .optional()
    .describe(
      "Arguments whose values are redacted from model-facing text: a name (`token`) matches that key at any depth; a path (`auth.token`, `edits[].oldText`, `edits[0].oldText`) is read from the top. Every string and number a name reaches is redacted, inside objects and arrays too.",
    ),
};

const toolSettingsSchema = settings(toolSettingsShape);

const budgetsSchema = settings({
  calls: positiveInt.default(100),
  failures: positiveInt.default(30),
  retries: nonNegativeInt.default(20),
  corrections: nonNegativeInt.default(10),
  switches: nonNegativeInt.default(5),
  wallTimeMs: positiveInt.max(2_147_483_647).default(600_000),
});

const retryBudgetSchema = settings({
  ratio: z
    .number()
    .min(0)
    .max(1)
    .default(0.2)
    .describe("Retries at most this fraction of calls per server."),
  reserve: nonNegativeInt.default(10).describe("Retries always allowed on top of the ratio."),
  windowMs: positiveInt.default(10_000),
});

const redactionSchema = settings({
  maxLength: z.int().min(40).max(10_000).default(400),
  emails: z.boolean().default(false),
  patterns: z
    .array(rulePattern)
    .default([])
    .describe(
      "Extra redaction patterns in RE2 syntax (linear time: no lookahead, no backreferences), case-sensitive; every match becomes [redacted].",
    ),
});

const learningSchema = settings({
  enabled: z
    .boolean()
    .default(LEARNING_DEFAULTS.enabled)
    .describe(
      "Record what followed each decision (in the store) and demote decisions that never pay off.",
    ),
  minEvidence: z
    .number()
    .positive()
    .max(1_000)
    .default(LEARNING_DEFAULTS.minEvidence)
    .describe("Weighted outcomes of a decision needed before it may be demoted (default 4)."),
  maxPayoffRate: z
    .number()
    .min(0)
    .lt(0.5)
    .default(LEARNING_DEFAULTS.maxPayoffRate)
    .describe(
      "A decision that paid off at most this fraction of the time never pays off (default 0.1).",
    ),
  halfLifeMs: positiveInt
    .default(LEARNING_DEFAULTS.halfLifeMs)
    .describe("Half-life of learned counts in ms (default 86400000, a day)."),
  ttlMs: positiveInt
    .default(LEARNING_DEFAULTS.ttlMs)
    .describe("A learned record nobody adds to is forgotten after this many ms (default 7 days)."),
});

const serverSchema = settings({
  ...toolSettingsShape,
  trustAnnotations: z
    .boolean()
    .default(false)
    .describe("Let this server's tool annotations set effects."),
  invalidParamsAsArguments: z
    .boolean()
    .default(false)
    .describe("Treat JSON-RPC -32602 from this server as bad arguments the model can correct."),
  tools: named("tool names or globs", toolSettingsSchema).default({}),
});

/** The policy schema (docs/architecture.md §6). Parse with {@link loadPolicy}. */
export const policySchema = settings({
  version: z.literal(1).default(1),
  observeOnly: z
    .boolean()
    .default(false)
    .describe("Compute and report decisions without enforcing them."),
  defaults: toolSettingsSchema.default({}),
  budgets: budgetsSchema.default(budgetsSchema.parse({})),
  retryBudget: retryBudgetSchema.default(retryBudgetSchema.parse({})),
  redaction: redactionSchema.default(redactionSchema.parse({})),
  learning: learningSchema
    .default(learningSchema.parse({}))
    .describe("Learning from outcomes (docs/learning.md)."),
  servers: named("server names", serverSchema).default({}),
  tools: named("tool names or globs", toolSettingsSchema).default({}),
  $schema: z
    .string()
    .optional()
    .describe(
      "The JSON Schema this file follows, for editors (./node_modules/@governor/core/policy.schema.json); not read otherwise.",
    ),
});

/** A policy as written (every field optional). */
export type PolicyInput = z.input<typeof policySchema>;
/** A parsed policy, defaults filled in. */
export type Policy = z.output<typeof policySchema>;
/** One rule of a policy. */
export type PolicyRule = z.output<typeof ruleSchema>;
/** The per-run budgets. */
export type Budgets = z.output<typeof budgetsSchema>;
/** Settings of a tool, server or the defaults, as written. */
export type ToolSettings = z.output<typeof toolSettingsSchema>;

/** Describes every issue: its path, what was wrong and what is accepted. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.length > 0 ? issue.path.map(String).join(".") : "(root)";
      return `  - ${path}: ${issue.message}`;
    })
    .join("\n");
}

/**
 * Keys the parser cannot keep: an own `__proto__` (as `JSON.parse` makes it) is dropped by the
 * schema without a word, and a `__proto__:` in an object literal sets the prototype, so its
 * settings would silently not apply. Both are refused with their path, like any other bad field.
 */
function prototypeKeys(value: unknown, path: string[] = [], seen = new Set<object>()): string[] {
  if (typeof value !== "object" || value === null || seen.has(value)) return [];
  seen.add(value);
  const out: string[] = [];
  if (!Array.isArray(value)) {
    const proto = Object.getPrototypeOf(value) as object | null;
    if (proto !== null && proto !== Object.prototype && Object.keys(proto).length > 0) {
      out.push(
        `  - ${[...path, "__proto__"].join(".")}: sets the object's prototype, so these settings would be ignored; name the tool or server as a quoted key`,
      );
    }
    if (Object.hasOwn(value, "__proto__")) {
      out.push(
        `  - ${[...path, "__proto__"].join(".")}: "__proto__" is not accepted as a name (JavaScript reserves it for the prototype); use the tool's or server's own name`,
      );
    }
  }
  for (const [key, child] of Object.entries(value)) {
    out.push(...prototypeKeys(child, [...path, key], seen));
  }
  return out;
}

/**
 * Parses and validates a policy (an object, or JSON text). Refuses bad input with a
 * `GovernorError` (`invalid_policy`) that lists every bad field's path and what is accepted.
 * @example
 * const policy = loadPolicy({ tools: { "create_*": { effect: "mutating" } } });
 */
export function loadPolicy(input: unknown = {}): Policy {
  let value = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch (err) {
      throw new GovernorError(
        "invalid_policy",
        `Policy is not valid JSON: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }
  const reserved = prototypeKeys(value);
  const parsed = policySchema.safeParse(value);
  if (!parsed.success || reserved.length > 0) {
    const issues = [...reserved, ...(parsed.success ? [] : [describeIssues(parsed.error)])];
    const count = reserved.length + (parsed.success ? 0 : parsed.error.issues.length);
    throw new GovernorError(
      "invalid_policy",
      `Invalid policy (${count} issue${count === 1 ? "" : "s"}):\n${issues.join("\n")}`,
      { cause: parsed.success ? undefined : parsed.error },
    );
  }
  return parsed.data;
}

/** The JSON Schema of policy files, for editor completion. */
export function policyJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(policySchema, { io: "input", target: "draft-2020-12" }) as Record<
    string,
    unknown
  >;
}

/**
 * Tests a tool name against a pattern: exact, or a glob with `*` (any run) and `?` (one char).
 * No regular expression: the name may be one a model invented (any length), and a glob such as
 * `*a*a*a*b` turned into a regex backtracks polynomially on it. This two-pointer match takes at
 * most pattern × name steps and compiles nothing.
 */
export function globMatch(pattern: string, name: string): boolean {
  if (!pattern.includes("*") && !pattern.includes("?")) return pattern === name;
  let p = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    const c = pattern[p];
    if (c === "*") {
      star = p++;
      resume = n;
    } else if (c !== undefined && (c === "?" || c === name[n])) {
      p++;
      n++;
    } else if (star >= 0) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (pattern[p] === "*") p++;
  return p === pattern.length;
}

/** The entry named exactly `name`: own keys only (`constructor` is a tool name, not a method). */
function own<T>(entries: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(entries, name) ? entries[name] : undefined;
}

/** Entries whose key matches the name: exact first, then globs from the most specific (longest). */
function matching(entries: Record<string, ToolSettings>, name: string): ToolSettings[] {
  const exact = own(entries, name);
  const globs = Object.keys(entries)
    .filter((k) => k !== name && globMatch(k, name))
    .sort((a, b) => a.length - b.length);
  // Least specific first, so later ones override; exact last.
  const out = globs.map((k) => entries[k] as ToolSettings);
  if (exact) out.push(exact);
  return out;
}

/** The resolved settings of one tool on one server: everything decided, nothing optional that matters. */
export interface ToolPolicy {
  readonly tool: string;
  readonly server: string | undefined;
  /** Effect from the policy, or undefined when the policy does not say (annotations or `mutating` apply). */
  readonly effect: ToolSettings["effect"];
  readonly access: "allow" | "deny" | "confirm";
  /** Rules in order: tool's, then server's, then global. */
  readonly rules: readonly PolicyRule[];
  readonly alternatives: readonly string[];
  readonly retry: typeof RETRY_DEFAULTS;
  readonly idempotency: {
    argument?: string;
    honorsKeys: boolean;
    verify: boolean;
    replay: boolean;
    /** The server's own phrasings of "a request with this key is in progress" (patterns). */
    inProgress: readonly string[];
  };
  readonly breaker: typeof BREAKER_DEFAULTS;
  readonly loop: typeof LOOP_DEFAULTS;
  readonly maxRepeats: number;
  /** Learning from outcomes for this tool: the policy's `learning`, off where `learn` is false. */
  readonly learning: LearningSettings;
  readonly sensitiveArgs: readonly string[];
  readonly trustAnnotations: boolean;
  readonly invalidParamsAsArguments: boolean;
}

/**
 * Resolves the settings of a tool: global defaults, then global tool entries, then the server,
 * then the server's tool entries; the most specific wins. Rules are ordered the other way:
 * the tool's first, then the server's, then the global ones (docs/architecture.md §3).
 */
export function resolveToolPolicy(policy: Policy, tool: string, server?: string): ToolPolicy {
  const serverEntry = server === undefined ? undefined : own(policy.servers, server);
  const globalTool = matching(policy.tools, tool);
  const layers: ToolSettings[] = [policy.defaults, ...globalTool];
  let serverTool: ToolSettings[] = [];
  let serverScope: ToolSettings | undefined;
  if (serverEntry) {
    const { tools, trustAnnotations: _t, invalidParamsAsArguments: _i, ...settings } = serverEntry;
    serverScope = settings;
    serverTool = matching(tools, tool);
    layers.push(settings, ...serverTool);
  }
  const pick = <K extends keyof ToolSettings>(key: K): ToolSettings[K] => {
    let value: ToolSettings[K] = undefined as ToolSettings[K];
    for (const layer of layers) if (layer[key] !== undefined) value = layer[key];
    return value;
  };
  const merged = <K extends "retry" | "idempotency" | "breaker" | "loop">(key: K) => {
    const out: Record<string, unknown> = {};
    for (const layer of layers) {
      for (const [k, v] of Object.entries(layer[key] ?? {})) if (v !== undefined) out[k] = v;
    }
    return out as {
      [F in keyof NonNullable<ToolSettings[K]>]?: Exclude<
        NonNullable<ToolSettings[K]>[F],
        undefined
      >;
    };
  };

  // Rules: the tool's (server-scoped, then global; most specific first), the server's, global.
  const ruleLayers = [
    ...serverTool.reverse(),
    ...globalTool.reverse(),
    serverScope,
    policy.defaults,
  ];
  const rules = ruleLayers.flatMap((layer) => layer?.rules ?? []);

  const idem = merged("idempotency");
  const honorsKeys = idem.honorsKeys ?? false;
  return {
    tool,
    server,
    effect: pick("effect"),
    access: pick("access") ?? "allow",
    rules,
    alternatives: pick("alternatives") ?? [],
    retry: { ...RETRY_DEFAULTS, ...merged("retry") },
    idempotency: {
      ...(idem.argument !== undefined && { argument: idem.argument }),
      honorsKeys,
      verify: idem.verify ?? false,
      replay: idem.replay ?? true,
      inProgress: idem.inProgress ?? [],
    },
    breaker: { ...BREAKER_DEFAULTS, ...merged("breaker") },
    loop: { ...LOOP_DEFAULTS, ...merged("loop") },
    maxRepeats: pick("maxRepeats") ?? 3,
    learning: { ...policy.learning, enabled: policy.learning.enabled && (pick("learn") ?? true) },
    sensitiveArgs: layers.flatMap((l) => l.sensitiveArgs ?? []),
    trustAnnotations: serverEntry?.trustAnnotations ?? false,
    invalidParamsAsArguments: serverEntry?.invalidParamsAsArguments ?? false,
  };
}
