import { type CallOutcome, GovernorError, HostError, type Run } from "@governor/core";
import { hostErrorText, replayedText } from "@governor/core/judge";
import { parseCallbackConfigArg } from "@langchain/core/callbacks/manager";
import {
  AIMessage,
  HumanMessage,
  type ToolCall as LangChainToolCall,
  SystemMessage,
  ToolMessage,
} from "@langchain/core/messages";
import {
  StructuredTool,
  type StructuredToolCallInput,
  type ToolReturnType,
  type ToolRunnableConfig,
  type ToolSchemaBase,
} from "@langchain/core/tools";
import { recordStop } from "./stop.ts";

/** Options shared by every governed tool. */
export interface GovernOptions {
  /** The run every call of these tools belongs to (`governor.startRun()`, one per agent task). */
  readonly run: Run;
  /** The server's name in the policy (`servers.<name>`): its settings apply to these tools. */
  readonly server?: string;
  /**
   * Receives what `run.call` throws: a failure only the host can handle when the governor has no
   * `onHostError` hook (the run has ended), or an error of Governor itself, such as a failing
   * store, wrapped in a `HostError` whose `message` is a fixed phrase, whose `reason` is the
   * error's code (`store_error`, or `unexpected_error` for a non-Governor error) and whose `cause`
   * is the raw error. Either way the model gets a short fixed stop text, never the error, and the
   * run's next model turn throws `GovernorStopError` with this error as `hostError`.
   */
  readonly onHostError?: (error: HostError) => void;
}

/**
 * Refuses options governed tools could not work with, naming the field: without a run every call
 * would answer a fixed text, and an `onHostError` that is not a function would be skipped unseen.
 */
export function checkGovernOptions(where: string, options: GovernOptions | undefined): void {
  const invalid = (text: string) => new GovernorError("invalid_options", `${where}: ${text}.`);
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
  if (o.onHostError !== undefined && typeof o.onHostError !== "function") {
    throw invalid(`onHostError must be a function, got ${typeof o.onHostError}`);
  }
}

/** One call as a governed tool received it. */
export interface CallInput {
  readonly args: unknown;
  /** The tool call the model made, when the tool was invoked with one (a `ToolNode` does). */
  readonly toolCall: LangChainToolCall | undefined;
  readonly config: ToolRunnableConfig;
}

/**
 * What a performer rejects with when `run.call` handed back the tool's own error as it is
 * (observe-only mode enforces nothing): the governed tool throws `error`, as the tool would.
 */
export class ToolThrew {
  constructor(readonly error: unknown) {}
}

/** Performs one governed call: an outcome whose `ok` value is the tool's own output. */
export type Perform = (call: CallInput) => Promise<CallOutcome<unknown>>;

/** Describes the tool the model sees (name, description, input schema). */
export interface ToolShape {
  readonly name: string;
  readonly description: string;
  readonly schema: ToolSchemaBase;
  readonly returnDirect?: boolean;
}

function isToolCall(value: unknown): value is LangChainToolCall {
  return (
    typeof value === "object" &&
    value !== null &&
    "args" in value &&
    (value as { type?: unknown }).type === "tool_call"
  );
}

/**
 * A LangChain tool whose calls go through a Governor run. It never throws into the agent loop:
 * a failure the model can act on, and a stop, come back as an error `ToolMessage` with Governor's
 * text, so LangGraph's `ToolNode` error handling (`handleToolErrors`) never sees a raw error.
 * Input is not checked here: the performer checks it inside the run, where a bad input counts.
 */
export class GovernedTool extends StructuredTool {
  name: string;
  description: string;
  schema: ToolSchemaBase;
  readonly #perform: Perform;
  readonly #options: GovernOptions;

  constructor(shape: ToolShape, perform: Perform, options: GovernOptions) {
    super();
    this.name = shape.name;
    this.description = shape.description;
    this.schema = shape.schema;
    this.returnDirect = shape.returnDirect ?? false;
    this.#perform = perform;
    this.#options = options;
  }

  /** Not used: `call` governs every invocation (`invoke` goes through it). */
  protected async _call(): Promise<never> {
    throw new Error(`${this.name}: a governed tool runs through call()/invoke()`);
  }

  override call<
    TArg extends StructuredToolCallInput<ToolSchemaBase>,
    TConfig extends ToolRunnableConfig | undefined,
  >(arg: TArg, configArg?: TConfig): Promise<ToolReturnType<TArg, TConfig, unknown>> {
    return this.#governed(arg, configArg) as Promise<ToolReturnType<TArg, TConfig, unknown>>;
  }

