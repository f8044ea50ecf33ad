import type { Policy, ToolPolicy } from "../policy/policy.ts";
import { argumentStrings, sensitiveValues } from "../policy/sensitive.ts";
import type { Effect } from "../types.ts";
import type { CallFacts } from "./call-evidence.ts";
import { type Classification, classify } from "./classify.ts";
import { type Decision, decide } from "./decide.ts";
import type { Failure } from "./failure.ts";
import { fingerprint } from "./fingerprint.ts";
import type { OutcomeField } from "./learned.ts";
import { composeMessage } from "./message.ts";
import { redact } from "./redact.ts";

/** The judgement of one failure as the first failure of a fresh run. */
export interface Assessment {
  readonly classification: Classification;
  readonly decision: Decision;
  /** 16 lowercase hex digits. */
  readonly fingerprint: string;
  /**
   * The model-facing text; `null` for `host`. For `retry_dependency` it is the text the model
   * would get once retries run out.
   */
  readonly message: string | null;
}

/** Options of {@link assessFailure}. */
export interface AssessOptions {
  readonly policy: Policy;
  readonly tool: ToolPolicy;
  readonly effect: Effect;
  /**
   * Values to redact wherever they appear (sensitive arguments).
   * @default the values of the tool's `sensitiveArgs` in `call.args`
   */
  readonly sensitiveValues?: readonly string[];
  /** The call's arguments and the tool's input schema, when known: they weigh the text. */
  readonly call?: CallFacts;
  /**
   * What was learned of this failure (counts decayed to now, `countsAt`), by its fingerprint: a
   * learned demotion then shows in the decision.
   * @default nothing learned
   */
  readonly learned?: (fingerprint: string) => Readonly<Record<OutcomeField, number>> | undefined;
}

/**
 * Redacts a failure text for the model with the policy's redaction settings; `keepValues` (the
 * call's own argument values) may stay where they stand as written (see `RedactOptions`).
 */
export function redactForModel(
  text: string,
  policy: Policy,
  sensitiveValues: readonly string[] = [],
  keepValues: readonly string[] = [],
): string {
  const { maxLength, emails, patterns } = policy.redaction;
  if (sensitiveValues.length > 0 || keepValues.length > 0)
    return redact(text, { maxLength, emails, patterns, sensitiveValues, keepValues });
  // Without sensitive values, one options object per policy's settings (none made per failure).
  const last = plainOptions.get(policy.redaction);
  if (
    last !== undefined &&
    last.maxLength === maxLength &&
    last.emails === emails &&
    last.patterns === patterns
  ) {
    return redact(text, last);
  }
  const options = { maxLength, emails, patterns };
  plainOptions.set(policy.redaction, options);
  return redact(text, options);
}

/** The redaction options of each policy's settings, read again in case they were changed. */
const plainOptions = new WeakMap<
  Policy["redaction"],
  {
    readonly maxLength: number;
    readonly emails: boolean;
    readonly patterns: Policy["redaction"]["patterns"];
  }
>();

/** The middle of the jitter's range: judging one failure draws no random number. */
function middle(): number {
  return 0.5;
}

/**
 * Judges one failure as the first failure of a fresh run: no repeat, budget or breaker state.
 * What `governor classify` prints for each line.
 */
export function assessFailure(failure: Failure, options: AssessOptions): Assessment {
  const { tool, effect, policy } = options;
  // Judged with the effect the decision reads, where the policy's own says another or nothing:
  // classify reads a write's marks only where the tool may be `mutating`.
  const classification = classify(
    failure,
    tool.effect === effect ? tool : { ...tool, effect },
    options.call,
  );
  const print = fingerprint({
    tool: tool.tool,
    channel: failure.channel,
    text: failure.text,
    ...(failure.code !== undefined && { code: failure.code }),
    ...(options.call?.args !== undefined && { args: options.call.args }),
  });
  const learned = options.learned?.(print);
  const base = {
    classification,
    tool,
    effect,
    attempt: 1,
    repeats: 1,
    // A key would be minted for a tool that honors keys; a verify step would settle the doubt.
    keyed: tool.idempotency.honorsKeys || tool.idempotency.verify,
    remainingMs: Number.POSITIVE_INFINITY,
    random: middle,
    ...(learned !== undefined && { learned }),
  };
  const decision = decide(base);
  if (decision.action === "host") {
    return { classification, decision, fingerprint: print, message: null };
  }
  // A retried failure reaches the model only once retries run out: show that text.
  const shown =
    decision.action === "retry_dependency"
      ? decide({ ...base, attempt: tool.retry.attempts })
      : decision;
  const message = composeMessage({
    tool: tool.tool,
    observation: redactForModel(
      failure.text,
      policy,
      options.sensitiveValues ??
        (options.call?.args === undefined || tool.sensitiveArgs.length === 0
          ? []
          : sensitiveValues(options.call.args, tool.sensitiveArgs)),
      options.call?.args === undefined ? [] : argumentStrings(options.call.args),
    ),
    decision: shown,
    repeats: 1,
    maxRepeats: tool.maxRepeats,
    attempts: shown === decision ? 1 : tool.retry.attempts,
    ...(classification.hint !== undefined && { hint: classification.hint }),
  });
  return { classification, decision, fingerprint: print, message };
}
