/**
 * The AI SDK majors the adapter is tested against, loaded on demand: `ai` 6 (the devDependency
 * `ai`) on every Node, `ai` 7 (the alias `ai-v7`, with `@ai-sdk/mcp` 2 as `ai-mcp-v7`) on Node 22
 * and later only, since it requires Node 22. Tests are written against ai 6's types; ai 7 is
 * handed in through the same shape (its runtime API for everything used here is the same, and
 * tsconfig.ai7.json typechecks the adapter's sources against ai 7's own types).
 */
import type { generateText, jsonSchema, stepCountIs, streamText, tool } from "ai";
import type { MockLanguageModelV3 } from "ai/test";
import { beforeAll, type TestContext } from "vitest";

/** What a scripted model step returns (the spec's generate result; ai 7's v4 has the same shape). */
type Generate = Exclude<ConstructorParameters<typeof MockLanguageModelV3>[0], undefined>;
export type Step = Extract<NonNullable<Generate["doGenerate"]>, { content: unknown }>;
export type Prompt = MockLanguageModelV3["doGenerateCalls"][number]["prompt"];

/** The parts of `@ai-sdk/mcp` the tests use (1.x with ai 6, 2.x with ai 7). */
export interface McpModule {
  createMCPClient(config: {
    transport: unknown;
    name?: string;
    onUncaughtError?: (error: unknown) => void;
  }): Promise<McpClient>;
}
export interface McpClient {
  tools(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}
export interface McpStdioModule {
  Experimental_StdioMCPTransport: new (options: {
    command: string;
    args?: string[];
    env?: Record<string, string>;
    stderr?: unknown;
  }) => unknown;
}

export interface Sdk {
  readonly name: string;
  readonly generateText: typeof generateText;
  readonly streamText: typeof streamText;
  readonly stepCountIs: typeof stepCountIs;
  readonly tool: typeof tool;
  readonly jsonSchema: typeof jsonSchema;
  /** A model of the SDK's own spec version (v3 for ai 6, v4 for ai 7) that plays `steps`. */
  readonly scripted: (steps: readonly Step[]) => ScriptedModel;
  readonly mcp: McpModule;
  readonly mcpStdio: McpStdioModule;
}

export interface ScriptedModel {
  /** Pass as `model` (typed for ai 6; ai 7's v4 model is given through the same slot). */
  readonly model: Parameters<typeof generateText>[0]["model"];
  /** Each prompt the model received, generate and stream calls alike, in order. */
  prompts(): Prompt[];
}

export interface SdkEntry {
  readonly name: string;
  /** Why it cannot run on this Node, or undefined when it can. */
  readonly skipReason: string | undefined;
  load(): Promise<Sdk>;
}

interface MockClass {
  new (options: {
    doGenerate?: () => Promise<Step>;
    doStream?: () => Promise<{ stream: ReadableStream<unknown> }>;
  }): {
    doGenerateCalls: { prompt: Prompt }[];
    doStreamCalls: { prompt: Prompt }[];
  };
}

/** The stream parts of one step: what a provider would send for the same content. */
function streamParts(step: Step): unknown[] {
  const parts: unknown[] = [{ type: "stream-start", warnings: [] }];
  step.content.forEach((part, i) => {
    if (part.type === "text") {
      const id = `t${i}`;
      parts.push(
        { type: "text-start", id },
        { type: "text-delta", id, delta: part.text },
        { type: "text-end", id },
      );
    } else {
      parts.push(part);
    }
  });
  parts.push({ type: "finish", finishReason: step.finishReason, usage: step.usage });
  return parts;
}

function toStream(parts: unknown[]): ReadableStream<unknown> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

function scriptedWith(Mock: MockClass): Sdk["scripted"] {
  return (steps) => {
    let next = 0;
    const take = (): Step => {
      const step = steps[next++];
      if (step === undefined) throw new Error(`the script has ${steps.length} steps, no more`);
      return step;
    };
    const mock = new Mock({
      doGenerate: async () => take(),
      doStream: async () => ({ stream: toStream(streamParts(take())) }),
    });
    return {
      model: mock as unknown as ScriptedModel["model"],
      prompts: () => [...mock.doGenerateCalls, ...mock.doStreamCalls].map((c) => c.prompt),
    };
  };
}

export const SDKS: readonly SdkEntry[] = [
  {
    name: "ai 6",
    skipReason: undefined,
    async load() {
      const [ai, test, mcp, mcpStdio] = await Promise.all([
        import("ai"),
        import("ai/test"),
        import("@ai-sdk/mcp"),
        import("@ai-sdk/mcp/mcp-stdio"),
      ]);
      return {
        name: "ai 6",
        generateText: ai.generateText,
        streamText: ai.streamText,
        stepCountIs: ai.stepCountIs,
        tool: ai.tool,
        jsonSchema: ai.jsonSchema,
        scripted: scriptedWith(test.MockLanguageModelV3 as unknown as MockClass),
        mcp: mcp as unknown as McpModule,
        mcpStdio: mcpStdio as unknown as McpStdioModule,
      };
    },
  },
  {
    name: "ai 7",
    skipReason: undefined,
    async load() {
      const [ai, test, mcp, mcpStdio] = await Promise.all([
        import("ai-v7"),
        import("ai-v7/test"),
        import("ai-mcp-v7"),
        import("ai-mcp-v7/mcp-stdio"),
      ]);
      return {
        name: "ai 7",
        generateText: ai.generateText as unknown as Sdk["generateText"],
        streamText: ai.streamText as unknown as Sdk["streamText"],
        stepCountIs: ai.stepCountIs as unknown as Sdk["stepCountIs"],
        tool: ai.tool as unknown as Sdk["tool"],
        jsonSchema: ai.jsonSchema as unknown as Sdk["jsonSchema"],
        scripted: scriptedWith(test.MockLanguageModelV4 as unknown as MockClass),
        mcp: mcp as unknown as McpModule,
        mcpStdio: mcpStdio as unknown as McpStdioModule,
      };
    },
  },
];

const usage: Step["usage"] = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A model step that calls one tool (`input` is sent as the model would, JSON text). */
export function callTool(toolName: string, input: unknown, toolCallId = "call_1"): Step {
  return {
    content: [{ type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls", raw: "tool_calls" },
    usage,
    warnings: [],
  };
}

/** A model step that answers with text. */
export function say(text: string): Step {
  return {
    content: [{ type: "text", text }],
    finishReason: { unified: "stop", raw: "stop" },
    usage,
    warnings: [],
  };
}

/** The tool-result outputs the model was shown in a prompt. */
export function toolOutputs(prompt: Prompt | undefined): unknown[] {
  return (prompt ?? []).flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) => (part.type === "tool-result" ? [part.output] : []))
      : [],
  );
}

