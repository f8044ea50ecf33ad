/**
 * The demo's governed agent, traced through the real OpenTelemetry SDK (examples/demo-trace.ts):
 * every tool call is a span under its run, and every failed attempt under it says what Governor
 * decided and why.
 */
import { expect, it } from "vitest";
import { demoTrace } from "../examples/demo-trace.ts";

it("shows under each tool call of the demo what Governor did and why", async () => {
  const text = await demoTrace();
  const lines = text.split("\n");
  const roots = lines.filter((l) => !/^[│├└ ]/.test(l));
  // One run span per governed task (the naive and blind-retry runtimes use no governor).
  expect(roots.length).toBe(10);
  expect(roots.every((l) => l.startsWith("governor.run"))).toBe(true);
  // Calls under runs, attempts under calls.
  expect(lines.filter((l) => /^[├└]─ execute_tool /.test(l)).length).toBeGreaterThanOrEqual(10);
  const failedAttempts = lines.filter((l) => /governor\.attempt \S+ ERROR/.test(l));
  expect(failedAttempts.length).toBeGreaterThan(0);
  for (const line of failedAttempts) {
    expect(line).toMatch(/governor\.action=\w+ governor\.reason=\w+/);
  }
  // The demo's stops, retries, corrections and switches are each in the trace.
  expect(text).toMatch(
    /governor\.run ERROR {2}governor\.run\.reason=uncertain_mutation\n└─ execute_tool append_log ERROR/,
  );
  expect(text).toMatch(/governor\.run ERROR {2}governor\.run\.reason=business_rule/);
  expect(text).toMatch(/governor\.action=retry_dependency governor\.reason=unavailable/);
  expect(text).toMatch(/governor\.action=correct_arguments governor\.reason=not_found/);
  expect(text).toMatch(/governor\.action=switch_tool/);
}, 120_000);
