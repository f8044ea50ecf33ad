// One call's state and keys: its canonical arguments, its loop-detector key, its idempotency key,
// its hash in events and its failure text as the model may read it.
import { redactForModel } from "../judge/assess.ts";
import { canonicalJson, hashCanonical } from "../judge/canonical.ts";
import { resolveEffect } from "../judge/effect.ts";
import type { ToolPolicy } from "../policy/policy.ts";
import { argumentStrings, sensitiveValues } from "../policy/sensitive.ts";
import type { Effect } from "../types.ts";
import type { LiveAttempt } from "./attempt-guard.ts";
import { withoutKeyArgument } from "./key-argument.ts";
import type { LearnedCounts } from "./outcome-tracker.ts";
import { instance, type RunState } from "./run-state.ts";
import { type Executor, IDEMPOTENCY_META_KEY, type ToolCall } from "./types.ts";

/** What one attempt that was sent came to. */
export interface Sent {
  readonly thrown: boolean;
  /** The executor's answer, or what it threw (or what cut it). */
  readonly value: unknown;
  /** The run's deadline cut it. */
  readonly deadlineHit: boolean;
  /**
   * Governor cut it (the run's stop, signal or end, the call's signal, the deadline): `value` is
   * the cut's reason, never what the executor threw, so the host's `toFailure` is not asked of it.
   */
  readonly wasCut: boolean;
}

/** The `_meta` of a call without a key. */
const NO_META: Readonly<Record<string, unknown>> = Object.freeze({});

export interface CallState {
  /** The run the call belongs to. */
  readonly run: RunState;
  readonly call: ToolCall;
  /** What each attempt runs (the host's executor, wrapped by tracing when it traces). */
  execute: Executor<unknown> | undefined;
  /** What the last attempt sent came to, until its step used it. */
  sent: Sent | undefined;
  readonly tool: ToolPolicy;
  readonly effect: Effect;
  /** Set once preflight let the call through (keys are minted only for calls that are made). */
  args: Readonly<Record<string, unknown>>;
  meta: Readonly<Record<string, unknown>>;
  /** Server, tool and canonical arguments: equal for identical calls (a hash when long). */
  readonly callKey: string;
  /** Within the call's server and tool, what keys it in the loop detector (see `callKey`). */
  readonly loopKey: string;
  /** The call's number in the run, in start order (1 for the first). */
  readonly seq: number;
  argsHash: string | undefined;
  key: string | undefined;
  readonly sensitive: readonly string[];
  /** The call's attempt in flight, which the call's own signal cuts; set while one runs. */
  live: LiveAttempt | undefined;
  /** When the call started (only when something listens for events). */
  readonly started: number;
  attempts: number;
  verified: "absent" | "present" | "unknown" | undefined;
  /**
   * A keyed attempt's outcome was unknown and no verify answer since found no effect: the write
   * may have happened, whatever a later attempt comes to.
   */
  uncertain: boolean;
  /**
   * The ledger claim this call holds took over a write in doubt (`ClaimResult.retaken`): an attempt
   * of the key, not this call's, may have written. An attempt of this call not sent settles the
   * key back to `uncertain`, never `failed`.
   */
  retaken: boolean;
  /**
   * The ledger claim this call holds, as the store marked it (`ClaimResult.claimedAt`, else the
   * claim's `now`): the store refuses this call's late settle once another claim took the key.
   */
  claimedAt: number | undefined;
  /** The `now` of the ledger claim this call sent, until its answer (then `claimedAt`). */
  claimingAt: number | undefined;
  /** The attempt was cut while not sent yet (`AttemptContext.beforeSending`): nothing left. */
  cutUnsent: boolean;
  /**
   * This call holds its write's entry in the index of writes in doubt (doubt.ts): claimed for an
   * attempt, or left `uncertain` by one. Its settles are mirrored there until one frees it.
   */
  doubtHeld: boolean;
  /** That entry's claim, as the store marked it (as `claimedAt`), while this call holds it. */
  doubtClaimedAt: number | undefined;
  /** The call's signal aborted before its success was handed over: its answer was kept (doubt.ts `handOver`). */
  keptAnswer: boolean;
  /** The call's hash in events, made on first use. */
  callHash: string | undefined;
  /** The last failure text redacted for the model, and its redaction: a text is redacted once. */
  observed: { readonly text: string; readonly redacted: string } | undefined;
  /** Ms left before the deadline when the current attempt was admitted (its `remainingMs`). */
  remainingMs: number;
  /**
   * The canonical JSON of the arguments without the one the key travels in (`withoutKeyArgument`);
   * undefined when they are not JSON (see `invalidArgs`).
   */
  readonly canonical: string | undefined;
  /** Why the arguments are not JSON (a cycle), when they are not. */
  readonly invalidArgs: string | undefined;
  /** What was learned of the failure being judged (counts decayed to now), when anything was. */
  learned: LearnedCounts | undefined;
}