export type LoopMode = "generateText" | "streamText";
export const LOOP_MODES: readonly LoopMode[] = ["generateText", "streamText"];

type LoopOptions = Parameters<typeof generateText>[0];
type LoopResult = Awaited<ReturnType<typeof generateText>>;

/** Runs the SDK's real loop, `generateText` or `streamText` (consumed to the end). */
export async function runLoop(
  sdk: Sdk,
  mode: LoopMode,
  options: LoopOptions,
): Promise<Pick<LoopResult, "steps" | "text">> {
  if (mode === "generateText") return await sdk.generateText(options);
  const result = sdk.streamText(options as Parameters<typeof streamText>[0]);
  await result.consumeStream();
  return { steps: await result.steps, text: await result.text };
}

/**
 * For one `describe` of `entry`: loads the SDK before its tests; `use(ctx)` answers it, or skips
 * the test where the SDK cannot run (its `skipReason`); `get()` answers it or undefined (for hooks).
 */
export function useSdk(entry: SdkEntry): {
  get: () => Sdk | undefined;
  use: (ctx: TestContext) => Sdk;
} {
  let sdk: Sdk | undefined;
  beforeAll(async () => {
    if (entry.skipReason === undefined) sdk = await entry.load();
  });
  return {
    get: () => sdk,
    use: (ctx) => {
      if (entry.skipReason !== undefined) ctx.skip(entry.skipReason);
      if (sdk === undefined) throw new Error(`${entry.name} did not load`);
      return sdk;
    },
  };
}
