import { governorRepairToolCall, governorStopCondition, governTools } from "@governor/ai-sdk";
import { createGovernor, type HostError } from "@governor/core";
import { generateText, type LanguageModel, stepCountIs, tool } from "ai";
import { z } from "zod";

/** Your own clients; the tools call them with the AI SDK's abort signal. */
export interface Notes {
  get(id: string, signal?: AbortSignal): Promise<{ id: string; body: string }>;
}
export interface Mail {
  /** Sends once per key: a repeated key returns the first send's result. */
  send(to: string, body: string, key: string, signal?: AbortSignal): Promise<{ id: string }>;
}

const governor = createGovernor({
  tools: {
    get_note: { effect: "read_only" },
    send_email: {
      effect: "mutating",
      // Governor puts the call's key in this argument, the same on every retry of the call.
      idempotency: { argument: "idempotency_key", honorsKeys: true },
    },
  },
});

export async function emailNote(model: LanguageModel, notes: Notes, mail: Mail) {
  const run = governor.startRun();
  const hostErrors: HostError[] = [];
  const uncertainKeys: string[] = [];
  const tools = governTools(
    {
      get_note: tool({
        description: "Read a note by id",
        inputSchema: z.object({ id: z.string() }),
        execute: ({ id }, { abortSignal }) => notes.get(id, abortSignal),
      }),
      send_email: tool({
        description: "Email someone",
        inputSchema: z.object({
          to: z.string(),
          body: z.string(),
          idempotency_key: z.string().optional(),
        }),
        execute: ({ to, body, idempotency_key = "" }, { abortSignal }) =>
          mail.send(to, body, idempotency_key, abortSignal),
      }),
    },
    {
      run,
      // Failures only the host can handle (protocol, session, store): never shown to the model.
      onHostError: (error) => hostErrors.push(error),
      // A write whose outcome is unknown: a person checks it, then governor.settle(key, …).
      onStop: (stop) => stop.idempotencyKey && uncertainKeys.push(stop.idempotencyKey),
    },
  );
  const result = await generateText({
    model,
    tools,
    // Input failing a tool's schema, or an unknown tool, counts against the run too.
    experimental_repairToolCall: governorRepairToolCall(run),
    stopWhen: [stepCountIs(10), governorStopCondition(run)],
    prompt: "Email the welcome note to team@example.com",
  });
  return { text: result.text, summary: run.end(), hostErrors, uncertainKeys };
}
