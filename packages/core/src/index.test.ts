import { describe, expect, it } from "vitest";
import * as core from "./index.ts";

describe("the public API", () => {
  it("is an explicit list: nothing leaks by accident", () => {
    expect(Object.keys(core).sort()).toMatchInlineSnapshot(`
      [
        "ACTIONS",
        "BUILTIN_RULES",
        "EVENT_SCHEMA_VERSION",
        "GovernorError",
        "HostError",
        "IDEMPOTENCY_META_KEY",
        "PERSON_RESOLVABLE",
        "REASONS",
        "StoreError",
        "TOOL_FAILURE_META_KEY",
        "assessFailure",
        "canonicalJson",
        "classify",
        "classifyHttpStatus",
        "composeMessage",
        "createGovernor",
        "createJsonlSink",
        "createMemoryStore",
        "createOtelRecorder",
        "decide",
        "effectFromAnnotations",
        "eventSchema",
        "failureFromError",
        "failureFromResult",
        "fingerprint",
        "hashArgs",
        "loadPolicy",
        "localFailure",
        "matchBuiltinRules",
        "normalizeText",
        "parseEvents",
        "parseRetryAfter",
        "policyJsonSchema",
        "policySchema",
        "redact",
        "resolveEffect",
        "resolveToolPolicy",
        "safeToRepeat",
        "stripMcpPrefix",
        "summarizeEventLines",
        "summarizeEvents",
      ]
    `);
  });
});
