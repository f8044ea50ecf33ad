import {
  type AttemptContext,
  createReconnector,
  type Governor,
  GovernorError,
  HostError,
  ReconnectFailed,
  type Reconnector,
  type Run,
  type ToolAnnotations,
  type ToolCall,
  type ToolPolicy,
  withoutKeyArgument,
} from "@governor/core";
import { canonicalJson, redact } from "@governor/core/judge";
import { deliverableResult } from "@governor/mcp";
import type {
  CallToolResult,
  CallToolResultContent,
  MCPCallToolOptions,
  MCPServer,
} from "@openai/agents";
import { checkRun } from "./governed-tool.ts";
import { mapMcpError } from "./map-mcp-error.ts";
import { SDK_TOOL_ERROR_TEXT, settle, toolResult } from "./outcome.ts";
import { withAttemptSends } from "./send-gate.ts";
import { linkSignals, withoutSiblingCancellation } from "./signals.ts";

/** Options of {@link governMcpServer}. */
export interface GovernMcpServerOptions {
  /** The governor of `run`: its breakers and policy decide which tools are listed. */
  readonly governor: Governor;
  /** The run every call through this server belongs to (one per agent task). */
  readonly run: Run;
  /** The server's name in the policy (`servers.<name>`). @default the server's own `name` */
  readonly server?: string;
  /**
   * Brings the server back when a call finds it not connected (an `MCPServerStdio` whose process
   * died, a server closed under the run): `true` closes the server and calls its `connect()`
   * again (an `MCPServerStdio` starts a new process), a function is your own way (it gets a
   * signal that aborts when `reconnectTimeoutMs` is up). One reconnect at a time for all calls;
   * the call that found the server gone is sent again once it is back: nothing was sent on that
   * attempt. The wrappers of every run share one reconnect at a time per server for `true`, and
   * per server and function for a function (pass the same function to each run's wrapper); the
   * first wrapper's `reconnectTimeoutMs` applies to it. Which calls Governor attempts again after a connection lost mid-call is its usual
   * rule: reads, idempotent tools and writes whose tool honours keys (with the same key), never
   * an unkeyed write whose outcome is unknown. A reconnect that fails or times out ends the call
   * as `not_connected` (the host's `session_expired`). @default no reconnect
   */
  readonly reconnect?: boolean | ((signal: AbortSignal) => Promise<void>);
  /**
   * Upper bound of one reconnect, a positive number of ms; each waiting call is bounded by its
   * own signal too (the run's abort and deadline). @default 30000
   */
  readonly reconnectTimeoutMs?: number;
}

/** How long a reconnect may take by default (spawning a stdio server can take seconds). */
const DEFAULT_RECONNECT_MS = 30_000;

type Args = Record<string, unknown> | null;
type MCPTool = Awaited<ReturnType<MCPServer["listTools"]>>[number];
type Meta = Record<string, unknown> | null | undefined;

/** Resources, when the wrapped server has them (`MCPServerStdio`, `MCPServerStreamableHttp`…). */
const RESOURCE_METHODS = ["listResources", "listResourceTemplates", "readResource"] as const;

function toolAnnotations(tool: MCPTool): ToolAnnotations | undefined {
  const annotations = (tool as { annotations?: unknown }).annotations;
  return typeof annotations === "object" && annotations !== null
    ? (annotations as ToolAnnotations)
    : undefined;
}

/** A full result from the SDK's `callTool` (content with its result metadata attached). */
function fromContent(content: CallToolResultContent): CallToolResult {
  return {
    content: [...content],
    ...(content.isError !== undefined && { isError: content.isError }),
    ...(content.structuredContent !== undefined && {
      structuredContent: content.structuredContent,
    }),
    ...(content._meta !== undefined && { _meta: content._meta }),
  };
}

/** The content array the SDK's `callTool` returns, with the result's metadata attached. */
function toContent(result: CallToolResult): CallToolResultContent {
  const content = [...result.content] as CallToolResultContent;
  for (const key of ["isError", "structuredContent", "_meta"] as const) {
    if (result[key] !== undefined) {
      Object.defineProperty(content, key, {
        value: result[key],
        enumerable: false,
        configurable: true,
      });
    }
  }
  return content;
}

