// The run's side of learning from outcomes (docs/learning.md): reads what was learned before a
// failure is decided, and records what followed each decision. One per run, made at its first
// failure, so a run whose calls all succeed never touches the learning store. The arithmetic
// and the demotions are pure (judge/learned.ts); the store adds atomically (Store.addOutcome).
import type { Decision } from "../judge/decide.ts";
import { countsAt, learnedKey, type OutcomeField } from "../judge/learned.ts";
import type { ToolPolicy } from "../policy/policy.ts";
import { REASON_INFO } from "../reasons.ts";
import type { OutcomeRecord, Store } from "../store/store.ts";
import type { MaybePromise } from "../types.ts";
import { isThenable } from "./store-guard.ts";

/** Runs one store operation bounded like the call's others (`storeOp`). */
export type StoreGuard = <R>(op: string, fn: () => MaybePromise<R>) => MaybePromise<R>;

/** Decayed counts of one server, tool and fingerprint. */
export type LearnedCounts = Readonly<Record<OutcomeField, number>>;

/** A decision that awaits the outcome of a later call of the run. */
interface Pending {
  readonly server: string | undefined;
  readonly tool: string;
  readonly fingerprint: string;
  readonly policy: ToolPolicy;
}

/** A switch that awaits a call of one of its alternatives. */
interface PendingSwitch extends Pending {
  readonly alternatives: readonly string[];
}

/** What a tracker needs of the governor. */
export interface OutcomeTrackerOptions {
  readonly store: Store;
  readonly now: () => number;
  /** The scope the run learns in (`learningScopeOf` of its options); absent: shared by every run. */
  readonly scope?: string | undefined;
}

/**
 * Records, per call, the fingerprints it retried; per run, the corrections and switches that
 * await the next call of the tool (or of an alternative). Every store error is swallowed:
 * learning is advice, and a store that cannot answer reads as nothing learned.
 */
export class OutcomeTracker {
  readonly #store: Store;
  readonly #now: () => number;
  readonly #scope: string | undefined;
  /**
   * Per call (its state object): the fingerprints whose retries await the call's outcome. Made
   * at the first retry (as the corrections' map at the first correction): most runs have none.
   */
  #retried: WeakMap<object, Map<string, ToolPolicy>> | undefined;
  /**
   * Per server and tool: a correction that awaits that tool's next call. A run mostly has one at a
   * time: it is held in a field, and further tools' in a map made at the first of them (a tool is
   * in one place or the other, never both).
   */
  #correction: Pending | undefined;
  #corrections: Map<string, Pending> | undefined;
  /** Switches that await a call of one of their alternatives (made at the first). */
  #switches: PendingSwitch[] | undefined;

  constructor(options: OutcomeTrackerOptions) {
    this.#store = options.store;
    this.#now = options.now;
    this.#scope = options.scope;
  }

  /** Whether learning applies to the tool and the store can keep it. */
  learns(policy: ToolPolicy): boolean {
    return policy.learning.enabled && typeof this.#store.outcome === "function";
  }

  /** The learned counts of this failure decayed to now, or undefined (nothing, off, or no store). */
  read(
    policy: ToolPolicy,
    fingerprint: string,
    guard: StoreGuard,
  ): MaybePromise<LearnedCounts | undefined> {
    const store = this.#store;
    if (!this.learns(policy) || store.outcome === undefined) return undefined;
    const key = learnedKey(policy.server, policy.tool, fingerprint, this.#scope);
    try {
      const answer = guard("a learned-outcome read", () => store.outcome?.(key));
      if (!isThenable(answer)) return this.#countsOf(answer, policy);
      return answer.then(
        (record) => this.#countsOf(record, policy),
        () => undefined,
      );
    } catch {
      return undefined;
    }
  }

  #countsOf(record: OutcomeRecord | undefined, policy: ToolPolicy): LearnedCounts | undefined {
    return record === undefined
      ? undefined
      : countsAt(record, this.#now(), policy.learning.halfLifeMs);
  }

  /**
   * A failure of a call was decided. The call's first failure settles a correction of the same
   * tool (futile when the failure is the same, else nothing is learned) and a switch to it
   * (futile). A retry waits for the call's outcome; any other decision ends the call's retries
   * without a recovery, and a correction or a switch waits for a later call.
   */
  decided(
    call: object,
    policy: ToolPolicy,
    fingerprint: string,
    decision: Decision,
    first: boolean,
    guard: StoreGuard,
  ): MaybePromise<void> {
    let adds: Adds | undefined;
    const evidence = !REASON_INFO[decision.reason].noEvidence;
    if (first) adds = this.#settleWaiting(policy, fingerprint, evidence);
    const retried = this.#retried?.get(call);
    if (decision.action === "retry_dependency") {
      if (this.learns(policy)) {
        const map = retried ?? new Map<string, ToolPolicy>();
        map.set(fingerprint, policy);
        this.#retried ??= new WeakMap();
        this.#retried.set(call, map);
      }
      return this.#write(adds, guard);
    }
    if (retried !== undefined) {
      this.#retried?.delete(call);
      if (evidence) {
        for (const [print, p] of retried) adds = added(adds, pending(p, print), "retry_futile");
      }
    }
    if (this.learns(policy)) {
      const self = pending(policy, fingerprint);
      if (decision.action === "correct_arguments") {
        this.#putCorrection(self);
      } else if (decision.action === "switch_tool") {
        this.#switches ??= [];
        this.#switches.push({ ...self, alternatives: decision.alternatives });
      }
    }
    return this.#write(adds, guard);
  }

  /**
   * The call succeeded: its retries recovered, and a correction of this tool or a switch to it
   * paid off. Touches no store when nothing awaited this call.
   */
  succeeded(call: object, policy: ToolPolicy, guard: StoreGuard): MaybePromise<void> {
    let adds: Adds | undefined;
    const retried = this.#retried?.get(call);
    if (retried !== undefined) {
      this.#retried?.delete(call);
      for (const [print, p] of retried) adds = added(adds, pending(p, print), "retry_paid");
    }
    const correction = this.#takeCorrection(policy);
    if (correction !== undefined) adds = added(adds, correction, "correct_paid");
    adds = this.#settleSwitches(policy.tool, "switch_paid", adds);
    return adds === undefined ? undefined : this.#write(adds, guard);
  }

  /** A correction that awaits its tool's next call (replacing one of the same tool). */
  #putCorrection(p: Pending): void {
    const held = this.#correction;
    if (held === undefined || (sameServer(held.server, p.server) && held.tool === p.tool)) {
      this.#correction = p;
      // The tool's correction is in one place only.
      this.#corrections?.delete(toolKey(p.server, p.tool));
      return;
    }
    this.#corrections ??= new Map();
    this.#corrections.set(toolKey(p.server, p.tool), p);
  }

