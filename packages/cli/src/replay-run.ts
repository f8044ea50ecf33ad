import type {
  Action,
  BudgetName,
  CallEvent,
  DecisionEvent,
  GovernorEvent,
  Policy,
  Reason,
  RunEndEvent,
} from "@governor/core";
import {
  classify,
  type Decision,
  decide,
  resolveEffect,
  resolveToolPolicy,
} from "@governor/core/judge";

// Re-decides one recorded run under another policy. Pure: a function of the run's events and the
// policy. The walk follows the log call by call and stops where the log cannot say what would
// have happened next (the run "diverges"): after that point nothing is guessed.

/** A decision as compared: the action and its reason. `none`: the call was made, nothing decided. */
export interface DecisionView {
  readonly action: Action | "none";
  readonly reason: Reason | "ok";
}

/** One decision that the replay changed. */
export interface ReplayChange {
  readonly runId: string;
  /** The call's number in the run (1 = the first). */
  readonly call: number;
  readonly tool: string;
  readonly fingerprint: string;
  readonly before: DecisionView;
  readonly after: DecisionView;
}

/** How a run ended: a stop reason or `completed`, at which call. */
export interface RunEnd {
  readonly reason: string;
  readonly call: number | null;
  readonly budget?: BudgetName;
}

/** The replay of one run. */
export interface RunReplay {
  readonly runId: string;
  /** Decisions re-decided (failed attempts the replay reached). */
  readonly decisions: number;
  readonly changes: ReplayChange[];
  readonly before: RunEnd;
  /** Where the replayed run ends; `null` when it diverged first. */
  readonly after: RunEnd | null;
  readonly effect: "same" | "stopped_earlier" | "stopped_later" | "other_reason" | "diverged";
  /** Attempts the recorded run made after the replayed stop. */
  readonly callsSaved: number;
  /** At least this many attempts more than the recorded run (a lower bound: the log ends). */
  readonly callsAdded: number;
  /** Where and why the replay could not follow the log any further. */
  readonly diverged?: { readonly call: number; readonly why: string };
  /** Why the run could not be replayed at all. */
  readonly unreplayable?: string;
}

interface Call {
  readonly n: number;
  readonly decisions: DecisionEvent[];
  event: CallEvent | undefined;
}

type Budget = "calls" | "failures" | "retries" | "corrections" | "switches";

/** The run budgets' counters under the new policy (as core's run keeps them). */
class Budgets {
  private readonly used: Record<Budget, number> = {
    calls: 0,
    failures: 0,
    retries: 0,
    corrections: 0,
    switches: 0,
  };
  constructor(private readonly policy: Policy) {}
  has(name: Budget): boolean {
    return this.used[name] < this.policy.budgets[name];
  }
  take(name: Budget): void {
    this.used[name] += 1;
  }
  exhausted(): BudgetName[] {
    return (["failures", "retries", "corrections", "switches"] as const).filter(
      (b) => !this.has(b),
    );
  }
}

const view = (d: { action: Action; reason: Reason }): DecisionView => ({
  action: d.action,
  reason: d.reason,
});

function groupCalls(events: readonly GovernorEvent[]): Call[] | string {
  const calls = new Map<number, Call>();
  for (const event of events) {
    if (event.type === "run_end") continue;
    if (event.call === undefined)
      return "its events carry no call numbers (a log written before replay existed)";
    if (event.type === "decision" && event.input === undefined) {
      return `the decision at call ${event.call} carries no input (a log written before replay existed)`;
    }
    let call = calls.get(event.call);
    if (call === undefined) {
      call = { n: event.call, decisions: [], event: undefined };
      calls.set(event.call, call);
    }
    if (event.type === "decision") call.decisions.push(event);
    else call.event = event;
  }
  return [...calls.values()].sort((a, b) => a.n - b.n);
}

