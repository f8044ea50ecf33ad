import {
  type AttemptContext,
  type Failure,
  failureFromError,
  GovernorError,
  HostError,
  localFailure,
  type Run,
  type ToolCall,
} from "@governor/core";
import {
  type FunctionTool,
  type RunContext,
  type ToolInputParameters,
  type ToolOptions,
  tool,
} from "@openai/agents";
import { SDK_TOOL_ERROR_TEXT, settle, toolValue } from "./outcome.ts";
import { linkSignals, withoutSiblingCancellation } from "./signals.ts";

/** Options of {@link governedTool}. */
export interface GovernedToolOptions {
  /** The run every call of this tool belongs to (`governor.startRun()`, one per agent task). */
  readonly run: Run;
  /** The server's name in the policy (`servers.<name>`): its settings apply to this tool. */
  readonly server?: string;
}

/** What the SDK passes as a tool's third `execute` argument. */
type Details = { readonly toolCall?: { readonly callId?: string }; readonly signal?: AbortSignal };
type Execute = (input: unknown, context?: unknown, details?: Details) => unknown;

/** One attempt ran longer than the tool's `timeoutMs`. */
class AttemptTimeout extends Error {
  override readonly name = "TimeoutError";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Options a governed tool refuses, each with why and what to use instead. */
const REFUSED: Readonly<Record<string, string>> = {
  errorFunction:
    "a governed tool never hands an error to an error function: Governor's text is what the model reads (tune it with the policy's rules and redaction)",
  outputSchema:
    "a governed tool's failure text is a string, which an output schema would reject; declare the tool without outputSchema",
  timeoutBehavior:
    "a governed tool's timeoutMs bounds each attempt and Governor judges the timeout (retry, or stop for a write); leave timeoutBehavior out",
  timeoutErrorFunction:
    "a governed tool's timeout is judged by Governor, not formatted for the model; leave timeoutErrorFunction out",
};

function checkOptions(options: Record<string, unknown>, name: string): void {
  for (const [key, why] of Object.entries(REFUSED)) {
    if (options[key] !== undefined && !(key === "errorFunction" && options[key] === null)) {
      throw new GovernorError(
        "invalid_options",
        `governedTool(${name}): ${key} is not accepted: ${why}`,
      );
    }
  }
  const timeoutMs = options.timeoutMs;
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || !(timeoutMs > 0))
  ) {
    throw new GovernorError(
      "invalid_options",
      `governedTool(${name}): timeoutMs must be a positive finite number of ms (one attempt's limit), got ${String(timeoutMs)}`,
    );
  }
}

/** Node fires a longer timer after 1 ms: a longer `timeoutMs` is taken as this. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Refuses a governance the tool could not work with, naming the field: without a run every call
 * would throw a HostError out of `run()` at the first call.
 */
export function checkRun(
  where: string,
  governance: { readonly run?: unknown; readonly server?: unknown } | undefined,
): void {
  const run = governance?.run as { call?: unknown } | null | undefined;
  if (typeof run?.call !== "function") {
    throw new GovernorError(
      "invalid_options",
      `${where}: run must be a Governor run (governor.startRun()), got ${run === null ? "null" : typeof run}`,
    );
  }
  const server = governance?.server;
  if (server !== undefined && typeof server !== "string") {
    throw new GovernorError(
      "invalid_options",
      `${where}: server must be a string (the server's name in the policy), got ${typeof server}`,
    );
  }
}

/** Runs one attempt of `execute`, rejecting with {@link AttemptTimeout} after `timeoutMs`. */
function withTimeout<T>(attempt: Promise<T>, timeoutMs: number | undefined, abort: () => void) {
  if (timeoutMs === undefined) return attempt;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        const error = new AttemptTimeout(`The call took longer than ${timeoutMs} ms`);
        abort();
        reject(error);
      },
      Math.min(timeoutMs, MAX_TIMER_MS),
    );
  });
  return Promise.race([attempt, expired]).finally(() => clearTimeout(timer));
}

