import {
  type CallOutcome,
  createReconnector,
  failureFromError,
  GovernorError,
  HostError,
  type Reason,
  ReconnectFailed,
  type Reconnector,
  type Run,
  type ToolCall,
} from "@governor/core";
import {
  hostErrorText,
  isDeliverable,
  replayedText,
  undeliverableText,
} from "@governor/core/judge";
import type { JSONValue, Tool, ToolSet } from "ai";
import { mapMcpClientError, mcpAnnotations } from "./mcp-error.ts";

/** Options of {@link governTools}. */
export interface GovernToolsOptions {
  /** The run every call of these tools belongs to (`governor.startRun()`, one per agent task). */
  readonly run: Run;
  /** The server's name in the policy (`servers.<name>`): its settings apply to these tools. */
  readonly server?: string;
  /**
   * Receives what `run.call` throws: a failure only the host can handle when the governor has no
   * `onHostError` hook (the run has ended), or an error of Governor itself, such as a failing
   * store, wrapped in a `HostError` whose `message` is a fixed phrase, whose `reason` is the
   * error's code (`store_error`, or `unexpected_error` for a non-Governor error) and whose `cause`
   * is the raw error. Either way the model gets a short fixed stop text, never the error. Without
   * this option the error is dropped (a host failure's reason stays in `run.summary()`).
   */
  readonly onHostError?: (error: HostError) => void;
  /**
   * Called once for each call whose outcome is a `stop` (the run has ended): the tool, the AI
   * SDK's `toolCallId`, the reason and, for a write whose outcome is unknown
   * (`uncertain_mutation`), its idempotency key, for a person to check and settle with
   * `governor.settle(key, …)`. The model only gets the stop text; this is the host's copy.
   */
  readonly onStop?: (stop: GovernedStop) => void;
  /**
   * Brings an MCP server back when a call finds its client closed (`@ai-sdk/mcp`'s client does
   * not reconnect: a stdio server whose process died leaves it closed for good): close the old
   * client, create a new one and return its `tools()`. The call that found the client closed is
   * sent again through the new tool of the same name (nothing was sent on that attempt); later
   * calls use the new tools. One reconnect at a time for all tool sets given the same function
   * (pass one function per client to every run's `governTools`: the sets then share the new
   * tools), bounded by `reconnectTimeoutMs` (the first set's) and each call's own signal. Which calls Governor attempts again after a
   * connection lost mid-call is its usual rule: reads, idempotent tools and writes whose tool
   * honours keys, never an unkeyed write whose outcome is unknown. A reconnect that fails ends the
   * call as `not_connected` (the host's `session_expired`). @default no reconnect
   * @example
   * let client = await createMCPClient({ transport: stdio() });
   * const tools = governTools(await client.tools(), {
   *   run,
   *   reconnect: async () => {
   *     await client.close().catch(() => {});
   *     client = await createMCPClient({ transport: stdio() });
   *     return client.tools();
   *   },
   * });
   */
  readonly reconnect?: (signal: AbortSignal) => Promise<Record<string, unknown>>;
  /** Upper bound of one reconnect, a positive number of ms. @default 30000 */
  readonly reconnectTimeoutMs?: number;
}

/** How long a reconnect may take by default (spawning a stdio server can take seconds). */
const DEFAULT_RECONNECT_MS = 30_000;

/** What {@link GovernToolsOptions.onStop} receives. */
export interface GovernedStop {
  readonly tool: string;
  readonly toolCallId: string;
  readonly reason: Reason;
  /** A person could resolve it (log in, approve, raise a quota, check a write). */
  readonly personResolvable: boolean;
  /**
   * Set for a write that may have happened (`uncertain_mutation`, or a stop after an attempt whose
   * outcome was unknown).
   */
  readonly idempotencyKey?: string;
  /** The text the model got. */
  readonly text: string;
}

/** What `toModelOutput` returns (the AI SDK does not export the type by name). */
type ModelOutput = Awaited<ReturnType<NonNullable<Tool["toModelOutput"]>>>;
type ToModelOutput = NonNullable<Tool["toModelOutput"]>;
/**
 * The options `execute` receives. Derived from `Tool`, not named: ai 7's `ToolExecutionOptions`
 * takes a type argument that ai 6's does not (checked by tsconfig.ai7.json).
 */
type ExecutionOptions = Parameters<NonNullable<Tool["execute"]>>[1];
type Execute = (input: unknown, options: ExecutionOptions) => unknown;