  async #governed(arg: unknown, configArg: unknown): Promise<unknown> {
    const config = parseCallbackConfigArg(configArg as ToolRunnableConfig) as ToolRunnableConfig;
    const toolCall = isToolCall(arg) ? arg : config.toolCall;
    const args = isToolCall(arg) ? arg.args : arg;
    const { run, server, onHostError } = this.#options;
    let outcome: CallOutcome<unknown>;
    try {
      outcome = await this.#perform({ args, toolCall, config });
    } catch (err) {
      if (err instanceof ToolThrew) throw err.error;
      // `run.call` rejected: a HostError (no governor `onHostError` hook), or trouble in
      // Governor itself (its store, a bug). Thrown from here, ToolNode would put the raw message
      // in the model's context: the host gets the error, the model a fixed text.
      const error = HostError.from(err, this.name, server);
      try {
        onHostError?.(error);
      } catch {
        // A host hook must not break the agent loop.
      }
      const text = hostErrorText(error);
      recordStop(run, {
        tool: this.name,
        server,
        reason: error.stopReason,
        personResolvable: false,
        text,
        // A write that may have happened (a JSON-RPC error after it went out): the host settles it.
        idempotencyKey: error.idempotencyKey,
        hostError: error,
      });
      return this.#failure(text, toolCall);
    }
    if (outcome.kind === "ok") {
      if (!outcome.replayed) return outcome.value;
      const command = serialisedCommand(outcome.value);
      return command === undefined
        ? this.#replayed(outcome.value, toolCall)
        : await reviveCommand(command);
    }
    const text = outcome.result.content[0].text;
    if (outcome.kind === "stop") {
      recordStop(run, {
        tool: this.name,
        server,
        reason: outcome.reason,
        personResolvable: outcome.personResolvable,
        text,
        idempotencyKey: outcome.idempotencyKey,
        hostError: outcome.hostError,
      });
    }
    return this.#failure(text, toolCall);
  }

  /**
   * A replay (the ledger answered the call as done before) as this tool call's answer. A store
   * that keeps results as JSON (Redis) hands back a `ToolMessage` in LangChain's serialised form
   * (`{ lc: 1, kwargs: { content, ... } }`), which `ToolNode` would show the model as that JSON: it
   * is rebuilt. A replay with no result kept (`idempotency.replay: false`, a result the store let
   * go, a key a host settled by hand) says the call was done before, instead of `undefined`.
   */
  #replayed(value: unknown, toolCall: LangChainToolCall | undefined): unknown {
    if (value === undefined) return this.#message(replayedText(this.name), "success", toolCall);
    const message = serialisedMessage(value);
    if (message?.name !== "ToolMessage") return value;
    const { content } = message.kwargs as { content?: unknown };
    if (typeof content !== "string" && !Array.isArray(content)) return value;
    if (toolCall?.id === undefined) return content;
    return new ToolMessage({ ...(message.kwargs as ToolMessageFields), tool_call_id: toolCall.id });
  }

  /** Governor's text as an error ToolMessage (or the text alone when invoked without a call). */
  #failure(text: string, toolCall: LangChainToolCall | undefined): ToolMessage | string {
    return this.#message(text, "error", toolCall);
  }

  /** A text as this tool call's ToolMessage, or the text alone when invoked without a call. */
  #message(
    text: string,
    status: "success" | "error",
    toolCall: LangChainToolCall | undefined,
  ): ToolMessage | string {
    if (toolCall?.id === undefined) return text;
    return new ToolMessage({ status, content: text, name: this.name, tool_call_id: toolCall.id });
  }
}

/** A LangGraph `Command` as JSON keeps it: `JSON.stringify` of one. */
interface SerialisedCommand {
  readonly lg_name: "Command";
  readonly update?: unknown;
  readonly goto?: unknown;
  readonly resume?: unknown;
  readonly graph?: unknown;
}

function serialisedCommand(value: unknown): SerialisedCommand | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  return (value as { lg_name?: unknown }).lg_name === "Command"
    ? (value as SerialisedCommand)
    : undefined;
}

/** The message classes a Command's `update.messages` are rebuilt as (nothing else is built). */
const MESSAGE_CLASSES = { ToolMessage, AIMessage, HumanMessage, SystemMessage } as const;

/**
 * A message in LangChain's serialised form (`JSON.stringify` of one: `lc: 1`, `type:
 * "constructor"`, `id` ending in its class name, its fields in `kwargs`): that name and those
 * fields; undefined for any other value.
 */
function serialisedMessage(value: unknown): { name: string; kwargs: object } | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { lc, type, id, kwargs } = value as Record<string, unknown>;
  if (lc !== 1 || type !== "constructor" || !Array.isArray(id)) return undefined;
  if (typeof kwargs !== "object" || kwargs === null) return undefined;
  const name: unknown = id.at(-1);
  return typeof name === "string" ? { name, kwargs } : undefined;
}

/** A message in LangChain's serialised form as its class again; any other value as it is. */
function reviveMessage(value: unknown): unknown {
  const message = serialisedMessage(value);
  if (message === undefined || !Object.hasOwn(MESSAGE_CLASSES, message.name)) return value;
  const Message = MESSAGE_CLASSES[message.name as keyof typeof MESSAGE_CLASSES];
  return new Message(message.kwargs as ToolMessageFields);
}

/**
 * A `Command` a tool answered with, rebuilt from the JSON a store kept: ToolNode runs a `Command`
 * (its state update, its tool message) but shows the model any other value as JSON. Only the
 * messages of `update.messages` are rebuilt (as message classes, never anything else a
 * serialised form names); `goto` is rebuilt by `Command` itself. LangGraph is an optional peer:
 * loaded here, where a tool of the graph made a `Command` before.
 */
async function reviveCommand(command: SerialisedCommand): Promise<unknown> {
  const { Command } = await import("@langchain/langgraph");
  const { update, goto, resume, graph } = command;
  let revived = update;
  if (typeof update === "object" && update !== null && !Array.isArray(update)) {
    const { messages } = update as { messages?: unknown };
    if (Array.isArray(messages)) revived = { ...update, messages: messages.map(reviveMessage) };
  }
  return new Command({
    ...(revived !== undefined && { update: revived as Record<string, unknown> }),
    ...(goto !== undefined && { goto: goto as string }),
    ...(resume !== undefined && { resume }),
    ...(typeof graph === "string" && { graph }),
  });
}

/** The fields a message class is built from (a ToolMessage's, the widest). */
type ToolMessageFields = ConstructorParameters<typeof ToolMessage>[0] & { tool_call_id: string };
