/**
 * A scripted agent: a deterministic stand-in for a model that works through tasks against the
 * fault server. Each task starts with one intended tool call; after every result the "model"
 * reacts by fixed rules ({@link react}) and the task ends at the first usable result, when the
 * runtime stops it, or at the turn limit. The runtime in between (how a call is carried out and
 * what the model gets back) is what the demo compares: see `AgentRuntime`.
 */

/** One tool call the model asks for. */
export interface ToolRequest {
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** What the model reads back after a call: the text of the tool result, or of an error. */
export interface Observation {
  readonly isError: boolean;
  readonly text: string;
}

/** What a runtime did with one call of the model. */
export type TurnResult =
  | { readonly kind: "result"; readonly observation: Observation }
  /** The runtime ended the task (Governor's `stop`); the model still reads `observation`. */
  | { readonly kind: "stop"; readonly reason: string; readonly observation: Observation };

/** One task of the scripted agent. */
export interface AgentTask {
  /** Short kebab-case id, e.g. `unknown-note-id`. */
  readonly id: string;
  /** What the task exercises, in a few words. */
  readonly title: string;
  /** The first call the model makes. */
  readonly first: ToolRequest;
  /** Arguments the model gives a tool it switches to (default: the current arguments). */
  readonly switchArgs?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** Carries out the calls of one task. */
export interface TaskSession {
  call(request: ToolRequest): Promise<TurnResult>;
}

/** How model calls reach the server: the thing the demo swaps (naive, blind retry, Governor). */
export interface AgentRuntime {
  /** Starts a task (e.g. a Governor run); `end` is called once the task is over. */
  startTask(task: AgentTask): TaskSession & { end(): void };
}

/** Which rule of {@link react} chose the next call. */
export type ReactionRule =
  | "switch_named_tool"
  | "pick_known_id"
  | "clamp_to_range"
  | "closest_tool"
  | "repeat";

/** The model's next call and the rule that chose it. */
export interface Reaction {
  readonly rule: ReactionRule;
  readonly next: ToolRequest;
}

/** What the model knows besides the failure text. */
export interface ReactContext {
  /** Names of the tools the server listed. */
  readonly tools: readonly string[];
  /** See {@link AgentTask.switchArgs}. */
  readonly switchArgs?: AgentTask["switchArgs"];
}

const USE_INSTEAD = /\bUse ([\w.-]+(?:(?:,\s*|\s+or\s+)[\w.-]+)*) instead\b/;
const KNOWN_VALUES = /\b(?:Known ids|Use one of|Valid values|Expected one of):\s*([^.\n(]+)/i;
const RANGE = /\b([A-Za-z_][\w]*) must be between (-?\d+(?:\.\d+)?) and (-?\d+(?:\.\d+)?)/;
const TOOL_NOT_FOUND =
  /\bTool ([\w.-]+) not found\b|\bThis tool does not exist\b|\bUnknown tool\b/i;

function splitList(list: string): string[] {
  return list
    .split(/,\s*|\s+or\s+/)
    .map((v) => v.trim().replace(/^["'`]|["'`]$/g, ""))
    .filter((v) => v !== "");
}

/** The argument the failure names: the one whose string value appears quoted in the text. */
function namedArgument(args: Readonly<Record<string, unknown>>, text: string): string | undefined {
  for (const [name, value] of Object.entries(args)) {
    if (typeof value === "string" && value !== "" && text.includes(`"${value}"`)) return name;
  }
  return "id" in args ? "id" : undefined;
}

/** Levenshtein distance (small strings only: tool names). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost));
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

function switchTo(tool: string, request: ToolRequest, ctx: ReactContext): ToolRequest {
  return { name: tool, arguments: ctx.switchArgs?.[tool] ?? request.arguments };
}

/**
 * How the scripted model reacts to a failed call, first rule that applies:
 * 1. `switch_named_tool`: the text says "Use X instead" (or "Use X or Y instead") and X is a listed
 *    tool → call X (with the task's `switchArgs` for X, else the same arguments);
 * 2. `pick_known_id`: the text lists valid values ("Known ids: a, b", "Use one of: a, b") → put
 *    the first one that differs from the current value into the argument the text quotes (else
 *    into `id`);
 * 3. `clamp_to_range`: "NAME must be between A and B" and NAME is a numeric argument → clamp it;
 * 4. `closest_tool`: the tool does not exist ("Tool X not found", "This tool does not exist") →
 *    the listed tool with the closest name (edit distance at most half the name's length);
 * 5. `repeat`: otherwise the model naively makes the same call again.
 */
export function react(request: ToolRequest, text: string, ctx: ReactContext): Reaction {
  const instead = USE_INSTEAD.exec(text);
  if (instead?.[1] !== undefined) {
    const tool = splitList(instead[1]).find((t) => t !== request.name && ctx.tools.includes(t));
    if (tool !== undefined)
      return { rule: "switch_named_tool", next: switchTo(tool, request, ctx) };
  }

  const known = KNOWN_VALUES.exec(text);
  if (known?.[1] !== undefined) {
    const arg = namedArgument(request.arguments, text);
    if (arg !== undefined) {
      const current = request.arguments[arg];
      const value = splitList(known[1]).find((v) => v !== current);
      if (value !== undefined) {
        return {
          rule: "pick_known_id",
          next: { name: request.name, arguments: { ...request.arguments, [arg]: value } },
        };
      }
    }
  }

  const range = RANGE.exec(text);
  if (range?.[1] !== undefined) {
    const [, name, low, high] = range;
    const current = request.arguments[name];
    if (typeof current === "number") {
      const clamped = Math.min(Number(high), Math.max(Number(low), current));
      if (clamped !== current) {
        return {
          rule: "clamp_to_range",
          next: { name: request.name, arguments: { ...request.arguments, [name]: clamped } },
        };
      }
    }
  }

  if (TOOL_NOT_FOUND.test(text)) {
    let best: { tool: string; distance: number } | undefined;
    for (const tool of ctx.tools) {
      if (tool === request.name) continue;
      const distance = editDistance(tool, request.name);
      if (best === undefined || distance < best.distance) best = { tool, distance };
    }
    if (best !== undefined && best.distance <= Math.floor(request.name.length / 2)) {
      return { rule: "closest_tool", next: switchTo(best.tool, request, ctx) };
    }
  }

  return { rule: "repeat", next: request };
}

/** One turn of a task: the call, what the model read, and how it reacted. */
export interface Turn {
  readonly request: ToolRequest;
  readonly observation: Observation;
  /** Set when the model made another call after this one. */
  readonly reaction?: ReactionRule;
}

/** How a task ended. */
export type TaskOutcome =
  | { readonly kind: "succeeded" }
  | { readonly kind: "stopped"; readonly reason: string }
  | { readonly kind: "turn_limit" };

/** The record of one task. */
export interface TaskRecord {
  readonly task: string;
  readonly outcome: TaskOutcome;
  readonly turns: readonly Turn[];
}

/** Options of {@link runTask}. */
export interface RunTaskOptions {
  /** Names of the tools the server listed (the model's tool list). */
  readonly tools: readonly string[];
  /** Turns (model calls) before the agent loop gives up. @default 8 */
  readonly maxTurns?: number;
}

/** The agent loop's turn limit (like `maxTurns` in agent SDKs). */
export const DEFAULT_MAX_TURNS = 8;

/**
 * Runs one task: calls, reads, reacts, until a usable result (`succeeded`), a stop from the
 * runtime (`stopped`) or the turn limit (`turn_limit`).
 */
export async function runTask(
  task: AgentTask,
  runtime: AgentRuntime,
  options: RunTaskOptions,
): Promise<TaskRecord> {
  const maxTurns = options.maxTurns ?? DEFAULT_MAX_TURNS;
  const session = runtime.startTask(task);
  const turns: Turn[] = [];
  let request = task.first;
  try {
    for (let turn = 1; turn <= maxTurns; turn++) {
      const result = await session.call(request);
      const { observation } = result;
      if (result.kind === "stop") {
        turns.push({ request, observation });
        return { task: task.id, outcome: { kind: "stopped", reason: result.reason }, turns };
      }
      if (!observation.isError) {
        turns.push({ request, observation });
        return { task: task.id, outcome: { kind: "succeeded" }, turns };
      }
      if (turn === maxTurns) {
        turns.push({ request, observation });
        break;
      }
      const reaction = react(request, observation.text, {
        tools: options.tools,
        ...(task.switchArgs !== undefined && { switchArgs: task.switchArgs }),
      });
      turns.push({ request, observation, reaction: reaction.rule });
      request = reaction.next;
    }
    return { task: task.id, outcome: { kind: "turn_limit" }, turns };
  } finally {
    session.end();
  }
}
