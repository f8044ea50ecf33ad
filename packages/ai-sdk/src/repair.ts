import type { Failure, Run } from "@governor/core";
import type { ToolCallRepairFunction, ToolSet } from "ai";

/** Options of {@link governorRepairToolCall}. */
export interface GovernorRepairOptions {
  /** The server's name in the policy, as given to `governTools`. */
  readonly server?: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The AI SDK's error name (`AISDKError.name`, the same in ai 6 and 7). */
function errorName(error: unknown): string {
  return isRecord(error) && typeof error.name === "string" ? error.name : "";
}

/** Most schema issues one text names; enough for the fingerprint to tell problems apart. */
const MAX_ISSUES = 5;

/**
 * The schema library's issues (zod, Standard Schema: `{ path, message }`), found on the error or
 * its causes: what was wrong, by path, never the values the model sent.
 */
function issuesOf(error: unknown): string[] | undefined {
  for (let e: unknown = error, depth = 0; isRecord(e) && depth < 4; e = e.cause, depth++) {
    const issues = e.issues;
    if (!Array.isArray(issues)) continue;
    const out: string[] = [];
    for (const issue of issues.slice(0, MAX_ISSUES)) {
      if (!isRecord(issue) || typeof issue.message !== "string") continue;
      const path = Array.isArray(issue.path)
        ? issue.path.map((p) => (isRecord(p) ? String(p.key) : String(p))).join(".")
        : "";
      out.push(path === "" ? issue.message : `${path}: ${issue.message}`);
    }
    if (out.length > 0) return out;
  }
  return undefined;
}

/**
 * The failure Governor judges for a call the AI SDK rejected before `execute`: an input that
 * fails the tool's schema is an invalid argument (the draft tool-failure class), named by its
 * issues; an unknown tool name is what a server answers with JSON-RPC -32601 `Unknown tool`, which
 * Governor judges `switch_tool` / `unknown_tool`.
 */
function rejectedFailure(toolName: string, error: unknown): Failure {
  if (errorName(error) === "AI_NoSuchToolError") {
    return {
      channel: "protocol",
      origin: "peer",
      code: -32601,
      text: `Unknown tool: ${toolName}`,
      raw: error,
    };
  }
  const issues = issuesOf(error);
  const json = errorName(isRecord(error) ? error.cause : undefined) === "AI_JSONParseError";
  const what = issues
    ? issues.join("; ")
    : json
      ? "the input is not valid JSON"
      : "the input does not match the tool's input schema";
  return {
    channel: "tool",
    origin: "local",
    text: `Invalid arguments: ${what}`,
    toolFailure: { class: "invalid_argument", retryable: false },
    raw: error,
  };
}

/** Thrown by the stand-in executor; `toFailure` hands its failure to the run. */
class Rejected extends Error {
  constructor(readonly failure: Failure) {
    super(failure.text);
  }
}

function parseInput(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : { input: value };
  } catch {
    return { input: text };
  }
}

/**
 * A `repairToolCall` (ai 7; `experimental_repairToolCall` in ai 6) that counts each tool call the
 * AI SDK rejects before `execute` — input failing the tool's schema, an unknown tool name — as a
 * failed call of the run, so Governor's budgets (`calls`, `failures`, `corrections`, `switches`)
 * and its repeat rule see it. The call is not repaired (it resolves `null`): the AI SDK answers
 * the model with its own error text, which holds only the model's input and the schema's message.
 * When Governor decides to stop (the same schema problem `maxRepeats` times, a spent budget), the
 * run ends and {@link governorStopCondition} ends the loop after that step.
 * @example
 * await generateText({
 *   model,
 *   tools: governTools(tools, { run }),
 *   experimental_repairToolCall: governorRepairToolCall(run),
 *   stopWhen: [stepCountIs(10), governorStopCondition(run)],
 *   prompt,
 * });
 */
export function governorRepairToolCall<TOOLS extends ToolSet = ToolSet>(
  run: Run,
  options: GovernorRepairOptions = {},
): ToolCallRepairFunction<TOOLS> {
  const { server } = options;
  return async ({ toolCall, error }) => {
    const failure = rejectedFailure(toolCall.toolName, error);
    try {
      await run.call(
        {
          tool: toolCall.toolName,
          ...(server !== undefined && { server }),
          args: parseInput(toolCall.input),
          callId: toolCall.toolCallId,
          toFailure: (thrown) => (thrown instanceof Rejected ? thrown.failure : failure),
        },
        () => Promise.reject(new Rejected(failure)),
      );
    } catch {
      // A run that rejects (no onHostError hook, a failing store) ends the run; the loop's stop
      // condition sees it. Nothing here may break the AI SDK's loop.
    }
    return null;
  };
}