/** How many outputs one `governTools` remembers for `toModelOutput`. */
const MAX_REMEMBERED = 1_000;

/**
 * An output `toModelOutput` answers itself: a failure text (`error-text`), the text of a write
 * replayed without a kept result, or a replayed value (JSON's copy of the first call's, which the
 * tool's own `toModelOutput` may not be able to read: a Date is a string then).
 */
interface Remembered {
  readonly kind: "failure" | "done_before" | "replayed";
  readonly output: unknown;
}

/** The AI SDK's own default for a tool without `toModelOutput`. */
function defaultOutput(output: unknown): ModelOutput {
  return typeof output === "string"
    ? { type: "text", value: output }
    : { type: "json", value: (output ?? null) as JSONValue };
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { [Symbol.asyncIterator]?: unknown })[Symbol.asyncIterator] === "function"
  );
}

/**
 * One signal that aborts when either does; `unlink` removes the listeners it added, so a long
 * generation's signal does not collect one listener per tool call.
 */
function linkSignals(
  a: AbortSignal,
  b: AbortSignal | undefined,
): { signal: AbortSignal; unlink: () => void } {
  if (b === undefined) return { signal: a, unlink: () => {} };
  if (a.aborted) return { signal: a, unlink: () => {} };
  if (b.aborted) return { signal: b, unlink: () => {} };
  const ac = new AbortController();
  const fromA = () => ac.abort(a.reason);
  const fromB = () => ac.abort(b.reason);
  a.addEventListener("abort", fromA, { once: true });
  b.addEventListener("abort", fromB, { once: true });
  return {
    signal: ac.signal,
    unlink: () => {
      a.removeEventListener("abort", fromA);
      b.removeEventListener("abort", fromB);
    },
  };
}

function invalid(text: string): GovernorError {
  return new GovernorError("invalid_options", `governTools: ${text}.`);
}

/**
 * Refuses options the governed tools could not work with, naming the field: without a run every
 * call would fail with a fixed text, and a hook that is not a function would be skipped unseen.
 */
function checkOptions(tools: unknown, options: GovernToolsOptions | undefined): void {
  if (typeof tools !== "object" || tools === null) {
    throw invalid(
      `tools must be an object of AI SDK tools, got ${tools === null ? "null" : typeof tools}`,
    );
  }
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const run = o.run as { call?: unknown } | null | undefined;
  if (typeof run?.call !== "function") {
    throw invalid(
      `run must be a Governor run (governor.startRun()), got ${run === null ? "null" : typeof run}`,
    );
  }
  if (o.server !== undefined && typeof o.server !== "string") {
    throw invalid(
      `server must be a string (the server's name in the policy), got ${typeof o.server}`,
    );
  }
  for (const hook of ["onHostError", "onStop", "reconnect"]) {
    if (o[hook] !== undefined && typeof o[hook] !== "function") {
      throw invalid(`${hook} must be a function, got ${typeof o[hook]}`);
    }
  }
  const limit = o.reconnectTimeoutMs;
  if (limit !== undefined && (typeof limit !== "number" || !(limit > 0))) {
    throw invalid(`reconnectTimeoutMs must be a positive number of ms, got ${String(limit)}`);
  }
}

/** Whether a tool of `@ai-sdk/mcp`'s client found the client closed before sending anything. */
function clientClosed(error: unknown): boolean {
  return mapMcpClientError(error)?.local === "not_connected";
}

/**
 * The tools as the last reconnect made them, and the one reconnect at a time that replaces them;
 * undefined without a `reconnect` option.
 */
interface Reconnecting {
  readonly reconnector: Reconnector;
  /** The current tool of `name`: the original until a reconnect, then the new client's. */
  toolOf(name: string, original: Tool): Tool;
}

/**
 * The reconnect state of each hook: the tool sets of every run that pass the same `reconnect`
 * share one reconnect at a time and the tools it made (two runs each replacing the same client
 * would close the one the other just made).
 */
const shared = new WeakMap<NonNullable<GovernToolsOptions["reconnect"]>, Reconnecting>();

function reconnecting(options: GovernToolsOptions): Reconnecting | undefined {
  const hook = options.reconnect;
  if (hook === undefined) return undefined;
  const known = shared.get(hook);
  if (known !== undefined) return known;
  const made = makeReconnecting(hook, options.reconnectTimeoutMs);
  shared.set(hook, made);
  return made;
}

