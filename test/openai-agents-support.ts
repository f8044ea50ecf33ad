/**
 * Shared fixtures of the test/openai-agents*.test.ts files: a scripted model that implements the
 * Agents SDK's own `Model` interface (no network) and reacts to the tool outputs it reads, a
 * runner with tracing off, an agent task run through it, and the testkit's fault server as a child
 * process behind the SDK's own MCPServerStdio. The SDK needs Node 22; these tests skip on Node 20.
 */
import type { PolicyInput } from "@governor/core";
import { type StdioFaultServerOptions, stdioServerParams } from "@governor/testkit";
import type {
  AgentOutputItem,
  Model,
  ModelRequest,
  ModelResponse,
  StreamEvent,
} from "@openai/agents";
import { Agent, type AgentOptions, MCPServerStdio, Runner, Usage } from "@openai/agents";

/** `@openai/agents` 0.20 needs Node 22 or later (the packaging issue). */
export const NODE_MAJOR = Number(process.versions.node.split(".")[0]);
export const SDK_UNSUPPORTED = NODE_MAJOR < 22;
export const SKIP_REASON = `@openai/agents needs Node 22 or later; this is Node ${process.versions.node}`;

/** One tool output the model read in its input. */
export interface SeenResult {
  readonly callId: string;
  readonly name: string;
  readonly text: string;
}

/** What the scripted model knows when it decides its next step. */
export interface ModelView {
  /** 1 for the first model call of the run. */
  readonly turn: number;
  /** Every tool output in the input, oldest first. */
  readonly results: readonly SeenResult[];
  /** The outputs of the previous turn's calls. */
  readonly last: readonly SeenResult[];
}

/** The model's next step: call tools, or answer with a final text. */
export type Step =
  | { readonly calls: readonly { readonly name: string; readonly args: Record<string, unknown> }[] }
  | { readonly say: string };

function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (typeof output === "object" && output !== null) {
    const o = output as { type?: unknown; text?: unknown };
    if ((o.type === "text" || o.type === "input_text") && typeof o.text === "string") return o.text;
    if (Array.isArray(output)) return output.map(outputText).join("\n");
  }
  return JSON.stringify(output);
}

function seenResults(input: ModelRequest["input"]): SeenResult[] {
  if (typeof input === "string") return [];
  const out: SeenResult[] = [];
  for (const item of input) {
    const i = item as { type?: string; callId?: string; name?: string; output?: unknown };
    if (i.type === "function_call_result") {
      out.push({ callId: String(i.callId), name: String(i.name), text: outputText(i.output) });
    }
  }
  return out;
}

/**
 * A scripted model: `react` sees the tool outputs so far and returns the next step. It records
 * every view, so a test can assert what the model read.
 */
export class ReactiveModel implements Model {
  readonly views: ModelView[] = [];
  private callSeq = 0;
  private seenCount = 0;

  constructor(private readonly react: (view: ModelView) => Step) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const results = seenResults(request.input);
    const view: ModelView = {
      turn: this.views.length + 1,
      results,
      last: results.slice(this.seenCount),
    };
    this.seenCount = results.length;
    this.views.push(view);
    const step = this.react(view);
    const output: AgentOutputItem[] =
      "say" in step
        ? [
            {
              type: "message",
              role: "assistant",
              status: "completed",
              content: [{ type: "output_text", text: step.say }],
            },
          ]
        : step.calls.map((c) => ({
            type: "function_call" as const,
            callId: `call_${++this.callSeq}`,
            name: c.name,
            arguments: JSON.stringify(c.args),
            status: "completed" as const,
          }));
    return { usage: new Usage(), output, responseId: `resp_${view.turn}` };
  }

  /** The same steps as one `response_done` event (what a provider's stream ends with). */
  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const response = await this.getResponse(request);
    yield {
      type: "response_done",
      response: {
        id: response.responseId ?? "resp",
        usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        // The stream's item type is narrower than AgentOutputItem; ours are assistant items.
        output: response.output as unknown as Extract<
          StreamEvent,
          { type: "response_done" }
        >["response"]["output"],
      },
    };
  }

  /** Every text the model read from tools, in order. */
  texts(): string[] {
    return this.views.at(-1)?.results.map((r) => r.text) ?? [];
  }
}

/** A runner with tracing off (it would export to OpenAI otherwise). */
export function testRunner(): Runner {
  return new Runner({ tracingDisabled: true });
}

/** Retries fast (1–5 ms backoff), no shared retry budget or breaker in the way. */
export const FAST_RETRIES = {
  defaults: { retry: { baseDelayMs: 1, maxDelayMs: 5 }, breaker: { threshold: 100 } },
  retryBudget: { reserve: 10_000 },
} as const satisfies PolicyInput;

/** What one agent task ended with: the model (what it read), the final output or what run() threw. */
export interface AgentTask {
  readonly model: ReactiveModel;
  readonly output: unknown;
  readonly error: unknown;
}

/**
 * Runs one agent task ("notes", "Use the tools.") with a {@link ReactiveModel} through the SDK's
 * real Runner; answers what run() gave or threw.
 */
export async function runTask(
  agent: Pick<AgentOptions, "tools" | "mcpServers">,
  react: (view: ModelView) => Step,
  { input = "Do the task.", maxTurns = 6 }: { input?: string; maxTurns?: number } = {},
): Promise<AgentTask> {
  const model = new ReactiveModel(react);
  const task = new Agent({ name: "notes", instructions: "Use the tools.", model, ...agent });
  try {
    const result = await testRunner().run(task, input, { maxTurns });
    return { model, output: result.finalOutput, error: undefined };
  } catch (error) {
    return { model, output: undefined, error };
  }
}

/** What `pending` rejected with, or undefined when it resolved. */
export function rejectionOf(pending: Promise<unknown>): Promise<unknown> {
  return pending.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/**
 * The testkit's fault server (`fault`: its scenario, effects file…) as a child process, through
 * the Agents SDK's own MCPServerStdio named `name`, connected. It joins `opened` before it
 * connects, so a server that fails to connect is closed with the others.
 */
export async function stdioFaultServer(
  name: string,
  opened: MCPServerStdio[],
  fault: StdioFaultServerOptions = {},
  { cacheToolsList = false }: { cacheToolsList?: boolean } = {},
): Promise<MCPServerStdio> {
  const params = stdioServerParams(fault);
  const server = new MCPServerStdio({
    name,
    command: params.command,
    args: params.args ?? [],
    ...(cacheToolsList && { cacheToolsList }),
    // Spawning the fault server from its TypeScript sources can take seconds on a busy machine.
    clientSessionTimeoutSeconds: 60,
  });
  opened.push(server);
  await server.connect();
  return server;
}