/** Attempts the recorded run sent from a point on: the rest of call `call` and all later calls. */
function attemptsAfter(calls: readonly Call[], index: number, attempt: number): number {
  let n = Math.max(0, (calls[index]?.event?.attempts ?? attempt) - attempt);
  for (const c of calls.slice(index + 1)) n += c.event?.attempts ?? c.decisions.length;
  return n;
}

/** Where the recorded run ended: the call of its stop, or the last call. */
function recordedEnd(end: RunEndEvent, calls: readonly Call[]): RunEnd {
  const { reason, budget } = end.summary;
  const withBudget = budget === undefined ? {} : { budget };
  if (reason === "completed") return { reason, call: calls.at(-1)?.n ?? null };
  const stopCall = calls.find((c) => c.event?.outcome === "stop" || c.event?.outcome === "host");
  return { reason, call: stopCall?.n ?? calls.at(-1)?.n ?? null, ...withBudget };
}

/**
 * Replays one ended run (its events in log order, its `run_end` last) under `policy`. Runs
 * written before decision events carried `call` and `input` are reported unreplayable.
 */
export function replayRun(
  runId: string,
  events: readonly GovernorEvent[],
  end: RunEndEvent,
  policy: Policy,
): RunReplay {
  const grouped = groupCalls(events);
  const calls = typeof grouped === "string" ? [] : grouped;
  const before = recordedEnd(end, calls);
  const base = { runId, before };
  if (typeof grouped === "string") {
    return {
      ...base,
      decisions: 0,
      changes: [],
      after: null,
      effect: "diverged",
      callsSaved: 0,
      callsAdded: 0,
      unreplayable: grouped,
    };
  }
  const runStart = end.at - end.summary.durationMs;
  const observed = end.summary.observeOnly;
  const budgets = new Budgets(policy);
  const modelRepeats = new Map<string, number>();
  const changes: ReplayChange[] = [];
  let decisions = 0;
  // A retry the replay decided, waiting for the log to show its attempt.
  let pending: { hash: string; attempt: number; call: number } | undefined;

  const finish = (
    after: RunEnd | null,
    saved: number,
    diverged?: { call: number; why: string },
  ): RunReplay => {
    const recordedStop = end.summary.reason !== "completed";
    let effect: RunReplay["effect"];
    let added = 0;
    if (after === null) {
      const at = diverged?.call ?? 0;
      // A replay that goes on past the recorded stop: the run would have stopped later, if at all.
      if (recordedStop && before.call !== null && at >= before.call) {
        effect = "stopped_later";
        added = 1;
      } else effect = "diverged";
    } else if (after.reason === before.reason && after.call === before.call) effect = "same";
    else if (after.reason !== "completed" && (!recordedStop || saved > 0))
      effect = "stopped_earlier";
    else effect = "other_reason";
    return {
      ...base,
      decisions,
      changes,
      after,
      effect,
      callsSaved: effect === "stopped_earlier" ? saved : 0,
      callsAdded: added,
      ...(diverged !== undefined && { diverged }),
    };
  };

  for (const [index, call] of calls.entries()) {
    const first = call.decisions[0];
    const tool = call.event?.tool ?? first?.tool ?? "";
    const server = call.event?.server ?? first?.server;
    const hash = first?.input?.callHash ?? call.event?.callHash;
    if (pending !== undefined && (pending.hash !== hash || (first?.attempt ?? 1) !== 1)) {
      return finish(null, 0, {
        call: pending.call,
        why: "a retry would follow; the log does not show its result",
      });
    }
    const continuing = pending;
    pending = undefined;
    // Preflight, once per call made by the model (a retry is not a new call).
    if (continuing === undefined) {
      const preflight = first?.attempt === 0 ? first : undefined;
      if (!budgets.has("calls")) {
        const after: DecisionView = { action: "stop", reason: "budget_exhausted" };
        const beforeView = preflight
          ? view(preflight)
          : { action: "none" as const, reason: "ok" as const };
        if (beforeView.action !== after.action || beforeView.reason !== after.reason) {
          changes.push({
            runId,
            call: call.n,
            tool,
            fingerprint: first?.fingerprint ?? "",
            before: beforeView,
            after,
          });
        }
        return finish(
          { reason: "budget_exhausted", call: call.n, budget: "calls" },
          attemptsAfter(calls, index, 0),
        );
      }
      budgets.take("calls");
      const startedAt =
        first?.input?.elapsedMs ??
        (call.event === undefined ? 0 : call.event.at - call.event.durationMs - runStart);
      if (startedAt >= policy.budgets.wallTimeMs) {
        if (preflight?.reason !== "budget_exhausted") {
          changes.push({
            runId,
            call: call.n,
            tool,
            fingerprint: first?.fingerprint ?? "",
            before: preflight ? view(preflight) : { action: "none", reason: "ok" },
            after: { action: "stop", reason: "budget_exhausted" },
          });
        }
        return finish(
          { reason: "budget_exhausted", call: call.n, budget: "wallTime" },
          attemptsAfter(calls, index, 0),
        );
      }
      const tp = resolveToolPolicy(policy, tool, server);
      if (tp.access === "deny" && preflight?.reason !== "denied_by_policy") {
        changes.push({
          runId,
          call: call.n,
          tool,
          fingerprint: first?.fingerprint ?? "",
          before: preflight ? view(preflight) : { action: "none", reason: "ok" },
          after: { action: "switch_tool", reason: "denied_by_policy" },
        });
        return finish(null, 0, {
          call: call.n,
          why: "the policy denies this tool: the model would be told to switch",
        });
      }
      if (preflight !== undefined) {
        if (
          (preflight.reason === "denied_by_policy" && tp.access !== "deny") ||
          preflight.reason === "budget_exhausted"
        ) {
          return finish(null, 0, {
            call: call.n,
            why: `the log refused this call (${preflight.reason}); it would be made, and the log has no result for it`,
          });
        }
        // Loops, breakers, approvals, aborts, store trouble: run or cross-run state the log
        // records but does not let us recompute; kept as recorded.
        decisions += 1;
        if (preflight.action === "stop" || preflight.action === "host") {
          return finish({ reason: preflight.reason, call: call.n }, attemptsAfter(calls, index, 0));
        }
        // Observe-only made the call anyway; enforced, the model reads this refusal instead.
        if (observed) {
          return finish(null, 0, {
            call: call.n,
            why: `the call would be refused (${preflight.reason}, as recorded); the log's model read its result`,
          });
        }
      }
    }
    for (const recorded of call.decisions) {
      if (recorded.attempt === 0) continue;
      const input = recorded.input;
      if (input === undefined) continue;
      decisions += 1;
      const tp = resolveToolPolicy(policy, tool, server);
      const f = input.failure;
      if (f.redacted === true && tp.rules.some((r) => r.match !== undefined)) {
        return finish(null, 0, {
          call: call.n,
          why: `the policy matches ${tool}'s failure text, which the log holds redacted`,
        });
      }
      const c = classify(
        {
          channel: f.channel,
          origin: f.origin,
          text: f.text,
          ...(f.code !== undefined && { code: f.code }),
          ...(f.httpStatus !== undefined && { httpStatus: f.httpStatus }),
          ...(f.retryAfterMs !== undefined && { retryAfterMs: f.retryAfterMs }),
          ...(f.local !== undefined && { local: f.local }),
          ...(f.toolFailure !== undefined && { toolFailure: f.toolFailure }),
        },
        tp,
        // What the run's call showed about the raw text (the log keeps neither the arguments nor
        // the raw text): weighed as the run weighed it.
        input.evidence === undefined ? undefined : { evidence: input.evidence },
      );
      const attempt =
        continuing !== undefined && recorded === first ? continuing.attempt + 1 : recorded.attempt;
      const exhausted = budgets.exhausted();
      const elapsed = input.elapsedMs;
      const remainingMs = Math.min(
        input.hostDeadlineMs ?? Number.POSITIVE_INFINITY,
        policy.budgets.wallTimeMs - elapsed,
      );
      const effect = resolveEffect(tp.effect, tp.trustAnnotations, input.annotations);
      const ctx = {
        classification: c,
        tool: tp,
        effect,
        attempt,
        repeats: (modelRepeats.get(recorded.fingerprint) ?? 0) + 1,
        keyed: tp.idempotency.honorsKeys,
        remainingMs,
        random: () => 0.5,
        ...(input.verified !== undefined && { verified: input.verified }),
        ...(exhausted.length > 0 && { exhausted }),
        ...(input.retryBudgetEmpty === true && { serverRetryBudgetEmpty: true }),
        // What had been learned when the run decided (shared state, kept in the log): the new
        // policy's learning settings decide whether it demotes.
        ...(input.learned !== undefined && { learned: input.learned }),
      };
      const d: Decision = decide(ctx);
      if (
        d.action === "stop" &&
        d.reason === "uncertain_mutation" &&
        tp.idempotency.verify &&
        input.verified === undefined
      ) {
        return finish(null, 0, {
          call: call.n,
          why: "a verify step would run; its answer is not in the log",
        });
      }
      budgets.take("failures");
      if (d.action === "retry_dependency") budgets.take("retries");
      if (d.action === "correct_arguments" || d.action === "switch_tool") {
        budgets.take(d.action === "correct_arguments" ? "corrections" : "switches");
        modelRepeats.set(recorded.fingerprint, (modelRepeats.get(recorded.fingerprint) ?? 0) + 1);
      }
      const after = view(d);
      if (after.action !== recorded.action || after.reason !== recorded.reason) {
        changes.push({
          runId,
          call: call.n,
          tool,
          fingerprint: recorded.fingerprint,
          before: view(recorded),
          after,
        });
      }
      if (d.action === "stop" || d.action === "host") {
        return finish(
          {
            reason: d.reason,
            call: call.n,
            ...(d.action === "stop" && d.budget !== undefined && { budget: d.budget }),
          },
          attemptsAfter(calls, index, recorded.attempt),
        );
      }
      const last = recorded === call.decisions.at(-1);
      const callFailed = last && (call.event?.attempts ?? recorded.attempt) === recorded.attempt;
      if (d.action === "retry_dependency") {
        // The log's next attempt is this retry: within the call (the recorded run retried too),
        // or the model's identical next call (it read the failure and sent the same call again).
        if (callFailed) pending = { hash: input.callHash, attempt, call: call.n };
        else if (recorded.action !== "retry_dependency") {
          return finish(null, 0, {
            call: call.n,
            why: "the recorded run did not retry here; the replay would",
          });
        }
        continue;
      }
      // correct_arguments or switch_tool: the model reads a message and chooses its next call.
      // Observe-only: the log's model read the raw failure. A correction shows it the same failure;
      // a switch is followed when the model switched tools on its own next.
      const next = calls[index + 1];
      const nextTool = next?.event?.tool ?? next?.decisions[0]?.tool;
      const sameMessage = observed
        ? d.action === "correct_arguments" || (nextTool !== undefined && nextTool !== tool)
        : recorded.action === d.action;
      if (!sameMessage || !callFailed) {
        return finish(null, 0, {
          call: call.n,
          why:
            d.action === "switch_tool"
              ? `the model would be told to switch tools${tp.alternatives.length > 0 ? ` (to ${tp.alternatives.join(", ")})` : ""}; the log's model read something else`
              : "the model would read another message than in the log",
        });
      }
    }
  }
  if (pending !== undefined) {
    return finish(null, 0, {
      call: pending.call,
      why: "a retry would follow; the log ends before it",
    });
  }
  if (end.summary.reason !== "completed" && !observed) {
    // The recorded stop was not reproduced: it came from state the replay keeps as recorded.
    return finish(before, 0);
  }
  return finish({ reason: "completed", call: calls.at(-1)?.n ?? null }, 0);
}
