import type { PolicyInput } from "@governor/core";
import type { FaultStep } from "@governor/testkit";

/**
 * The fault matrix of docs/idempotency.md: every kind of tool against every way a call can go
 * wrong. test/idempotency-matrix.test.ts runs each cell end to end and checks the docs table.
 */

export type Kind =
  | "read_only"
  | "idempotent"
  | "mutating_keyed"
  | "mutating_verify"
  | "mutating_bare";
export type Mode =
  | "lost_after_commit"
  | "crash_before_effect"
  | "crash_after_effect"
  | "hang_past_timeout"
  | "503_then_success";

export const KINDS: Record<
  Kind,
  { tool: string; args: Record<string, unknown>; policy: PolicyInput["tools"] }
> = {
  read_only: {
    tool: "get_note",
    args: { id: "welcome" },
    policy: { get_note: { effect: "read_only" } },
  },
  idempotent: {
    tool: "set_status",
    args: { id: "welcome", status: "archived" },
    policy: { set_status: { effect: "idempotent" } },
  },
  mutating_keyed: {
    tool: "create_note",
    args: { title: "t", body: "b" },
    policy: { create_note: { effect: "mutating", idempotency: { honorsKeys: true } } },
  },
  mutating_verify: {
    tool: "append_log",
    args: { line: "hello" },
    policy: { append_log: { effect: "mutating", idempotency: { verify: true } } },
  },
  mutating_bare: {
    tool: "append_log",
    args: { line: "hello" },
    policy: { append_log: { effect: "mutating" } },
  },
};

export const STEPS: Record<Mode, FaultStep> = {
  lost_after_commit: { kind: "drop_after_commit" },
  crash_before_effect: { kind: "exit" },
  crash_after_effect: { kind: "drop_after_commit" },
  hang_past_timeout: { kind: "hang", ms: 600 },
  "503_then_success": { kind: "status", status: 503 },
};

/** What each cell must end in: the outcome, and the effects the server recorded. */
export const EXPECTED: Record<Kind, Record<Mode, string>> = {
  read_only: {
    lost_after_commit: "ok, 0",
    crash_before_effect: "ok, 0",
    crash_after_effect: "ok, 0",
    hang_past_timeout: "ok, 0",
    "503_then_success": "ok, 0",
  },
  idempotent: {
    lost_after_commit: "ok, 1",
    crash_before_effect: "ok, 1",
    crash_after_effect: "ok, 1",
    hang_past_timeout: "ok, 1",
    "503_then_success": "ok, 1",
  },
  mutating_keyed: {
    lost_after_commit: "ok, 1",
    crash_before_effect: "ok, 1",
    crash_after_effect: "ok, 1",
    hang_past_timeout: "ok, 1",
    "503_then_success": "ok, 1",
  },
  mutating_verify: {
    lost_after_commit: "ok (verified), 1",
    crash_before_effect: "ok, 1",
    crash_after_effect: "ok (verified), 1",
    hang_past_timeout: "ok, 1",
    "503_then_success": "ok, 1",
  },
  mutating_bare: {
    lost_after_commit: "stop uncertain_mutation, 1",
    crash_before_effect: "stop uncertain_mutation, 0",
    crash_after_effect: "stop uncertain_mutation, 1",
    hang_past_timeout: "stop uncertain_mutation, 0",
    "503_then_success": "ok, 1",
  },
};

const HOW: Record<Mode, string> = {
  lost_after_commit:
    "Streamable HTTP: the write commits, then the socket is destroyed (`fetch failed`)",
  crash_before_effect: "the server goes away before the tool runs (`-32000 Connection closed`)",
  crash_after_effect: "the write commits, then the server goes away (`-32000 Connection closed`)",
  hang_past_timeout:
    "the tool hangs past the client timeout (`-32001`); the cancelled call writes nothing",
  "503_then_success": "`503 Service Unavailable` (nothing written), then success",
};

/** Renders the docs table from EXPECTED. */
export function renderMatrix(): string {
  const modes = Object.keys(STEPS) as Mode[];
  const head = `| tool \\ failure | ${modes.map((m) => `\`${m}\``).join(" | ")} |`;
  const rule = `|---|${modes.map(() => "---").join("|")}|`;
  const rows = (Object.keys(KINDS) as Kind[]).map(
    (k) => `| \`${k}\` | ${modes.map((m) => EXPECTED[k][m]).join(" | ")} |`,
  );
  const legend = modes.map((m) => `- \`${m}\`: ${HOW[m]}.`);
  return [head, rule, ...rows, "", ...legend].join("\n");
}