/**
 * Wraps an Agents SDK MCP server (`MCPServerStdio`, `MCPServerStreamableHttp`, `MCPServerSSE`, or
 * any `MCPServer`) so that every tool call goes through a Governor run, whatever MCP client the
 * server uses inside. Give the agent the wrapper, per run: `new Agent({ mcpServers: [governMcpServer(notes,
 * { governor, run })] })`; connect and close the server itself as usual.
 *
 * - Each attempt calls the server's `callToolResult` (or `callTool`) with the run's arguments
 *   (the key argument when the policy names one), the idempotency key in `_meta`, and a signal
 *   the run aborts. An `isError` result, a `ProtocolError` (`peer`) and the client's own errors
 *   (`local`: timeout, closed connection, HTTP status) are judged by Governor.
 * - A retry happens invisibly; a correction or switch comes back as an `isError` result with
 *   Governor's one text (what the model reads); a stop throws a `GovernorStopError`, a failure
 *   only the host can handle (a JSON-RPC error) its `HostError`: the wrapper has no
 *   `errorFunction` (it is `null`), so the SDK ends `run()` with them and the model reads neither.
 * - `listTools` hides tools whose breaker is open and tools the policy denies; the wrapper does not
 *   use the SDK's global tool cache (`cacheToolsList: false`), the server's own cache still works.
 * - Build an `MCPServerStreamableHttp` with `fetch: governedFetch()`: the SDK sends a call once
 *   more by itself after its own reconnect, and that fetch refuses such a send of a write whose
 *   run a stop ended before anything of it went out (each attempt's requests are tied to it).
 */