/**
 * Creates an Agents SDK function tool, as `tool(options)` does, whose every call goes through a
 * Governor run: the SDK's call id identifies the logical call (one idempotency key across
 * retries), transient failures are retried inside the call (the model never sees them), a failure
 * the model can fix comes back as Governor's one short redacted text (the tool's output), and a
 * stop throws a {@link GovernorStopError} that ends `run()`. A failure only the host can handle,
 * and any trouble of Governor itself (its store), is thrown too: it reaches the host, never the
 * model (the tool has no error function).
 *
 * `timeoutMs` bounds each attempt (Governor then judges the timeout: a retry for a read, a stop
 * for a write whose outcome is unknown); `errorFunction`, `outputSchema`, `timeoutBehavior` and
 * `timeoutErrorFunction` are refused.
 * @example
 * const run = governor.startRun();
 * const getNote = governedTool(
 *   { name: "get_note", description: "Reads a note", parameters: z.object({ id: z.string() }),
 *     execute: ({ id }, _ctx, details) => notes.get(id, { signal: details?.signal }) },
 *   { run },
 * );
 */
export function governedTool<
  TParameters extends ToolInputParameters = undefined,
  Context = unknown,
  Result = string,
>(
  options: ToolOptions<TParameters, Context>,
  governance: GovernedToolOptions,
): FunctionTool<Context, TParameters, Result> {
  const raw = options as unknown as Record<string, unknown>;
  const execute = raw.execute as Execute | undefined;
  // The SDK normalizes the name (`toFunctionToolName`); Governor uses the SDK's, set below.
  let name = typeof raw.name === "string" && raw.name !== "" ? raw.name : (execute?.name ?? "tool");
  if (typeof execute !== "function") {
    throw new GovernorError("invalid_options", `governedTool(${name}): execute must be a function`);
  }
  checkOptions(raw, name);
  checkRun(`governedTool(${name})`, governance);
  const { run, server } = governance;
  const timeoutMs = raw.timeoutMs as number | undefined;

  const governed = async (input: unknown, context?: RunContext<Context>, details?: Details) => {
    // Governor keys calls by named arguments; a tool whose input is not an object (no
    // parameters) is governed under `{ input }` and still receives its input as it came.
    const object = isRecord(input);
    const sdk = withoutSiblingCancellation(details?.signal);
    const callId = details?.toolCall?.callId;
    const call: ToolCall = {
      tool: name,
      ...(server !== undefined && { server }),
      args: object ? input : { input },
      ...(callId !== undefined && { callId }),
      ...(sdk.signal !== undefined && { signal: sdk.signal }),
      toFailure: (thrown): Failure =>
        thrown instanceof AttemptTimeout
          ? localFailure("timeout", thrown.message)
          : failureFromError(thrown),
    };
    // What the tool itself threw: observe-only hands it back from run.call as it is.
    let threw: { readonly error: unknown } | undefined;
    const attempt = async (ctx: AttemptContext) => {
      const cut = new AbortController();
      const { signal, unlink } = linkSignals(ctx.signal, cut.signal);
      try {
        const value = Promise.resolve(
          execute(object ? ctx.args : input, context, { ...details, signal }),
        );
        return await withTimeout(value, timeoutMs, () => cut.abort(new AttemptTimeout("timeout")));
      } catch (error) {
        threw = { error };
        throw error;
      } finally {
        unlink();
      }
    };
    let settled: ReturnType<typeof settle<unknown>>;
    try {
      settled = settle(await run.call(call, attempt), name, server);
    } catch (err) {
      // Observe-only: the model reads what the SDK's default error function gives it, as
      // without Governor, and run() goes on. Enforcing, run.call never rejects with it.
      if (threw !== undefined && err === threw.error) return SDK_TOOL_ERROR_TEXT;
      if (GovernorError.isInstance(err) && err.code === "run_ended") throw err;
      throw HostError.from(err, name, server);
    } finally {
      sdk.unlink();
    }
    return toolValue(settled, name);
  };

  const { timeoutMs: _attemptLimit, ...rest } = raw;
  const created = tool({
    ...rest,
    name,
    execute: governed,
    errorFunction: null,
  } as unknown as ToolOptions<TParameters, Context>);
  name = created.name;
  return created as unknown as FunctionTool<Context, TParameters, Result>;
}
