import {
  createGovernor,
  type GovernorEvent,
  type PolicyInput,
  type RunSummary,
} from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import { type AgentRuntime, type FaultConnection, resultText, thrownText } from "@governor/testkit";

/** The server's name in the demo policy. */
export const DEMO_SERVER = "notes";

/**
 * The demo's policy for the fault server: what each tool does to the world (effects are never
 * taken from an untrusted server's annotations), which tools deduplicate by idempotency key, an
 * alternative for the crashing tool, one rule for the transfer refusal, and short backoffs so the
 * demo runs in a few seconds.
 */
export const DEMO_POLICY: PolicyInput = {
  defaults: { retry: { attempts: 3, baseDelayMs: 20, maxDelayMs: 100, maxHintMs: 1000 } },
  servers: {
    [DEMO_SERVER]: {
      tools: {
        get_note: { effect: "read_only" },
        search_notes: { effect: "read_only" },
        flaky_fetch: { effect: "read_only" },
        crash_with_stack: { effect: "read_only", alternatives: ["search_notes"] },
        set_status: { effect: "idempotent" },
        delete_account: { effect: "idempotent" },
        transfer_funds: {
          effect: "mutating",
          rules: [{ match: "^Transfer refused", action: "stop", reason: "business_rule" }],
        },
        append_log: { effect: "mutating" },
        create_note: { effect: "mutating", idempotency: { honorsKeys: true } },
        write_then_drop: { effect: "mutating", idempotency: { honorsKeys: true } },
      },
    },
  },
};

/** Options of {@link governedRuntime}. */
export interface GovernedRuntimeOptions {
  /** Upper bound of one attempt's SDK timeout. @default 3000 */
  readonly timeoutMs?: number;
  /** Receives each run's summary when its task ends. */
  readonly onSummary?: (summary: RunSummary) => void;
  /** Uniform in [0, 1) for backoff jitter. @default a fixed-seed generator (repeatable runs) */
  readonly random?: () => number;
  readonly policy?: PolicyInput;
  /** Receives every event of the governor (for an event log). */
  readonly onEvent?: (event: GovernorEvent) => void;
}

/** A small seeded generator (mulberry32), so backoff delays repeat from run to run. */
export function seededRandom(seed = 42): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The governed runtime: every call goes through Governor (`governClient`, one run per task); the
 * model reads only `toModelResult(outcome)`, and a `stop` ends the task.
 */
export function governedRuntime(
  connection: FaultConnection,
  options: GovernedRuntimeOptions = {},
): AgentRuntime {
  const governor = createGovernor(options.policy ?? DEMO_POLICY, {
    random: options.random ?? seededRandom(),
    metrics: false,
    // Failures only the host can handle end the run (the default) without a throw.
    onHostError: () => ({ action: "stop" }),
    ...(options.onEvent !== undefined && { onEvent: options.onEvent }),
  });
  const governed = governClient(connection.client, {
    governor,
    server: DEMO_SERVER,
    requestTimeoutMs: options.timeoutMs ?? 3000,
    reconnect: () => connection.reconnect(),
  });
  return {
    startTask(task) {
      // One run per task, named after it: the event log reads task by task.
      const run = governor.startRun({ runId: task.id });
      return {
        async call(request) {
          // A closed connection is reconnected by the adapter (`reconnect` above) before it sends.
          let outcome: Awaited<ReturnType<typeof governed.callTool>>;
          try {
            outcome = await governed.callTool(run, {
              name: request.name,
              arguments: { ...request.arguments },
            });
          } catch (error) {
            // Observe-only passes a thrown failure through, untouched: the model reads its raw
            // text, as with no governor at all.
            return { kind: "result", observation: { isError: true, text: thrownText(error) } };
          }
          const result = toModelResult(outcome);
          const observation = { isError: result.isError === true, text: resultText(result) };
          if (outcome.kind === "stop") return { kind: "stop", reason: outcome.reason, observation };
          return { kind: "result", observation };
        },
        end() {
          options.onSummary?.(run.end());
        },
      };
    },
  };
}