export function governMcpServer(server: MCPServer, options: GovernMcpServerOptions): MCPServer {
  checkRun("governMcpServer", options);
  const { governor, run } = options;
  if (
    typeof governor?.unavailableTools !== "function" ||
    typeof governor.toolPolicy !== "function"
  ) {
    throw new GovernorError(
      "invalid_options",
      "governMcpServer: governor must be a Governor (createGovernor()), the one of run",
    );
  }
  const policyServer = options.server ?? server?.name;
  if (typeof server?.callTool !== "function" || typeof server.listTools !== "function") {
    throw new GovernorError(
      "invalid_options",
      "governMcpServer: server must be an Agents SDK MCPServer (callTool, listTools), e.g. an MCPServerStdio",
    );
  }
  const annotations = new Map<string, ToolAnnotations>();
  const inFlight = new Map<string, Promise<void>>();
  const reconnector = reconnectorOf(server, options, governor);

  const send = async (
    name: string,
    ctx: AttemptContext,
    meta: Meta,
    signal: AbortSignal,
  ): Promise<CallToolResult> => {
    const merged = { ...(meta ?? {}), ...ctx.meta };
    const sendMeta = Object.keys(merged).length > 0 ? merged : undefined;
    const args = { ...ctx.args };
    if (typeof server.callToolResult === "function") {
      return server.callToolResult(name, args, sendMeta, { signal });
    }
    return fromContent(await server.callTool(name, args, sendMeta, { signal }));
  };

  /** One attempt; with a reconnect, one more send once a server found gone is back. */
  const callOnce = async (
    name: string,
    ctx: AttemptContext,
    meta: Meta,
    signal: AbortSignal,
  ): Promise<CallToolResult> => {
    if (reconnector === undefined) return send(name, ctx, meta, signal);
    const seen = reconnector.generation;
    try {
      return await send(name, ctx, meta, signal);
    } catch (error) {
      if (!isGone(error)) throw error;
    }
    // Nothing was sent; once the server is back, sent once more unless the attempt was cut or
    // the run ended meanwhile (`beforeSending`).
    await ctx.beforeSending(reconnector.renew(seen, signal));
    return send(name, ctx, meta, signal);
  };

  const governedCall = async (
    name: string,
    args: Args,
    meta: Meta,
    callOptions: MCPCallToolOptions | undefined,
  ): Promise<CallToolResult> => {
    // The SDK does not hand callTool its tool-call id, so an identical call is the same logical
    // call (the same key): one sent again after a failure that left a write in doubt is refused.
    // Identical calls of one turn go one after the other, each then judged on its own outcome
    // (a definite refusal frees the key; a success makes the next a new logical call).
    const tool = governor.toolPolicy(name, policyServer);
    const done = await afterIdentical(inFlight, name, args, tool, callOptions?.signal, run.signal);
    try {
      return await judgedCall(name, args, meta, callOptions);
    } finally {
      done();
    }
  };

  const judgedCall = async (
    name: string,
    args: Args,
    meta: Meta,
    callOptions: MCPCallToolOptions | undefined,
  ): Promise<CallToolResult> => {
    const sdk = withoutSiblingCancellation(callOptions?.signal);
    const annotated = annotations.get(name);
    const call: ToolCall = {
      tool: name,
      server: policyServer,
      args: args ?? {},
      ...(sdk.signal !== undefined && { signal: sdk.signal }),
      ...(annotated !== undefined && { annotations: annotated }),
      toFailure: (thrown) =>
        thrown instanceof ReconnectFailed ? thrown.failure() : mapMcpError(thrown),
    };
    // What the server's client threw: observe-only hands it back from run.call as it is.
    let threw: { readonly error: unknown } | undefined;
    try {
      // `ctx.signal` aborts with the run, its deadline and the SDK's signal (the call's own).
      // The attempt's requests are tied to it (both sends of a reconnect alike): a `governedFetch`
      // given to the server sends none of an attempt whose run ended before it went out.
      const outcome = await run.call<CallToolResult>(call, (ctx) =>
        withAttemptSends(ctx, run, name, () => callOnce(name, ctx, meta, ctx.signal)).catch(
          (error: unknown) => {
            threw = { error };
            throw error;
          },
        ),
      );
      const result = toolResult(settle(outcome, name, policyServer), name) as CallToolResult;
      // A success nested too deep for the SDK to write down: @governor/mcp's one check.
      return result.isError === true ? result : (deliverableResult(result as never, name) as never);
    } catch (err) {
      // Observe-only: the model reads what the SDK's default error function gives it, as
      // without Governor, and run() goes on. Enforcing, run.call never rejects with it.
      if (threw !== undefined && err === threw.error) {
        return { content: [{ type: "text", text: SDK_TOOL_ERROR_TEXT }], isError: true };
      }
      if (GovernorError.isInstance(err) && err.code === "run_ended") throw err;
      throw HostError.from(err, name, policyServer);
    } finally {
      sdk.unlink();
    }
  };

  const governed = {
    get name() {
      return server.name;
    },
    cacheToolsList: false,
    get toolFilter() {
      return server.toolFilter;
    },
    get toolMetaResolver() {
      return server.toolMetaResolver;
    },
    get customDataExtractor() {
      return server.customDataExtractor;
    },
    get toolInputGuardrails() {
      return server.toolInputGuardrails;
    },
    get toolOutputGuardrails() {
      return server.toolOutputGuardrails;
    },
    get useStructuredContent() {
      return server.useStructuredContent;
    },
    // Null, not undefined: the SDK then rethrows a tool's error (a stop, a HostError) out of
    // run() instead of formatting it for the model.
    errorFunction: null,
    connect: () => server.connect(),
    close: () => server.close(),
    invalidateToolsCache: () => server.invalidateToolsCache(),
    async listTools() {
      const tools = await listWithReconnect(server, reconnector, run.signal);
      annotations.clear();
      for (const tool of tools) {
        const a = toolAnnotations(tool);
        if (a !== undefined) annotations.set(tool.name, a);
      }
      const unavailable = new Set(
        await governor.unavailableTools(
          tools.map((t) => t.name),
          policyServer,
        ),
      );
      return tools.filter(
        (t) =>
          !unavailable.has(t.name) && governor.toolPolicy(t.name, policyServer).access !== "deny",
      );
    },
    callToolResult: (name: string, args: Args, meta?: Meta, callOptions?: MCPCallToolOptions) =>
      governedCall(name, args, meta, callOptions),
    async callTool(name: string, args: Args, meta?: Meta, callOptions?: MCPCallToolOptions) {
      return toContent(await governedCall(name, args, meta, callOptions));
    },
  } as unknown as MCPServer & Record<string, unknown>;
  for (const method of RESOURCE_METHODS) {
    const fn = (server as unknown as Record<string, unknown>)[method];
    if (typeof fn === "function") governed[method] = (...a: unknown[]) => fn.apply(server, a);
  }
  return governed;
}

/**
 * Waits until the identical calls (tool and canonical arguments, as Governor compares them: the
 * one the key travels in aside, `withoutKeyArgument`) made before through this wrapper
 * ended; returns what the caller runs when its own call ended. Arguments that cannot be read wait
 * for nothing: Governor refuses them before sending. The wait also ends when the call's own
 * signal aborts (sibling cancellation aside, as for the call itself) or the run's does: the call
 * then goes on to `run.call`, which refuses to send an aborted call and says why, so an abort is
 * answered at once instead of after the identical call before it.
 */