function makeReconnecting(
  hook: NonNullable<GovernToolsOptions["reconnect"]>,
  reconnectTimeoutMs: number | undefined,
): Reconnecting {
  let current: Record<string, unknown> | undefined;
  // What a hook threw may quote a server's answer: the host reads it redacted (core's default).
  const reconnector = createReconnector(
    async (signal) => {
      const tools = await hook(signal);
      if (typeof tools !== "object" || tools === null) {
        throw new Error(`reconnect must resolve with the new client's tools, got ${typeof tools}`);
      }
      current = tools;
    },
    { limitMs: reconnectTimeoutMs ?? DEFAULT_RECONNECT_MS },
  );
  return {
    reconnector,
    toolOf(name, original) {
      if (current === undefined) return original;
      const tool = current[name] as Tool | undefined;
      if (typeof tool?.execute !== "function") {
        throw new ReconnectFailed(`Reconnected, but the server no longer has the tool ${name}`);
      }
      return tool;
    },
  };
}

/**
 * Wraps each tool's `execute` so every call goes through a Governor run: the AI SDK's
 * `toolCallId` identifies the logical call (its idempotency key is the same across retries and
 * workers), transient failures are retried inside the call, and a failure that reaches the model
 * comes back as Governor's one short redacted text — returned, not thrown, because the AI SDK
 * hands a thrown error's raw message to the model. Each such result reaches the model as
 * `error-text` through `toModelOutput`. Tools without `execute` are left as they are.
 *
 * The returned set keeps the input's type; a governed failure's `output` is that text (a string).
 * A tool that streams preliminary results (an async iterable) yields only its final value.
 * @example
 * const run = governor.startRun();
 * const result = await generateText({
 *   model,
 *   tools: governTools({ getNote }, { run }),
 *   stopWhen: [stepCountIs(10), governorStopCondition(run)],
 *   prompt: "Summarize the release notes",
 * });
 * const summary = run.end();
 */
