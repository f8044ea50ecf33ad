// One call's state and keys: its canonical arguments, its loop-detector key, its idempotency key,
// its hash in events and its failure text as the model may read it.
import { redactForModel } from "../judge/assess.ts";
import { canonicalJson, hashCanonical } from "../judge/canonical.ts";
import { resolveEffect } from "../judge/effect.ts";
import type { ToolPolicy } from "../policy/policy.ts";
import { sensitiveValues } from "../policy/sensitive.ts";
import type { Effect } from "../types.ts";
import type { LearnedCounts } from "./outcome-tracker.ts";
import { instance, type RunState } from "./run-state.ts";
import { IDEMPOTENCY_META_KEY, type ToolCall } from "./types.ts";

/** The `_meta` of a call without a key. */
const NO_META: Readonly<Record<string, unknown>> = Object.freeze({});

export interface CallState {
  /** The run the call belongs to. */
  readonly run: RunState;
  readonly call: ToolCall;
  readonly tool: ToolPolicy;
  readonly effect: Effect;
  /** Set once preflight let the call through (keys are minted only for calls that are made). */
  args: Readonly<Record<string, unknown>>;
  meta: Readonly<Record<string, unknown>>;
  readonly callKey: string;
  /** The call's number in the run, in start order (1 for the first). */
  readonly seq: number;
  argsHash: string | undefined;
  key: string | undefined;
  readonly sensitive: readonly string[];
  /** Cuts this call's attempt in flight (the call's own signal aborted); set while one runs. */
  cut: ((reason: unknown, deadline: boolean) => void) | undefined;
  readonly started: number;
  attempts: number;
  verified: "absent" | "present" | "unknown" | undefined;
  /** The `now` of the ledger claim this call holds: a late settle cannot free a newer claim. */
  claimedAt: number | undefined;
  /** The call's hash in events, made on first use. */
  callHash: string | undefined;
  /** The last failure text redacted for the model, and its redaction: a text is redacted once. */
  observed: { readonly text: string; readonly redacted: string } | undefined;
  /** Ms left before the deadline when the current attempt was admitted (its `remainingMs`). */
  remainingMs: number;
  /** The canonical JSON of the arguments; undefined when they are not JSON (see `invalidArgs`). */
  readonly canonical: string | undefined;
  /** Why the arguments are not JSON (a cycle), when they are not. */
  readonly invalidArgs: string | undefined;
  /** What was learned of the failure being judged (counts decayed to now), when anything was. */
  learned: LearnedCounts | undefined;
}

/** A call's state as it starts: its tool policy, effect, canonical arguments and loop key. */
export function openCall(r: RunState, request: ToolCall): CallState {
  const { core } = r;
  const started = core.now();
  const tool = core.toolPolicy(request.tool, request.server);
  const effect = resolveEffect(tool.effect, tool.trustAnnotations, request.annotations);
  const rawArgs = request.args ?? {};
  let canonical: string | undefined;
  let invalidArgs: string | undefined;
  try {
    canonical = canonicalJson(rawArgs);
  } catch (error) {
    // A cycle: not JSON, so not something a server could be sent.
    invalidArgs = error instanceof Error ? error.message.replace(/^canonicalJson: /, "") : "";
  }
  // Canonical text keys the loop detector (a hash when long: the map keeps keys, not bodies).
  const callText = `${request.server ?? ""}\u0000${request.tool}\u0000${canonical ?? ""}`;
  const callKey = callText.length > 256 ? hashCanonical(callText) : callText;
  return {
    run: r,
    call: request,
    tool,
    effect,
    args: rawArgs,
    meta: NO_META,
    callKey,
    seq: ++r.callCount,
    argsHash: undefined,
    key: undefined,
    sensitive: sensitiveOf(tool, rawArgs),
    cut: undefined,
    started,
    attempts: 0,
    learned: undefined,
    verified: undefined,
    claimedAt: undefined,
    callHash: undefined,
    observed: undefined,
    remainingMs: 0,
    canonical,
    invalidArgs,
  };
}

/**
 * Mints the call's idempotency key (mutating tools only), once preflight let it through. With a
 * `callId`, the key is the host's logical call: in the run's scope when it has one, else in this
 * run instance. Without, it is this instance, the server, the tool, the arguments and how many
 * identical calls succeeded before, so it never matches a call of another run.
 */
export function mintKey(state: CallState): void {
  const r = state.run;
  if (state.effect !== "mutating" || r.observeOnly) return;
  const { call: request, tool, run } = state;
  const { core, scope } = run;
  const rawArgs = request.args ?? {};
  const argsHash = hashCanonical(state.canonical ?? "null");
  const server = request.server ?? "";
  const key =
    request.callId !== undefined
      ? scope !== undefined
        ? core.mintKey(["scope", scope, server, request.tool, request.callId])
        : core.mintKey(["run", instance(r), server, request.tool, request.callId])
      : core.mintKey([
          instance(r),
          server,
          request.tool,
          argsHash,
          String(r.successes.get(state.callKey) ?? 0),
        ]);
  const argName = tool.idempotency.argument;
  state.argsHash = argsHash;
  state.key = key;
  state.meta = { [IDEMPOTENCY_META_KEY]: key };
  if (argName !== undefined) state.args = { ...rawArgs, [argName]: key };
}

/** Whether the call's tool honours the key it would be sent (decide's `keyed`). */
export function keyed(state: CallState): boolean {
  return state.run.observeOnly
    ? state.tool.idempotency.honorsKeys
    : state.key !== undefined && state.tool.idempotency.honorsKeys;
}

/** Equal for identical calls (server, tool, canonical arguments); the arguments stay out. */
export function callHashOf(state: CallState): string {
  state.callHash ??= hashCanonical(state.callKey).slice(0, 16);
  return state.callHash;
}

/** A failure text as the model may read it; the same text is redacted once per call. */
export function observe(text: string, state: CallState): string {
  if (state.observed?.text !== text) {
    state.observed = {
      text,
      redacted: redactForModel(text, state.run.policy, state.sensitive),
    };
  }
  return state.observed.redacted;
}

/** Records a call's result by a hash: a failure by its fingerprint, a success by its JSON. */
export function noteSignature(
  state: CallState,
  result: { failure: string } | { value: unknown },
): void {
  if (!state.run.ended) state.run.identical.note(state.callKey, result);
}

/** A success of a keyed call: the next identical call without `callId` is a new logical call. */
export function noteSuccess(state: CallState): void {
  if (state.key !== undefined) {
    const { successes } = state.run;
    successes.set(state.callKey, (successes.get(state.callKey) ?? 0) + 1);
  }
}

/** The values of the arguments the policy marks sensitive (names or paths, at any depth). */
function sensitiveOf(tool: ToolPolicy, args: Readonly<Record<string, unknown>>): readonly string[] {
  return tool.sensitiveArgs.length === 0 ? NONE : sensitiveValues(args, tool.sensitiveArgs);
}

const NONE: readonly string[] = Object.freeze([]);