  /** The correction of this tool that waited for its next call, taken (undefined when none). */
  #takeCorrection(policy: ToolPolicy): Pending | undefined {
    const held = this.#correction;
    if (held !== undefined && sameServer(held.server, policy.server) && held.tool === policy.tool) {
      this.#correction = undefined;
      return held;
    }
    const corrections = this.#corrections;
    if (corrections === undefined) return undefined;
    const key = toolKey(policy.server, policy.tool);
    const correction = corrections.get(key);
    if (correction !== undefined) corrections.delete(key);
    return correction;
  }

  /**
   * A first failure of a call: settles what waited for this tool. A failure that tells nothing
   * of the tool (`evidence` false: an abort, a host-side failure) settles it without a record.
   */
  #settleWaiting(policy: ToolPolicy, fingerprint: string, evidence: boolean): Adds | undefined {
    let adds: Adds | undefined;
    const correction = this.#takeCorrection(policy);
    // Another failure after the correction is progress of some kind: nothing is learned.
    if (evidence && correction?.fingerprint === fingerprint) {
      adds = added(adds, correction, "correct_futile");
    }
    return this.#settleSwitches(policy.tool, evidence ? "switch_futile" : undefined, adds);
  }

  /** Settles the switches to `tool`, recording `field` for each (nothing when undefined). */
  #settleSwitches(
    tool: string,
    field: OutcomeField | undefined,
    adds: Adds | undefined,
  ): Adds | undefined {
    if (this.#switches === undefined || this.#switches.length === 0) return adds;
    let out = adds;
    const rest: PendingSwitch[] = [];
    for (const s of this.#switches) {
      if (!s.alternatives.includes(tool)) rest.push(s);
      else if (field !== undefined) out = added(out, s, field);
    }
    this.#switches = rest;
    return out;
  }

  /** Adds each outcome to the store; errors are swallowed, a pending answer is awaited. */
  #write(adds: Adds | undefined, guard: StoreGuard): MaybePromise<void> {
    const store = this.#store;
    if (adds === undefined || adds.length === 0 || store.addOutcome === undefined) return undefined;
    const waits: Promise<unknown>[] = [];
    const now = this.#now();
    for (const [p, field] of adds) {
      const { halfLifeMs, ttlMs } = p.policy.learning;
      const key = learnedKey(p.server, p.tool, p.fingerprint, this.#scope);
      try {
        const answer = guard("a learned-outcome write", () =>
          store.addOutcome?.(key, field, { now, halfLifeMs, ttlMs }),
        );
        if (isThenable(answer)) waits.push(answer.then(undefined, () => undefined));
      } catch {
        // Learning is advice: a store that cannot record it changes nothing of the call.
      }
    }
    return waits.length === 0 ? undefined : Promise.all(waits).then(() => undefined);
  }
}

/** Outcomes to add to the store: a list made at the first. */
type Adds = [Pending, OutcomeField][];

function added(adds: Adds | undefined, p: Pending, field: OutcomeField): Adds {
  if (adds === undefined) return [[p, field]];
  adds.push([p, field]);
  return adds;
}

function pending(policy: ToolPolicy, fingerprint: string): Pending {
  return { server: policy.server, tool: policy.tool, fingerprint, policy };
}

function toolKey(server: string | undefined, tool: string): string {
  return `${server ?? ""}\u0000${tool}`;
}

/** Servers as {@link toolKey} keys them: none and "" are one. */
function sameServer(a: string | undefined, b: string | undefined): boolean {
  return (a ?? "") === (b ?? "");
}