export function governTools<TOOLS extends ToolSet>(
  tools: TOOLS,
  options: GovernToolsOptions,
): TOOLS {
  checkOptions(tools, options);
  const { run, server, onHostError, onStop } = options;
  const renewable = reconnecting(options);
  // Outputs by tool-call id that `toModelOutput` answers itself (see Remembered).
  const remembered = new Map<string, Remembered>();
  const remember = (toolCallId: string, kind: Remembered["kind"], output: unknown) => {
    if (remembered.size >= MAX_REMEMBERED) {
      const oldest = remembered.keys().next();
      if (!oldest.done) remembered.delete(oldest.value);
    }
    remembered.set(toolCallId, { kind, output });
  };

  const wrap = (name: string, original: Tool): Tool => {
    const execute = original.execute as Execute | undefined;
    if (typeof execute !== "function") return original;
    const ownOutput = original.toModelOutput as ToModelOutput | undefined;
    const annotations = mcpAnnotations(original);

    const governed: Execute = async (input, execOptions) => {
      // Governor keys calls by named arguments; a tool whose input is not an object is governed
      // under `{ input }` and still receives its input as it came.
      const object = isRecord(input);
      // The AI SDK's signal (an aborted `generateText`) is the call's own signal: aborting it
      // ends the call's retries and backoff at once, not only the attempt in flight.
      const call: ToolCall = {
        tool: name,
        ...(server !== undefined && { server }),
        args: object ? input : { input },
        callId: execOptions.toolCallId,
        ...(annotations !== undefined && { annotations }),
        // A tool of `@ai-sdk/mcp`'s client throws its MCPClientError: tagged by origin there.
        toFailure: (thrown) =>
          thrown instanceof ReconnectFailed
            ? thrown.failure()
            : (mapMcpClientError(thrown) ?? failureFromError(thrown)),
        ...(execOptions.abortSignal !== undefined && { signal: execOptions.abortSignal }),
      };
      let outcome: CallOutcome<unknown>;
      // What the tool itself threw: observe-only hands it back from run.call as it is.
      let threw: { readonly error: unknown } | undefined;
      try {
        outcome = await run.call(call, async (ctx) => {
          const { signal, unlink } = linkSignals(ctx.signal, execOptions.abortSignal);
          const send = async (tool: Tool) => {
            const result = (tool.execute as Execute).call(tool, object ? ctx.args : input, {
              ...execOptions,
              abortSignal: signal,
            });
            if (!isAsyncIterable(result)) return await result;
            let last: unknown;
            for await (const part of result) last = part;
            return last;
          };
          try {
            if (renewable === undefined) return await send(original);
            const seen = renewable.reconnector.generation;
            try {
              return await send(renewable.toolOf(name, original));
            } catch (error) {
              if (!clientClosed(error)) throw error;
            }
            // The client was closed: nothing was sent. Bring it back, then send once more (not
            // when the attempt was cut or the run ended meanwhile: `beforeSending`).
            await ctx.beforeSending(renewable.reconnector.renew(seen, signal));
            return await send(renewable.toolOf(name, original));
          } catch (error) {
            threw = { error };
            throw error;
          } finally {
            unlink();
          }
        });
      } catch (err) {
        // Observe-only enforces nothing: the tool's own error goes to the AI SDK untouched (a
        // `tool-error`, as without Governor). Enforcing, run.call never rejects with it.
        if (threw !== undefined && err === threw.error) throw err;
        // `run.call` rejected: a HostError (no governor `onHostError` hook), or trouble in
        // Governor itself (its store, a bug). Thrown from here, the AI SDK would put the raw
        // message (a Redis URL, an internal address) in the model's context: the host gets the
        // error, the model a fixed text.
        const error = HostError.from(err, name, server);
        try {
          onHostError?.(error);
        } catch {
          // A host hook must not break the agent loop.
        }
        const text = hostErrorText(error);
        remember(execOptions.toolCallId, "failure", text);
        return text;
      }
      if (outcome.kind === "ok") {
        // A success nested too deep for the AI SDK to write into the prompt (JSON.stringify
        // throws out of generateText): the model reads that the call was made (deliverable.ts).
        if (!isDeliverable(outcome.value)) {
          const text = undeliverableText(name);
          remember(execOptions.toolCallId, "failure", text);
          return text;
        }
        if (!outcome.replayed) return outcome.value;
        // A write done before, with no result to replay: an MCP tool's own shape (undefined
        // would throw in an `@ai-sdk/mcp` tool's toModelOutput), the text alone to any tool
        // whose own toModelOutput cannot read it.
        if (outcome.value === undefined) {
          const done = { content: [{ type: "text", text: replayedText(name) }] };
          remember(execOptions.toolCallId, "done_before", done);
          return done;
        }
        remember(execOptions.toolCallId, "replayed", outcome.value);
        return outcome.value;
      }
      const text = outcome.result.content[0].text;
      remember(execOptions.toolCallId, "failure", text);
      if (outcome.kind === "stop") {
        try {
          onStop?.({
            tool: name,
            toolCallId: execOptions.toolCallId,
            reason: outcome.reason,
            personResolvable: outcome.personResolvable,
            ...(outcome.idempotencyKey !== undefined && { idempotencyKey: outcome.idempotencyKey }),
            text,
          });
        } catch {
          // A host hook must not break the agent loop.
        }
      }
      return text;
    };

    // A replay is not the value the tool made: JSON's copy of it, or the text result of a write
    // done before. When the tool's own rendering cannot read it (it threw out of generateText),
    // the model reads `fallback` instead.
    const ownOr = (
      opts: Parameters<ToModelOutput>[0],
      own: ToModelOutput,
      fallback: ModelOutput,
    ) => {
      try {
        const out = own.call(original, opts);
        return isPromiseLike(out) ? Promise.resolve(out).catch(() => fallback) : out;
      } catch {
        return fallback;
      }
    };

    const toModelOutput: ToModelOutput = (opts) => {
      const known = remembered.get(opts.toolCallId);
      if (known !== undefined && opts.output === known.output) {
        if (known.kind === "failure") {
          return { type: "error-text", value: known.output as string } satisfies ModelOutput;
        }
        const fallback: ModelOutput =
          known.kind === "done_before"
            ? { type: "text", value: replayedText(name) }
            : defaultOutput(opts.output);
        return ownOutput ? ownOr(opts, ownOutput, fallback) : fallback;
      }
      if (ownOutput) return ownOutput.call(original, opts);
      return defaultOutput(opts.output);
    };

    return { ...original, execute: governed, toModelOutput } as Tool;
  };

  const out: Record<string, Tool> = {};
  for (const [name, original] of Object.entries(tools)) out[name] = wrap(name, original as Tool);
  return out as TOOLS;
}
