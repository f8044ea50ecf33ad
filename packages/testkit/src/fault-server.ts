import { STATUS_CODES } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type {
  CallToolResult,
  RequestId,
  ServerNotification,
  ServerRequest,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { FaultState, type Scenario, sameArguments } from "./scenario.ts";
import { crashMessage, DEFAULT_SECRET } from "./secrets.ts";
import { installResponseMangler } from "./wire.ts";

/** Where an idempotency key travels in a request: `params._meta[IDEMPOTENCY_META_KEY]`. */
export const IDEMPOTENCY_META_KEY = "io.governor/idempotency-key";

/** Where the draft MCP tool-failure metadata goes in a result's `_meta`. */
export const TOOL_FAILURE_META_KEY = "io.modelcontextprotocol/toolFailure";

/** The ids `get_note` knows from the start. */
export const SEED_NOTE_IDS = ["welcome", "release-notes"] as const;

/** The largest amount `transfer_funds` accepts. */
export const DAILY_TRANSFER_LIMIT = 1000;

/** Tool names of {@link createFaultServer} (a contract: tests, demo and benchmarks use them). */
export const FAULT_TOOL_NAMES = [
  "get_note",
  "search_notes",
  "create_note",
  "append_log",
  "set_status",
  "flaky_fetch",
  "rate_limited",
  "delete_account",
  "transfer_funds",
  "crash_with_stack",
  "slow",
  "exit_now",
  "write_then_drop",
  "junk_stdout",
  "typed_note",
] as const;

export type FaultToolName = (typeof FAULT_TOOL_NAMES)[number];

/** What a hook learns about the call that triggered it. */
export interface FaultContext {
  tool: string;
  requestId: RequestId;
  /** The Streamable HTTP session, when there is one. */
  sessionId: string | undefined;
}

export interface FaultServerOptions {
  /** Append one JSON line per committed write (see `Effect`); counters go next to it. */
  effectsFile?: string;
  /** Per-tool scripts: the Nth call of a tool runs the Nth step. */
  scenario?: Scenario;
  /** Embedded in raw errors (`crash_with_stack`); defaults to a fake `sk-live-…` key. */
  secret?: string;
  /**
   * Shared state (counters, effects). When given, `effectsFile` and `scenario` are ignored: the
   * state already has them. The HTTP server passes one state to the server of every session.
   */
  state?: FaultState;
  /**
   * Makes the server go away mid-call (`exit_now`, the `exit` step, and after the commit of a
   * `drop_after_commit` step). stdio: `process.exit`; HTTP: destroy the request's socket.
   * Default: close this server's transport (the client sees `-32000 Connection closed`).
   */
  onExit?: (context: FaultContext) => void | Promise<void>;
  /** Writes one raw line to the wire (`junk_stdout`); stdio wires it to stdout. Default: nothing. */
  writeRaw?: (line: string) => void;
  /** Server name reported at initialization. */
  name?: string;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

interface Note {
  id: string;
  title: string;
  body: string;
}

const SEED_NOTES: readonly Note[] = [
  {
    id: "welcome",
    title: "Welcome",
    body: "Welcome to the notes service. Use search_notes to find notes and create_note to add one.",
  },
  {
    id: "release-notes",
    title: "Release notes",
    body: "v1.2.0: faster search. v1.1.0: notes can be archived.",
  },
];

function text(value: string): CallToolResult {
  return { content: [{ type: "text", text: value }] };
}

function toolError(value: string, structured?: unknown): CallToolResult {
  return {
    content: [{ type: "text", text: value }],
    isError: true,
    ...(structured !== undefined
      ? { structuredContent: structured as Record<string, unknown> }
      : {}),
  };
}

function failureClass(status: number): string | undefined {
  if (status === 429) return "rate_limited";
  if (status === 408 || status === 504) return "timeout";
  if (status === 401) return "unauthorized";
  if (status === 403) return "forbidden";
  if (status === 404) return "not_found";
  if (status === 409) return "conflict";
  if (status === 400 || status === 422) return "invalid_argument";
  if (status === 502 || status === 503) return "unavailable";
  return undefined;
}

/**
 * An `isError` result for an HTTP-like status: text `"<status> <reason>"` (plus `": retry after N
 * seconds"`), `structuredContent.error.{status, retryAfterMs}`, and the draft tool-failure `_meta`.
 */
export function statusResult(status: number, retryAfterSeconds?: number): CallToolResult {
  const reason = STATUS_CODES[status] ?? "Error";
  const retryAfterMs = retryAfterSeconds !== undefined ? retryAfterSeconds * 1000 : undefined;
  const suffix =
    retryAfterSeconds !== undefined ? `: retry after ${retryAfterSeconds} seconds` : "";
  const cls = failureClass(status);
  return {
    content: [{ type: "text", text: `${status} ${reason}${suffix}` }],
    isError: true,
    structuredContent: {
      error: { status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) },
    },
    _meta: {
      [TOOL_FAILURE_META_KEY]: {
        ...(cls !== undefined ? { class: cls } : {}),
        code: String(status),
        retryable: status === 429 || status === 408 || status >= 500,
        ...(retryAfterMs !== undefined
          ? { retryNotBefore: new Date(Date.now() + retryAfterMs).toISOString() }
          : {}),
      },
    },
  };
}

/** Resolves `true` after `ms`, or `false` as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve(false);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Never answers; settles (with a result nobody receives) when the request is cancelled. */
function neverAnswer(signal: AbortSignal): Promise<CallToolResult> {
  return new Promise((resolve) => {
    const done = () => resolve(toolError("request cancelled"));
    if (signal.aborted) done();
    else signal.addEventListener("abort", done, { once: true });
  });
}

function idempotencyKey(extra: Extra, args: { idempotency_key?: string | undefined }) {
  const meta = extra._meta as Record<string, unknown> | undefined;
  const fromMeta = meta?.[IDEMPOTENCY_META_KEY];
  if (typeof fromMeta === "string" && fromMeta !== "") return fromMeta;
  return args.idempotency_key;
}

/**
 * The fault-injecting MCP server, built with the SDK's `McpServer`. Every tool runs its scripted
 * step first (see `FaultStep`), then its own behaviour. See the package README for the tools.
 */
export function createFaultServer(options: FaultServerOptions = {}): McpServer {
  const state =
    options.state ??
    new FaultState({
      ...(options.effectsFile !== undefined ? { effectsFile: options.effectsFile } : {}),
      ...(options.scenario !== undefined ? { scenario: options.scenario } : {}),
    });
  const secret = options.secret ?? DEFAULT_SECRET;
  const mcp = new McpServer(
    { name: options.name ?? "governor-fault-server", version: "0.1.0" },
    { capabilities: { tools: {} } },
  );
  const malformed = installResponseMangler(mcp);
  const exit = async (context: FaultContext): Promise<void> => {
    if (options.onExit) await options.onExit(context);
    else await mcp.close();
  };

  /** Runs the scripted step of this call, then (unless the step replaces it) the tool itself. */
  const scripted = async (
    tool: FaultToolName,
    extra: Extra,
    body: () => CallToolResult | Promise<CallToolResult>,
  ): Promise<CallToolResult> => {
    const step = state.nextStep(tool);
    const context: FaultContext = { tool, requestId: extra.requestId, sessionId: extra.sessionId };
    switch (step.kind) {
      case "ok":
        return body();
      case "error":
        return toolError(step.text, step.structured);
      case "status":
        return statusResult(step.status, step.retryAfterSeconds);
      case "hang":
        if (!(await sleep(step.ms, extra.signal))) return toolError("request cancelled");
        return body();
      case "hang_after_commit": {
        const result = await body();
        await sleep(step.ms, extra.signal);
        return result;
      }
      case "exit":
        await exit(context);
        return neverAnswer(extra.signal);
      case "drop_after_commit":
        await body();
        await exit(context);
        return neverAnswer(extra.signal);
      case "malformed":
        malformed.add(extra.requestId);
        return body();
    }
  };

  const createdNotes = (): Note[] =>
    state
      .effects()
      .filter((e) => e.tool === "create_note")
      .map((e, i) => ({
        id: `note-${i + 1}`,
        title: String(e.args.title),
        body: String(e.args.body),
      }));
  const allNotes = (): Note[] => [...SEED_NOTES, ...createdNotes()];
  const findNote = (id: string): Note | undefined => allNotes().find((n) => n.id === id);
  const notFound = (id: string) =>
    toolError(`No note with id "${id}". Known ids: ${SEED_NOTE_IDS.join(", ")}`);

  mcp.registerTool(
    "get_note",
    {
      description: `Read one note by id (known ids: ${SEED_NOTE_IDS.join(", ")}).`,
      inputSchema: { id: z.string() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      scripted("get_note", extra, () => {
        const note = findNote(args.id);
        if (!note) return notFound(args.id);
        return text(`# ${note.title}\n\n${note.body}`);
      }),
  );

  mcp.registerTool(
    "search_notes",
    {
      description: "Search notes by title and body. `limit` must be between 1 and 50 (default 10).",
      inputSchema: { query: z.string(), limit: z.number().int().optional() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args, extra) =>
      scripted("search_notes", extra, () => {
        const limit = args.limit ?? 10;
        if (limit < 1 || limit > 50) {
          return toolError("Invalid argument: limit must be between 1 and 50");
        }
        const q = args.query.toLowerCase();
        const hits = allNotes()
          .filter((n) => n.title.toLowerCase().includes(q) || n.body.toLowerCase().includes(q))
          .slice(0, limit);
        if (hits.length === 0) return text(`No notes match "${args.query}".`);
        return text(
          `Found ${hits.length} note(s): ${hits.map((n) => `${n.id} (${n.title})`).join(", ")}`,
        );
      }),
  );

  mcp.registerTool(
    "create_note",
    {
      description:
        "Create a note. Mutating; honors idempotency keys (_meta io.governor/idempotency-key or the idempotency_key argument).",
      inputSchema: { title: z.string(), body: z.string(), idempotency_key: z.string().optional() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, extra) =>
      scripted("create_note", extra, () => {
        const key = idempotencyKey(extra, args);
        const previous = key !== undefined ? state.findByKey("create_note", key) : undefined;
        if (previous && !sameArguments(previous.effect.args, args)) {
          return toolError(
            `Idempotency key "${key}" was already used with different arguments for create_note`,
          );
        }
        const commit = state.commit("create_note", { ...args }, key, true);
        const id = `note-${commit.ordinal}`;
        return {
          content: [
            {
              type: "text",
              text: `Created note "${String(commit.effect.args.title)}" with id ${id}${commit.fresh ? "" : " (replayed)"}`,
            },
          ],
          structuredContent: { id, replayed: !commit.fresh },
        };
      }),
  );

  mcp.registerTool(
    "append_log",
    {
      description: "Append one line to the log. Mutating; does NOT honor idempotency keys.",
      inputSchema: { line: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, extra) =>
      scripted("append_log", extra, () => {
        const key = idempotencyKey(extra, {});
        state.commit("append_log", { ...args }, key, false);
        const lines = state.effects().filter((e) => e.tool === "append_log").length;
        return text(`Appended 1 line (the log has ${lines} line(s))`);
      }),
  );

  mcp.registerTool(
    "set_status",
    {
      description:
        "Set a note's status. Idempotent: setting the same status again changes nothing.",
      inputSchema: { id: z.string(), status: z.enum(["draft", "published", "archived"]) },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    (args, extra) =>
      scripted("set_status", extra, () => {
        if (!findNote(args.id)) return notFound(args.id);
        if (state.statuses.get(args.id) !== args.status) {
          state.commit("set_status", { ...args }, idempotencyKey(extra, {}), false);
          state.statuses.set(args.id, args.status);
        }
        return text(`Status of "${args.id}" is ${args.status}`);
      }),
  );

  mcp.registerTool(
    "flaky_fetch",
    {
      description: "Fetch a URL. By default answers 503 Service Unavailable twice, then succeeds.",
      inputSchema: { url: z.string() },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    (args, extra) =>
      scripted("flaky_fetch", extra, () =>
        text(`200 OK: fetched ${args.url} (attempt ${state.calls("flaky_fetch")})`),
      ),
  );

  mcp.registerTool(
    "rate_limited",
    {
      description: "Always rate limited: 429 with a retry-after of 1 second.",
      inputSchema: {},
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    (_args, extra) => scripted("rate_limited", extra, () => statusResult(429, 1)),
  );

  mcp.registerTool(
    "delete_account",
    {
      description: "Delete an account. The fixture's token never has the scope to do it.",
      inputSchema: { id: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args, extra) =>
      scripted("delete_account", extra, () =>
        toolError(
          `Permission denied: the API token lacks the accounts:delete scope required to delete account "${args.id}"`,
        ),
      ),
  );

  mcp.registerTool(
    "transfer_funds",
    {
      description: `Transfer an amount. Refused above the daily limit (${DAILY_TRANSFER_LIMIT}).`,
      inputSchema: { amount: z.number() },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args, extra) =>
      scripted("transfer_funds", extra, () => {
        if (args.amount > DAILY_TRANSFER_LIMIT) {
          return toolError("Transfer refused: amount exceeds the daily limit");
        }
        state.commit("transfer_funds", { ...args }, idempotencyKey(extra, {}), false);
        return text(`Transferred ${args.amount}`);
      }),
  );

  mcp.registerTool(
    "crash_with_stack",
    {
      description: "Crashes: the error text holds a stack trace, absolute paths and secrets.",
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    (_args, extra) =>
      scripted("crash_with_stack", extra, () => {
        try {
          throw new Error(crashMessage(secret));
        } catch (error) {
          // McpServer would only keep `error.message`; real servers often leak the whole stack.
          return toolError(`Unhandled exception: ${(error as Error).stack ?? String(error)}`);
        }
      }),
  );

  mcp.registerTool(
    "slow",
    {
      description:
        "Sleeps `ms` milliseconds, then answers; stops when the request is cancelled. With `progress_every_ms` and a progress token, sends progress notifications meanwhile.",
      inputSchema: {
        ms: z.number().int().min(0),
        progress_every_ms: z.number().int().min(1).optional(),
      },
      annotations: { readOnlyHint: true },
    },
    (args, extra) =>
      scripted("slow", extra, async () => {
        const token = extra._meta?.progressToken;
        const every = args.progress_every_ms;
        let ticker: NodeJS.Timeout | undefined;
        if (token !== undefined && every !== undefined) {
          let progress = 0;
          ticker = setInterval(() => {
            progress++;
            extra
              .sendNotification({
                method: "notifications/progress",
                params: { progressToken: token, progress },
              })
              .catch(() => {});
          }, every);
        }
        try {
          if (!(await sleep(args.ms, extra.signal))) return toolError("request cancelled");
          return text(`Slept ${args.ms} ms`);
        } finally {
          clearInterval(ticker);
        }
      }),
  );

  mcp.registerTool(
    "exit_now",
    {
      description:
        "The server goes away mid-call (stdio: the process exits; HTTP: the connection drops).",
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    (_args, extra) =>
      scripted("exit_now", extra, async () => {
        await exit({ tool: "exit_now", requestId: extra.requestId, sessionId: extra.sessionId });
        return neverAnswer(extra.signal);
      }),
  );

  mcp.registerTool(
    "write_then_drop",
    {
      description:
        "Commits a write; by default the first response is then lost. Honors idempotency keys.",
      inputSchema: { title: z.string(), idempotency_key: z.string().optional() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, extra) =>
      scripted("write_then_drop", extra, () => {
        const key = idempotencyKey(extra, args);
        const commit = state.commit("write_then_drop", { ...args }, key, true);
        return {
          content: [
            {
              type: "text",
              text: `Wrote "${String(commit.effect.args.title)}" (write ${commit.ordinal})${commit.fresh ? "" : " (replayed)"}`,
            },
          ],
          structuredContent: { write: commit.ordinal, replayed: !commit.fresh },
        };
      }),
  );

  mcp.registerTool(
    "junk_stdout",
    {
      description: "Writes a line that is not JSON-RPC to the wire (stdio) and never answers.",
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    (_args, extra) =>
      scripted("junk_stdout", extra, () => {
        options.writeRaw?.("this line is not JSON-RPC {oops");
        return neverAnswer(extra.signal);
      }),
  );

  mcp.registerTool(
    "typed_note",
    {
      description:
        "Like get_note, with an output schema; its error result carries structuredContent that does not match it.",
      inputSchema: { id: z.string() },
      outputSchema: { id: z.string(), title: z.string() },
      annotations: { readOnlyHint: true },
    },
    (args, extra) =>
      scripted("typed_note", extra, () => {
        const note = findNote(args.id);
        if (!note) {
          return toolError(`No note with id "${args.id}". Known ids: ${SEED_NOTE_IDS.join(", ")}`, {
            error: { status: 404, code: "not_found" },
          });
        }
        return {
          content: [{ type: "text", text: note.title }],
          structuredContent: { id: note.id, title: note.title },
        };
      }),
  );

  return mcp;
}
