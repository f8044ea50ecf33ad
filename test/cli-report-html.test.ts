/**
 * The HTML report of the demo's own log (the enforcing demo, `governor demo --events`) in
 * Chromium with scripts off: it answers which tool stopped which runs and why without hovering.
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { governor, ROOT } from "./cli.ts";

// Debian's chromium, as test/cli-replay.test.ts uses it (CI: GOVERNOR_REQUIRE_CHROMIUM=1).
const CHROMIUM = "/usr/bin/chromium";
const browserIt =
  existsSync(CHROMIUM) || process.env.GOVERNOR_REQUIRE_CHROMIUM === "1" ? it : it.skip;

let dir: string;
let page: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "governor-report-html-"));
  const log = join(dir, "demo.jsonl");
  const ran = await governor(["demo", "--events", log, "--json"]);
  expect(ran.stderr).toBe("");
  expect(ran.status).toBe(0);
  page = join(dir, "report.html");
  const made = await governor(["report", log, "--html", page]);
  expect(made.stderr).toBe("");
  expect(made.status).toBe(0);
}, 240_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

browserIt(
  "the demo's report shows, with scripts off, which tool stopped which runs and why, and no label overlaps another",
  async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    try {
      const context = await browser.newContext({
        javaScriptEnabled: false,
        viewport: { width: 1150, height: 900 },
      });
      const tab = await context.newPage();
      const requests: string[] = [];
      tab.on("request", (r) => {
        if (!r.url().startsWith("file:")) requests.push(r.url());
      });
      await tab.goto(`file://${page}`, { waitUntil: "load" });

      // The table: one row per stop reason and tool, its count, one redacted example.
      const rows = await tab.$$eval("table.stops tbody tr", (trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent?.trim() ?? "")),
      );
      expect(rows).toEqual([
        ["business_rule", "transfer_funds", "1", expect.stringContaining("Transfer refused")],
        ["forbidden", "delete_account", "1", expect.stringContaining("Permission denied")],
        ["uncertain_mutation", "append_log", "1", expect.stringContaining("Connection closed")],
      ]);
      expect(await tab.textContent("table.stops caption")).toContain("3 stopped runs");

      // Each stopped run step by step: the latest open, the others open on a click, no script.
      const details = tab.locator("#stopped-runs details");
      expect(await details.count()).toBe(3);
      expect(await details.nth(0).locator("ol.steps").isVisible()).toBe(true);
      expect(await details.nth(1).locator("ol.steps").isVisible()).toBe(false);
      await details.nth(1).locator("summary").click();
      expect(await details.nth(1).locator("ol.steps").isVisible()).toBe(true);
      const steps = await details.nth(0).locator("ol.steps li").allTextContents();
      expect(steps.join("\n")).toMatch(
        /call 1 append_log attempt 1 failed: stopped the run \(stop, reason uncertain_mutation\)/,
      );

      // Counts are written on the charts, and no two texts of a chart overlap.
      const overlaps = await tab.$$eval("figure.chart svg", (svgs) =>
        svgs.flatMap((svg) => {
          const boxes = [...svg.querySelectorAll("text")].map((t) => ({
            text: t.textContent ?? "",
            box: t.getBoundingClientRect(),
          }));
          const found: string[] = [];
          for (let i = 0; i < boxes.length; i += 1) {
            for (let j = i + 1; j < boxes.length; j += 1) {
              const a = (boxes[i] as (typeof boxes)[number]).box;
              const b = (boxes[j] as (typeof boxes)[number]).box;
              const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
              const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
              if (w > 1 && h > 1) found.push(`${boxes[i]?.text} / ${boxes[j]?.text}`);
            }
          }
          return found.map((f) => `${svg.getAttribute("aria-label")}: ${f}`);
        }),
      );
      expect(overlaps).toEqual([]);
      const counts = await tab.$$eval("figure[data-chart=run-ends] text.count", (ts) =>
        ts.map((t) => Number(t.textContent)),
      );
      expect(counts.reduce((n, c) => n + c, 0)).toBe(10);
      expect(requests).toEqual([]);

      // The screenshot is the test's artifact, for a person to look at.
      await mkdir(join(ROOT, "artifacts"), { recursive: true });
      const shot = join(ROOT, "artifacts", "report-stops.png");
      await tab.screenshot({ path: shot, fullPage: true });
      expect((await stat(shot)).size).toBeGreaterThan(10_000);
    } finally {
      await browser.close();
    }
  },
  60_000,
);
