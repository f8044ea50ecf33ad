import { describe, expect, it } from "vitest";
import * as core from "./index.ts";
import * as judge from "./judge/index.ts";

describe("the public API", () => {
  it("root: what an agent loop or an adapter needs, an explicit list", () => {
    expect(Object.keys(core).sort()).toMatchInlineSnapshot(`
      [
        "ACTIONS",
        "EVENT_SCHEMA_VERSION",
        "GovernorError",
        "GovernorStopError",
        "HostError",
        "IDEMPOTENCY_META_KEY",
        "PERSON_RESOLVABLE",
        "REASONS",
        "ReconnectFailed",
        "StoreError",
        "TOOL_FAILURE_META_KEY",
        "checkAddOutcome",
        "createGovernor",
        "createJsonlSink",
        "createMemoryStore",
        "createOtelRecorder",
        "createReconnector",
        "failureFromError",
        "failureFromResult",
        "isHeld",
        "loadPolicy",
        "localFailure",
        "parseEvents",
        "policyJsonSchema",
        "settleHoldMs",
        "summarizeEventLines",
        "summarizeEvents",
        "withoutKeyArgument",
      ]
    `);
  });

  it("judge subpath: the building blocks that judge one failure, an explicit list", () => {
    expect(Object.keys(judge).sort()).toMatchInlineSnapshot(`
      [
        "BUILTIN_RULES",
        "LEARNING_DEFAULTS",
        "MAX_RESULT_DEPTH",
        "OUTCOME_FIELDS",
        "addToCounts",
        "assessFailure",
        "canonicalJson",
        "classify",
        "classifyHttpStatus",
        "composeMessage",
        "countsAt",
        "decide",
        "describeLearned",
        "effectFromAnnotations",
        "eventSchema",
        "explainClassification",
        "fingerprint",
        "hashArgs",
        "hostErrorText",
        "isDeliverable",
        "learnedDemotion",
        "learnedKey",
        "learnedPrefix",
        "matchBuiltinRules",
        "normalizeText",
        "parseEventLine",
        "parseLearnedKey",
        "parseRetryAfter",
        "policySchema",
        "readCallEvidence",
        "redact",
        "replayedText",
        "resolveEffect",
        "resolveToolPolicy",
        "safeToRepeat",
        "stopsGuessedWrite",
        "stripMcpPrefix",
        "undeliverableText",
      ]
    `);
  });

  it("the two entries share no runtime name (each export has one home)", () => {
    const shared = Object.keys(core).filter((name) => name in judge);
    expect(shared).toEqual([]);
  });
});