/** What few calls need (a key's hash and claim, a failure's text and learning): made on first write. */
interface Rare {
  argsHash: string | undefined;
  verified: "absent" | "present" | "unknown" | undefined;
  uncertain: boolean;
  retaken: boolean;
  claimedAt: number | undefined;
  claimingAt: number | undefined;
  cutUnsent: boolean;
  doubtHeld: boolean;
  doubtClaimedAt: number | undefined;
  keptAnswer: boolean;
  callHash: string | undefined;
  observed: { readonly text: string; readonly redacted: string } | undefined;
  learned: LearnedCounts | undefined;
  invalidArgs: string | undefined;
  meta: Readonly<Record<string, unknown>> | undefined;
  live: LiveAttempt | undefined;
  sensitive: readonly string[] | undefined;
  callKey: string | undefined;
  /** The loop key of a call whose text is too long to key by (its hash); else the canonical text. */
  longKey: string | undefined;
  key: string | undefined;
}

/** Longer loop texts are keyed by their hash: the loop detector keeps keys, not bodies. */
const MAX_KEY_TEXT = 256;

/**
 * A call's state: what every call needs as fields, what few calls need in a sub-object made on
 * first write, and the loop key's full text made on first read (a read-only call never needs it).
 * Its rare part is `private`, not `#`: a `#` method would give every call a brand (a field more),
 * and the state never reaches an executor (its context is attempts.ts' `Attempt`).
 */
class Call implements CallState {
  args: Readonly<Record<string, unknown>>;
  execute: Executor<unknown> | undefined = undefined;
  sent: Sent | undefined = undefined;
  attempts = 0;
  remainingMs = 0;
  readonly seq: number;
  readonly started: number;
  private rare: Rare | undefined = undefined;

  constructor(
    readonly run: RunState,
    readonly call: ToolCall,
    readonly tool: ToolPolicy,
    readonly effect: Effect,
    args: Readonly<Record<string, unknown>>,
    readonly canonical: string | undefined,
    invalidArgs: string | undefined,
    longKey: string | undefined,
  ) {
    this.args = args;
    this.seq = ++run.callCount;
    // Only a call event reads it, and whether one is built is fixed when the governor is made.
    const { core } = run;
    this.started = core.listening && core.callMetric === undefined ? core.now() : 0;
    if (longKey !== undefined) {
      const rare = this.more();
      rare.callKey = longKey;
      rare.longKey = longKey;
    }
    // Taken now: an executor may change the arguments it was given before a failure is redacted.
    if (tool.sensitiveArgs.length > 0) {
      try {
        this.more().sensitive = sensitiveValues(args, tool.sensitiveArgs);
      } catch {
        // Arguments that throw when read (a getter, a proxy) are not JSON either: refused. What
        // reading a sensitive one threw may hold its value, which is unknown, so cannot be
        // removed: none of it is shown.
        invalidArgs = "a sensitive argument could not be read";
      }
    }
    if (invalidArgs !== undefined) this.more().invalidArgs = invalidArgs;
  }

  private more(): Rare {
    this.rare ??= {
      argsHash: undefined,
      verified: undefined,
      uncertain: false,
      retaken: false,
      claimedAt: undefined,
      claimingAt: undefined,
      cutUnsent: false,
      doubtHeld: false,
      doubtClaimedAt: undefined,
      keptAnswer: false,
      callHash: undefined,
      observed: undefined,
      learned: undefined,
      invalidArgs: undefined,
      meta: undefined,
      live: undefined,
      sensitive: undefined,
      callKey: undefined,
      longKey: undefined,
      key: undefined,
    };
    return this.rare;
  }

  get callKey(): string {
    const rare = this.more();
    if (rare.callKey === undefined) {
      const { server, tool } = this.call;
      rare.callKey = `${server ?? ""}\u0000${tool}\u0000${this.canonical ?? ""}`;
    }
    return rare.callKey;
  }

  /** Within the call's server and tool, what keys it in the loop detector (see `callKey`). */
  get loopKey(): string {
    return this.rare?.longKey ?? this.canonical ?? "";
  }

  get key(): string | undefined {
    return this.rare?.key;
  }
  set key(value: string | undefined) {
    if (value !== undefined || this.rare !== undefined) this.more().key = value;
  }

