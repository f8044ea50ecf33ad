/**
 * Shared fixtures of the test/openai-agents*.test.ts files: a scripted model that implements the
 * Agents SDK's own `Model` interface (no network) and reacts to the tool outputs it reads, and a
 * runner with tracing off. The SDK needs Node 22; these tests skip on Node 20.
 */
import type {
  AgentOutputItem,
  Model,
  ModelRequest,
  ModelResponse,
  StreamEvent,
} from "@openai/agents";
import { Runner, Usage } from "@openai/agents";

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