async function afterIdentical(
  inFlight: Map<string, Promise<void>>,
  name: string,
  args: Args,
  tool: ToolPolicy,
  callSignal: AbortSignal | undefined,
  runSignal: AbortSignal,
): Promise<() => void> {
  let id: string;
  try {
    // Without the argument the key travels in: Governor writes it over the model's own value, so
    // two calls that differ only there are one call on the wire, and wait for each other.
    id = `${name}\0${canonicalJson(withoutKeyArgument(args ?? {}, tool))}`;
  } catch {
    return () => undefined;
  }
  const before = inFlight.get(id);
  let release = (): void => undefined;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = before === undefined ? mine : before.then(() => mine);
  inFlight.set(id, tail);
  if (before !== undefined) await untilAborted(before, callSignal, runSignal);
  return () => {
    release();
    if (inFlight.get(id) === tail) inFlight.delete(id);
  };
}

/** `waited`, or sooner when `callSignal` (not by sibling cancellation) or `runSignal` aborts. */
async function untilAborted(
  waited: Promise<void>,
  callSignal: AbortSignal | undefined,
  runSignal: AbortSignal,
): Promise<void> {
  const own = withoutSiblingCancellation(callSignal);
  const { signal, unlink } = linkSignals(runSignal, own.signal);
  if (signal.aborted) {
    own.unlink();
    return;
  }
  let onAbort = (): void => undefined;
  try {
    await Promise.race([
      waited,
      new Promise<void>((resolve) => {
        onAbort = resolve;
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    signal.removeEventListener("abort", onAbort);
    unlink();
    own.unlink();
  }
}

/** Whether a call found the server gone before sending anything (`Not connected`, not initialized). */
function isGone(error: unknown): boolean {
  return mapMcpError(error).local === "not_connected";
}

/**
 * The server's tools; with a reconnect, once more after bringing back a server found gone. The
 * wait for the reconnect ends with the run (`run.signal`: its abort, end or deadline): the SDK
 * gives a listing no signal of its own.
 */
async function listWithReconnect(
  server: MCPServer,
  reconnector: Reconnector | undefined,
  signal: AbortSignal,
) {
  if (reconnector === undefined) return server.listTools();
  const seen = reconnector.generation;
  try {
    return await server.listTools();
  } catch (error) {
    if (!isGone(error)) throw error;
  }
  await reconnector.renew(seen, signal);
  return server.listTools();
}

/** The reconnect of `options`, checked; undefined without one. */
function reconnectorOf(
  server: MCPServer,
  options: GovernMcpServerOptions,
  governor: Governor,
): Reconnector | undefined {
  const { reconnect, reconnectTimeoutMs } = options;
  if (
    reconnect !== undefined &&
    typeof reconnect !== "boolean" &&
    typeof reconnect !== "function"
  ) {
    throw new GovernorError(
      "invalid_options",
      `governMcpServer: reconnect must be true, false or a function (signal) => Promise<void>, got ${typeof reconnect}`,
    );
  }
  if (
    reconnectTimeoutMs !== undefined &&
    (typeof reconnectTimeoutMs !== "number" || !(reconnectTimeoutMs > 0))
  ) {
    throw new GovernorError(
      "invalid_options",
      `governMcpServer: reconnectTimeoutMs must be a positive number of ms, got ${String(reconnectTimeoutMs)}`,
    );
  }
  if (reconnect === undefined || reconnect === false) return undefined;
  // One reconnect at a time per server and hook, shared by the wrappers of every run: two runs
  // each reconnecting the same server would close the connection the other just made.
  let byHook = shared.get(server);
  if (byHook === undefined) {
    byHook = new Map();
    shared.set(server, byHook);
  }
  const known = byHook.get(reconnect);
  if (known !== undefined) return known;
  const hook =
    reconnect === true
      ? async () => {
          // A server that lost its process still holds its client: close it before starting anew.
          await server.close().catch(() => undefined);
          await server.connect();
        }
      : reconnect;
  const { maxLength, emails, patterns } = governor.policy.redaction;
  const made = createReconnector(hook, {
    limitMs: reconnectTimeoutMs ?? DEFAULT_RECONNECT_MS,
    // What a hook threw may quote a server's answer: redacted as the policy redacts host texts.
    describe: (error) =>
      redact(error instanceof Error ? error.message : String(error), {
        maxLength,
        emails,
        patterns,
      }),
  });
  byHook.set(reconnect, made);
  return made;
}

/** The reconnects of each server, by hook (`true` for the server's own close and connect). */
const shared = new WeakMap<
  MCPServer,
  Map<true | ((signal: AbortSignal) => Promise<void>), Reconnector>
>();