  get sensitive(): readonly string[] {
    return this.rare?.sensitive ?? NONE;
  }

  get meta(): Readonly<Record<string, unknown>> {
    return this.rare?.meta ?? NO_META;
  }
  set meta(value: Readonly<Record<string, unknown>>) {
    if (value !== NO_META || this.rare !== undefined) this.more().meta = value;
  }

  get live(): LiveAttempt | undefined {
    return this.rare?.live;
  }
  set live(value: LiveAttempt | undefined) {
    if (value !== undefined || this.rare !== undefined) this.more().live = value;
  }

  get invalidArgs(): string | undefined {
    return this.rare?.invalidArgs;
  }

  get argsHash(): string | undefined {
    return this.rare?.argsHash;
  }
  set argsHash(value: string | undefined) {
    if (value !== undefined || this.rare !== undefined) this.more().argsHash = value;
  }

  get verified(): Rare["verified"] {
    return this.rare?.verified;
  }
  set verified(value: Rare["verified"]) {
    if (value !== undefined || this.rare !== undefined) this.more().verified = value;
  }

  get uncertain(): boolean {
    return this.rare?.uncertain === true;
  }
  set uncertain(value: boolean) {
    if (value || this.rare !== undefined) this.more().uncertain = value;
  }

  get retaken(): boolean {
    return this.rare?.retaken === true;
  }
  set retaken(value: boolean) {
    if (value || this.rare !== undefined) this.more().retaken = value;
  }

  get claimedAt(): number | undefined {
    return this.rare?.claimedAt;
  }
  set claimedAt(value: number | undefined) {
    if (value !== undefined || this.rare !== undefined) this.more().claimedAt = value;
  }

  get claimingAt(): number | undefined {
    return this.rare?.claimingAt;
  }
  set claimingAt(value: number | undefined) {
    if (value !== undefined || this.rare !== undefined) this.more().claimingAt = value;
  }

  get cutUnsent(): boolean {
    return this.rare?.cutUnsent === true;
  }
  set cutUnsent(value: boolean) {
    if (value || this.rare !== undefined) this.more().cutUnsent = value;
  }

  get doubtHeld(): boolean {
    return this.rare?.doubtHeld === true;
  }
  set doubtHeld(value: boolean) {
    if (value || this.rare !== undefined) this.more().doubtHeld = value;
  }

  get doubtClaimedAt(): number | undefined {
    return this.rare?.doubtClaimedAt;
  }
  set doubtClaimedAt(value: number | undefined) {
    if (value !== undefined || this.rare !== undefined) this.more().doubtClaimedAt = value;
  }

  get keptAnswer(): boolean {
    return this.rare?.keptAnswer === true;
  }
  set keptAnswer(value: boolean) {
    if (value || this.rare !== undefined) this.more().keptAnswer = value;
  }

  get callHash(): string | undefined {
    return this.rare?.callHash;
  }
  set callHash(value: string | undefined) {
    if (value !== undefined || this.rare !== undefined) this.more().callHash = value;
  }

  get observed(): Rare["observed"] {
    return this.rare?.observed;
  }
  set observed(value: Rare["observed"]) {
    if (value !== undefined || this.rare !== undefined) this.more().observed = value;
  }

  get learned(): LearnedCounts | undefined {
    return this.rare?.learned;
  }
  set learned(value: LearnedCounts | undefined) {
    if (value !== undefined || this.rare !== undefined) this.more().learned = value;
  }
}

/** A call's state as it starts: its tool policy, effect, canonical arguments and loop key. */
export function openCall(r: RunState, request: ToolCall): CallState {
  const { core } = r;
  const tool = core.toolPolicy(request.tool, request.server);
  const effect = resolveEffect(tool.effect, tool.trustAnnotations, request.annotations);
  const rawArgs = request.args ?? {};
  let canonical: string | undefined;
  let invalidArgs: string | undefined;
  try {
    canonical = canonicalArgs(rawArgs, tool);
  } catch (error) {
    // A cycle, or a value that throws when read: not JSON, so not something a server could be sent.
    invalidArgs = unreadable(error);
  }
  // Canonical text keys the loop detector (a hash when long: the map keeps keys, not bodies). The
  // detector keys a call by its server and tool, then by this text: no string is built for it.
  const text = canonical ?? "";
  const server = request.server ?? "";
  let longKey: string | undefined;
  if (server.length + request.tool.length + text.length + 2 > MAX_KEY_TEXT) {
    longKey = hashCanonical(`${server}\u0000${request.tool}\u0000${text}`);
  }
  return new Call(r, request, tool, effect, rawArgs, canonical, invalidArgs, longKey);
}

