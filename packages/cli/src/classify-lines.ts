import {
  type Failure,
  failureFromError,
  failureFromResult,
  type LearnedOverride,
  localFailure,
  type OutcomeField,
  type Policy,
} from "@governor/core";
import {
  type Assessment,
  assessFailure,
  type Explanation,
  explainClassification,
  resolveToolPolicy,
} from "@governor/core/judge";
import { z } from "zod";

const effect = z.enum(["read_only", "idempotent", "mutating"]);
const common = {
  tool: z.string().min(1),
  server: z.string().min(1).optional(),
  effect: effect.optional(),
  /** The call's arguments (an object). */
  args: z.record(z.string(), z.unknown()).optional(),
  /** The tool's input JSON Schema (an object, as MCP's `inputSchema`). */
  inputSchema: z.record(z.string(), z.unknown()).optional(),
};
/** The four forms of a line, each known by its one form field. */
const forms = {
  text: z.strictObject({ ...common, text: z.string() }),
  result: z.strictObject({
    ...common,
    result: z.looseObject({
      content: z.array(z.looseObject({ type: z.string() })),
      isError: z.literal(true),
    }),
  }),
  error: z.strictObject({
    ...common,
    error: z.looseObject({ code: z.int(), message: z.string(), data: z.unknown().optional() }),
  }),
  local: z.strictObject({
    ...common,
    local: z.enum(["timeout", "connection_closed", "connection_refused", "aborted"]),
  }),
};
const FORM_FIELDS = Object.keys(forms) as (keyof typeof forms)[];

type Line = z.infer<(typeof forms)[keyof typeof forms]>;

/** One output line of `governor classify` (docs/architecture.md §9). */
export type ClassifyOutput =
  | (Pick<Assessment, "fingerprint" | "message"> & {
      action: string;
      reason: string;
      /**
       * With `--explain`: which step decided and how sure it is, and the learned override that
       * replaced its decision (with `--learned`).
       */
      explain?: Explanation & { learned?: LearnedOverride };
    })
  | { error: string };

/** Options of {@link classifyLine}. */
export interface ClassifyLineOptions {
  /** Add `explain` to each output line. */
  readonly explain?: boolean;
  /**
   * What runs learned (`governor classify --learned`): a learned demotion then decides, and
   * `explain.learned` shows it.
   */
  readonly learned?: (
    server: string | undefined,
    tool: string,
    fingerprint: string,
  ) => Readonly<Record<OutcomeField, number>> | undefined;
}

const FORMS =
  'one of {"tool","text"}, {"tool","result"} (a CallToolResult with isError: true), {"tool","error":{"code","message","data"?}} or {"tool","local":"timeout"|"connection_closed"|"connection_refused"|"aborted"}, with optional "server", "effect" ("read_only"|"idempotent"|"mutating"), "args" (an object) and "inputSchema" (an object)';

function toFailure(line: Line): Failure {
  if ("text" in line)
    return failureFromResult({ content: [{ type: "text", text: line.text }], isError: true });
  if ("result" in line) return failureFromResult(line.result);
  // An `error` line is a JSON-RPC error from the server, whatever its code (Python sends 0, 408).
  if ("error" in line) return failureFromError(line.error, { origin: "peer", jsonRpc: true });
  return localFailure(line.local);
}

function kindOf(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
}

function describe(error: z.ZodError): string {
  return error.issues
    .map((i) => `${i.path.length > 0 ? i.path.join(".") : "(line)"}: ${i.message}`)
    .join("; ");
}

/**
 * Reads a parsed line as the form its form field names, so a bad field is named with what it
 * accepts (the union alone would only say "expected one of …"); a line with no form field or
 * several gets the list of forms.
 */
function readLine(value: unknown): { line: Line } | { error: string } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { error: `expected a JSON object, got ${kindOf(value)}: ${FORMS}` };
  }
  const present = FORM_FIELDS.filter((field) => field in value);
  if (present.length !== 1) {
    const got =
      present.length === 0
        ? 'no "text", "result", "error" or "local"'
        : `${present.map((f) => `"${f}"`).join(" and ")} together`;
    return { error: `${got}: expected ${FORMS}` };
  }
  const parsed = forms[present[0] as keyof typeof forms].safeParse(value);
  return parsed.success ? { line: parsed.data } : { error: describe(parsed.error) };
}

/**
 * Judges one input line as the first failure of a fresh run. Never throws for bad input:
 * a malformed line becomes `{ error: "line N: ..." }`.
 */
export function classifyLine(
  raw: string,
  lineNumber: number,
  policy: Policy,
  options: ClassifyLineOptions = {},
): ClassifyOutput {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    return { error: `line ${lineNumber}: not valid JSON (${(err as Error).message})` };
  }
  // Said in plain words, before the form is read (zod would say "expected record").
  for (const field of ["args", "inputSchema"] as const) {
    const given = (value as Record<string, unknown> | null)?.[field];
    if (
      given !== undefined &&
      (typeof given !== "object" || given === null || Array.isArray(given))
    ) {
      return { error: `line ${lineNumber}: ${field}: expected an object, got ${kindOf(given)}` };
    }
  }
  const read = readLine(value);
  if ("error" in read) return { error: `line ${lineNumber}: ${read.error}` };
  const { line } = read;
  const tool = resolveToolPolicy(policy, line.tool, line.server);
  // Judged on the failure alone when nobody says what the tool does (docs/architecture.md §9).
  const judged = line.effect ?? tool.effect ?? "read_only";
  const call =
    line.args === undefined && line.inputSchema === undefined
      ? undefined
      : {
          ...(line.args !== undefined && { args: line.args }),
          ...(line.inputSchema !== undefined && { inputSchema: line.inputSchema }),
        };
  const failure = toFailure(line);
  const a = assessFailure(failure, {
    policy,
    tool,
    effect: judged,
    ...(call !== undefined && { call }),
    ...(options.learned !== undefined && {
      learned: (print: string) => options.learned?.(line.server, line.tool, print),
    }),
  });
  const override =
    a.decision.action === "stop" || a.decision.action === "switch_tool"
      ? a.decision.learned
      : undefined;
  return {
    action: a.decision.action,
    reason: a.decision.reason,
    fingerprint: a.fingerprint,
    message: a.message,
    ...(options.explain === true && {
      explain: {
        ...explainClassification(failure, tool, a.classification, call),
        ...(override !== undefined && { learned: override }),
      },
    }),
  };
}
