import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadPolicy } from "@governor/core";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_POLICY } from "../packages/cli/src/demo-governed.ts";
import type { ReplayReport } from "../packages/cli/src/replay-log.ts";
import { governor, governorProcess, ROOT } from "./cli.ts";

const policyFile = join(ROOT, "examples/demo-policy.json");

// Debian's chromium, which .ci/run installs. Skipped only where it is missing and not required
// (CI sets GOVERNOR_REQUIRE_CHROMIUM=1: there a missing browser fails the test).
const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.GOVERNOR_REQUIRE_CHROMIUM !== "1") {
  console.warn(`skipping the browser test: ${CHROMIUM} is missing (apt-get install -y chromium)`);
}
const browserIt = haveChromium || process.env.GOVERNOR_REQUIRE_CHROMIUM === "1" ? it : it.skip;

interface DemoJson {
  observeOnly?: boolean;
  tasks: { id: string; governed: { outcome: string; toolCalls: number } }[];
}

// The "done means": the demo run in observe-only mode, its event log replayed under the
// enforcing policy (examples/demo-policy.json), shows the stops the enforcing demo makes
// (test/cli-demo.test.ts pins those: forbidden, business_rule, uncertain_mutation) with the
// calls they save.
describe("governor replay of the observe-only demo", () => {
  let dir: string;
  let log: string;
  let demo: DemoJson;
  let report: ReplayReport;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "governor-replay-"));
    log = join(dir, "observe.jsonl");
    const ran = await governor(["demo", "--observe", "--events", log, "--json"]);
    expect(ran.stderr).toBe("");
    expect(ran.status).toBe(0);
    demo = JSON.parse(ran.stdout) as DemoJson;
    const replayed = await governor(["replay", log, "--policy", policyFile, "--json"]);
    expect(replayed.stderr).toBe("");
    expect(replayed.status).toBe(0);
    report = JSON.parse(replayed.stdout) as ReplayReport;
  }, 240_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("examples/demo-policy.json is the demo's enforcing policy", async () => {
    const file = loadPolicy(await readFile(policyFile, "utf8"));
    expect(file).toEqual(loadPolicy(DEMO_POLICY));
  });

  it("the observe-only demo enforced nothing: the model met every failure", () => {
    expect(demo.observeOnly).toBe(true);
    const outcomes = Object.fromEntries(demo.tasks.map((t) => [t.id, t.governed.outcome]));
    expect(outcomes["permission-denied"]).toBe("turn_limit");
    expect(outcomes["business-rule"]).toBe("turn_limit");
  });

  it("replayed, the runs stop where the enforcing demo stops, at their first call, with calls saved", () => {
    const calls = Object.fromEntries(demo.tasks.map((t) => [t.id, t.governed.toolCalls]));
    const stops = Object.fromEntries(
      report.runDetails
        .filter((r) => r.effect === "stopped_earlier")
        .map((r) => [
          r.runId,
          { reason: r.after?.reason, call: r.after?.call, saved: r.callsSaved },
        ]),
    );
    expect(stops).toEqual({
      "permission-denied": {
        reason: "forbidden",
        call: 1,
        saved: (calls["permission-denied"] ?? 0) - 1,
      },
      "business-rule": {
        reason: "business_rule",
        call: 1,
        saved: (calls["business-rule"] ?? 0) - 1,
      },
      "lost-response-unkeyed": {
        reason: "uncertain_mutation",
        call: 1,
        saved: (calls["lost-response-unkeyed"] ?? 0) - 1,
      },
    });
    expect(report.runs).toMatchObject({ total: 10, stoppedEarlier: 3, stoppedLater: 0, open: 0 });
    expect(report.callsSaved).toBe(Object.values(stops).reduce((n, s) => n + s.saved, 0));
  });

  it("the crashing tool: retried twice, then switched to the policy's alternative, where the log cannot follow", () => {
    expect(report.changes).toContainEqual({
      runId: "crash-with-secrets",
      call: 3,
      tool: "crash_with_stack",
      fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
      before: { action: "retry_dependency", reason: "connection_refused" },
      after: { action: "switch_tool", reason: "connection_refused" },
    });
    const crash = report.runDetails.find((r) => r.runId === "crash-with-secrets");
    expect(crash).toMatchObject({ effect: "diverged", after: null, diverged: { call: 3 } });
    expect(crash?.diverged?.why).toContain("search_notes");
  });

  it("prints the same as text, and refuses bad usage with what is accepted", async () => {
    const text = await governor(["replay", log, "--policy", policyFile]);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain("Runs: 10 ended");
    expect(text.stdout).toContain(
      "permission-denied: was completed at call 8; would end forbidden at call 1, 7 calls saved",
    );
    // A real process: the exit status and stderr of the command as a shell runs it.
    const noPolicy = await governorProcess(["replay", log]);
    expect(noPolicy.status).toBe(2);
    expect(noPolicy.stderr).toContain("--policy FILE is required");
    const badPolicy = join(dir, "bad.json");
    await writeFile(badPolicy, JSON.stringify({ budgets: { calls: -1 } }));
    const bad = await governor(["replay", log, "--policy", badPolicy]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("budgets.calls");
  }, 60_000);

  browserIt(
    "the HTML report of the demo's log, with the replay, opens in Chromium with every chart filled",
    async () => {
      const page = join(dir, "report.html");
      const made = await governor([
        "report",
        log,
        "--html",
        page,
        "--replay",
        "--policy",
        policyFile,
      ]);
      expect(made.stderr).toBe("");
      expect(made.status).toBe(0);
      expect((await stat(page)).size).toBeGreaterThan(0);

      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
      try {
        const tab = await browser.newPage({ viewport: { width: 1150, height: 900 } });
        const problems: string[] = [];
        tab.on("console", (m) => {
          if (m.type() === "error" || m.type() === "warning")
            problems.push(`${m.type()}: ${m.text()}`);
        });
        tab.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
        tab.on("request", (r) => {
          if (!r.url().startsWith("file:")) problems.push(`request: ${r.url()}`);
        });
        await tab.goto(`file://${page}`, { waitUntil: "load" });
        const charts = await tab.$$eval("figure.chart", (figures) =>
          figures.map((f) => ({
            chart: f.getAttribute("data-chart"),
            bars: [...f.querySelectorAll("rect.bar")].filter((r) => {
              const box = r.getBoundingClientRect();
              return Number(r.getAttribute("data-value")) > 0 && box.width > 0 && box.height > 0;
            }).length,
          })),
        );
        expect(charts.map((c) => c.chart)).toEqual([
          "run-ends",
          "fingerprints",
          "tool-rates",
          "budget-use",
          "replay",
        ]);
        for (const c of charts) expect(c.bars, String(c.chart)).toBeGreaterThan(0);
        expect(await tab.textContent("body")).toContain("3 would stop earlier");
        expect(problems).toEqual([]);
        // The screenshot is the test's artifact (docs/img/report.png is one of these).
        await mkdir(join(ROOT, "artifacts"), { recursive: true });
        const shot = join(ROOT, "artifacts", "report.png");
        await tab.screenshot({ path: shot, fullPage: true });
        expect((await stat(shot)).size).toBeGreaterThan(10_000);
      } finally {
        await browser.close();
      }
    },
    60_000,
  );
});