/**
 * The canonical JSON of a call's arguments (`canonicalJson`), without the one its idempotency key
 * travels in (`withoutKeyArgument`): Governor writes that argument over the call's own value, so
 * two calls that differ only there are one call to everything that compares calls (the loop
 * detector, the call hash in events, the index of writes in doubt, the key of a call without
 * `callId`, a kept answer). Throws as `canonicalJson` does when the arguments are not
 * JSON, the value left out included (a cycle, a getter that throws): they could not be sent.
 */
export function canonicalArgs(
  args: Readonly<Record<string, unknown>>,
  tool: Pick<ToolPolicy, "idempotency">,
): string {
  const content = withoutKeyArgument(args, tool);
  const canonical = canonicalJson(content);
  // The value left out is read once, only to refuse arguments that could not be sent whole.
  if (content !== args) canonicalJson(args[tool.idempotency.argument as string]);
  return canonical;
}

/** Why arguments could not be read, from what reading them threw (redacted before the model). */
function unreadable(error: unknown): string {
  try {
    const message = error instanceof Error ? error.message : undefined;
    return typeof message === "string" ? message.replace(/^canonicalJson: /, "") : "";
  } catch {
    // A message that is not a string, or that throws when read (a proxy): nothing to show.
    return "";
  }
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
  const server = request.server ?? "";
  // The hash of what the key is minted for: the write's content in its scope (doubt.ts), so that
  // the key's entry leads to its write's entry in the index of writes in doubt.
  const argsHash = contentHash(state, server);
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
          String(r.successes?.get(argsHash) ?? 0),
        ]);
  const argName = tool.idempotency.argument;
  state.argsHash = argsHash;
  state.key = key;
  state.meta = { [IDEMPOTENCY_META_KEY]: key };
  if (argName !== undefined) state.args = { ...rawArgs, [argName]: key };
}

/**
 * The hash of a write's content in its scope: the run's scope, else its instance; the server, the
 * tool and the canonical arguments (without the key argument, see `openCall`). The call key's
 * `argsHash`, and its content entry's key in the index of writes in doubt (doubt.ts).
 */
function contentHash(state: CallState, server: string): string {
  return contentHashOf(state.run, server, state.call.tool, state.canonical);
}

/** {@link contentHash} from its parts: the run, the server, the tool and the canonical arguments. */
export function contentHashOf(
  r: RunState,
  server: string,
  tool: string,
  canonical: string | undefined,
): string {
  const scope = r.scope === undefined ? `i:${instance(r)}` : `s:${r.scope}`;
  return hashCanonical(`${scope}\u0000${server}\u0000${tool}\u0000${canonical ?? "null"}`);
}

/** Whether the call's tool honours the key it would be sent (decide's `keyed`). */
export function honoursKey(state: CallState): boolean {
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
      // The model's own argument values may stay as written (a path it sent, in an ENOENT text),
      // read from the arguments as the call started (an executor may change them since).
      redacted: redactForModel(text, state.run.policy, state.sensitive, ownValues(state)),
    };
  }
  return state.observed.redacted;
}

/**
 * The string values of the call's arguments as it started (none when they are not JSON), the key
 * argument's aside: where Governor writes its key there, the model's own value was never sent.
 */
function ownValues(state: CallState): string[] {
  if (state.canonical === undefined || state.canonical === "{}") return [];
  try {
    return argumentStrings(JSON.parse(state.canonical));
  } catch {
    return [];
  }
}

/** Records a call's failure by its fingerprint. */
export function noteFailure(state: CallState, print: string): void {
  if (!state.run.ended) {
    state.run.identical.noteFailure(state.loopKey, print, state.call.tool, state.call.server);
  }
}

/** Records a call's success by a hash of its JSON (none is made). */
export function noteResult(state: CallState, value: unknown): void {
  if (!state.run.ended) {
    state.run.identical.noteSuccess(state.loopKey, value, state.call.tool, state.call.server);
  }
}

/**
 * A success of a keyed call: the next identical call without `callId` is a new logical call.
 * Counted by the write's content (`argsHash`, minted with the key), as the key is minted from it.
 */
export function noteSuccess(state: CallState): void {
  const { argsHash } = state;
  if (state.key !== undefined && argsHash !== undefined) {
    const r = state.run;
    r.successes ??= new Map();
    r.successes.set(argsHash, (r.successes.get(argsHash) ?? 0) + 1);
  }
}

const NONE: readonly string[] = Object.freeze([]);
