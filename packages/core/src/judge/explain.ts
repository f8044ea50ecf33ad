import type { ToolPolicy } from "../policy/policy.ts";
import { type CallFacts, readCallEvidence } from "./call-evidence.ts";
import {
  type Classification,
  MODEL_DISPUTE_STOP_OVER,
  policyRuleFor,
  textForRules,
} from "./classify.ts";
import type { Failure } from "./failure.ts";
import { explainBuiltinMatch } from "./rules.ts";

/** Why a failure got its classification: `governor classify --explain` prints it. */
export interface Explanation {
  /** The step that decided (the classification's `source`). */
  readonly decidedBy: Classification["source"];
  /** What in it decided: the policy rule, the signal, the built-in rule and its phrasing, the evidence. */
  readonly detail: string;
  /**
   * How sure the step is: `high` for the policy and structured signals (someone said so on
   * purpose), `medium` for a phrasing of the text or what the call shows, `low` for the default.
   * For the learned text model: `medium` when it was sure ({@link Explanation.model}), else `low`.
   */
  readonly confidence: "high" | "medium" | "low";
  /**
   * When the learned text model decided: its probability for the class it read, whether that was
   * below the bar (`unsure`), and the features of the text that weighed most for it.
   */
  readonly model?: Classification["model"];
}

const CONFIDENCE: Record<Classification["source"], Explanation["confidence"]> = {
  policy: "high",
  signal: "high",
  rule: "medium",
  evidence: "medium",
  model: "medium",
  default: "low",
};

function signalDetail(failure: Failure): string {
  if (failure.channel === "protocol") return `JSON-RPC error code ${String(failure.code)}`;
  if (failure.channel === "local") {
    const status = failure.httpStatus === undefined ? "" : ` (HTTP ${failure.httpStatus})`;
    return `client-side failure: ${failure.local ?? "unknown"}${status}`;
  }
  if (failure.toolFailure !== undefined) {
    const { class: kind, retryable } = failure.toolFailure;
    return `tool-failure metadata (class ${kind ?? "none"}, retryable ${String(retryable ?? "unset")})`;
  }
  if (failure.httpStatus !== undefined) return `HTTP status ${failure.httpStatus} in the result`;
  return `system error code ${String(failure.code)}`;
}

function ruleDetail(text: string): string {
  const hit = explainBuiltinMatch(text);
  return hit === undefined
    ? "no built-in rule"
    : `built-in rule #${hit.index} (${hit.rule.reason}): /${hit.phrasing}/`;
}

/**
 * Explains a classification made by `classify(failure, tool, call)`: which step decided, what in
 * it, and how sure it is. Pure; names rules and arguments, never argument values.
 */
export function explainClassification(
  failure: Failure,
  tool: ToolPolicy,
  classification: Classification,
  call?: CallFacts,
): Explanation {
  const source = classification.source;
  let detail: string;
  switch (source) {
    case "policy": {
      const at = policyRuleFor(failure, tool);
      const rule = at === undefined ? undefined : tool.rules[at];
      const what = [
        rule?.code !== undefined ? `code ${JSON.stringify(rule.code)}` : "",
        rule?.match !== undefined ? `match ${JSON.stringify(rule.match)}` : "",
      ]
        .filter((s) => s !== "")
        .join(", ");
      detail = `policy rule #${at ?? "?"} of tool ${tool.tool}${what === "" ? "" : ` (${what})`}`;
      break;
    }
    case "signal":
      detail = signalDetail(failure);
      break;
    case "rule":
      detail = ruleDetail(textForRules(failure, call));
      break;
    case "evidence": {
      const evidence = readCallEvidence(failure.text, call);
      const named = JSON.stringify(evidence.argument?.name ?? "?");
      const about =
        evidence.argument?.by === "schema"
          ? `call breaks the tool's schema at the argument ${named}`
          : `text names the argument ${named}`;
      detail =
        failure.channel === "protocol"
          ? `JSON-RPC error code ${String(failure.code)} whose ${about} ` +
            "and reads as the tool's own failure (a low-level server sends what its tool threw as -32603)"
          : classification.action === "stop"
            ? "the text names a path or host that appears nowhere in the arguments: the server's own side"
            : evidence.argument?.by === "schema"
              ? `the ${about}, and the text says what is wrong with it`
              : `the text names the argument ${named} ` +
                `(by its ${evidence.argument?.by ?? "name"}) and says what is wrong with it`;
      detail += `; before the call's evidence: ${ruleDetail(textForRules(failure, call))}`;
      break;
    }
    case "model": {
      const m = classification.model;
      const top = (m?.features ?? []).map((f) => `${f.feature} (${f.weight})`).join(", ");
      detail =
        `no policy rule, signal or built-in rule matched: the learned text model read ${m?.read ?? "?"} ` +
        `with probability ${m?.probability ?? "?"}${m?.unsure === true ? " (unsure)" : ""}; weighed most: ${top}`;
      if (m?.unsure === true && m.read !== classification.action) {
        detail += `; an unsure ${m.read} is not taken, ${classification.action} stands`;
      }
      break;
    }
    case "default":
      detail =
        "no policy rule, signal or built-in rule matched, and the learned text model knows no word of the text: the default applies";
      if (tool.effect === "mutating") detail += " (a guess on a mutating tool: the run stops it)";
      break;
  }
  if ((source === "rule" || source === "model") && classification.reason === "retries_exhausted") {
    detail += "; the text says the failure is not to be retried, so it stops";
  }
  if (classification.unbackedByCall === true) {
    detail +=
      "; the text names no argument of the call and no property of the tool's schema: a mutating tool stops";
  }
  if (classification.bareConflict === true) {
    detail +=
      "; a conflict read from a bare status or word names nothing to change: a mutating tool stops";
  }
  if (classification.disputedByModel === true) {
    detail += `; the learned text model reads the whole text as a stop, at least ${MODEL_DISPUTE_STOP_OVER} times likelier than a correction: a mutating tool stops`;
  }
  if (classification.wholeOperation === true) {
    detail +=
      "; the text refuses the operation as a whole and names no field or value: a mutating tool stops";
  }
  if (classification.onRetriesExhausted === "correct_arguments") {
    detail += "; the failing target is one the model chose: once retries run out, it may change it";
  }
  if (source === "model" && classification.model !== undefined) {
    const { model } = classification;
    return { decidedBy: source, detail, confidence: model.unsure ? "low" : "medium", model };
  }
  return { decidedBy: source, detail, confidence: CONFIDENCE[source] };
}
