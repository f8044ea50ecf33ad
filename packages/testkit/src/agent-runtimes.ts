import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { AgentRuntime, Observation, ToolRequest } from "./agent.ts";
import type { FaultConnection } from "./agent-connection.ts";
import { fixtureSecrets } from "./secrets.ts";

/** The text a model reads from a tool result: its text blocks, joined by newlines. */
export function resultText(result: Pick<CallToolResult, "content">): string {
  const content = Array.isArray(result.content) ? result.content : [];
  return content
    .map((block) => (block.type === "text" ? block.text : `[${block.type}]`))
    .join("\n");
}

/** What a model reads when the client threw: the error's message (`MCP error -32000: …`). */
export function thrownText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A stack frame line: `at fn (/abs/path/file.ts:12:3)` or `at file:///…:12:3`. */
const STACK_FRAME = /^\s*at\s.*(?:\/|\\|file:)[^\s)]*:\d+:\d+\)?\s*$/m;

/**
 * Whether a model-visible text leaks what the fixture hides in raw errors: any of
 * `fixtureSecrets(secret)` (keys, tokens, a connection string, its password, an absolute path) or a
 * stack frame.
 */
export function leaksSecrets(text: string, secrets: readonly string[] = fixtureSecrets()): boolean {
  return secrets.some((s) => text.includes(s)) || STACK_FRAME.test(text);
}

/** Options shared by the runtimes without Governor. */
export interface PlainRuntimeOptions {
  /**
   * The SDK request timeout of one attempt. No demo task waits on a timeout: it only bounds a
   * hang. @default 3000
   */
  readonly timeoutMs?: number;
  /** Called after each model call with the attempts it took (for retry counts). */
  readonly onCall?: (attempts: number) => void;
}

/** One attempt: a result, or what the client threw turned into text. */
async function attempt(
  connection: FaultConnection,
  request: ToolRequest,
  timeoutMs: number,
): Promise<Observation> {
  // The host reconnects a closed connection before the next call (every runtime does this).
  await connection.reconnect();
  try {
    const result = (await connection.client.callTool(
      { name: request.name, arguments: { ...request.arguments } },
      undefined,
      { timeout: timeoutMs },
    )) as CallToolResult;
    return { isError: result.isError === true, text: resultText(result) };
  } catch (error) {
    return { isError: true, text: thrownText(error) };
  }
}

/**
 * The naive runtime: one attempt per model call; the raw result or the raw error text goes
 * straight to the model. No retries, no classification.
 */
export function naiveRuntime(
  connection: FaultConnection,
  options: PlainRuntimeOptions = {},
): AgentRuntime {
  const timeoutMs = options.timeoutMs ?? 3000;
  return {
    startTask: () => ({
      async call(request) {
        const observation = await attempt(connection, request, timeoutMs);
        options.onCall?.(1);
        return { kind: "result", observation };
      },
      end() {},
    }),
  };
}

/** Options of {@link blindRetryRuntime}. */
export interface BlindRetryOptions extends PlainRuntimeOptions {
  /** Attempts per model call, the first included. @default 3 */
  readonly attempts?: number;
}

/**
 * The blind-retry runtime: every failure (an `isError` result or a throw) is retried at once, up
 * to `attempts` in all, with no idempotency key and no classification; then the last raw error
 * goes to the model.
 */
export function blindRetryRuntime(
  connection: FaultConnection,
  options: BlindRetryOptions = {},
): AgentRuntime {
  const timeoutMs = options.timeoutMs ?? 3000;
  const attempts = options.attempts ?? 3;
  return {
    startTask: () => ({
      async call(request) {
        let observation: Observation = { isError: true, text: "no attempt made" };
        let made = 0;
        while (made < attempts) {
          made += 1;
          observation = await attempt(connection, request, timeoutMs);
          if (!observation.isError) break;
        }
        options.onCall?.(made);
        return { kind: "result", observation };
      },
      end() {},
    }),
  };
}
