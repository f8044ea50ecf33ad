import { beforeAll, describe, expect, it } from "vitest";
import { governorProcess, type Ran } from "./cli.ts";

const STRATEGIES = ["naive", "blindRetry", "governed"] as const;
const CONTRACT = [
  "toolCalls",
  "wastedCalls",
  "duplicateWrites",
  "secretsToModel",
  "tasksSucceeded",
] as const;

type Totals = Record<(typeof CONTRACT)[number], number> & {
  stopReasons: Record<string, number>;
};
interface TaskDetail {
  id: string;
  naive: { outcome: string; toolCalls: number; duplicateWrites: number; secretsToModel: number };
  blindRetry: { outcome: string; toolCalls: number; duplicateWrites: number };
  governed: { outcome: string; toolCalls: number; duplicateWrites: number; secretsToModel: number };
}
interface Report {
  totals: Record<(typeof STRATEGIES)[number], Totals>;
  tasks: TaskDetail[];
  metrics: {
    runs: number;
    retries: number;
    corrections: number;
    switches: number;
    stops: Record<string, number>;
  };
}

describe("governor demo --json", () => {
  let ran: Ran;
  let report: Report;

  beforeAll(async () => {
    // A real process: the demo as a shell runs it.
    ran = await governorProcess(["demo", "--json"]);
    report = JSON.parse(ran.stdout) as Report;
  }, 120_000);

  it("exits 0 and prints exactly one JSON object on stdout", () => {
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stdout.trim().split("\n")).toHaveLength(1);
    expect(typeof report).toBe("object");
    expect(Array.isArray(report)).toBe(false);
  });

  it("holds the contract fields as numbers for every strategy", () => {
    for (const strategy of STRATEGIES) {
      for (const field of CONTRACT) {
        expect(typeof report.totals[strategy][field], `${strategy}.${field}`).toBe("number");
        expect(Number.isFinite(report.totals[strategy][field])).toBe(true);
      }
    }
  });

  it("shows what Governor is for", () => {
    const { naive, blindRetry, governed } = report.totals;
    expect(governed.duplicateWrites).toBe(0);
    expect(governed.secretsToModel).toBe(0);
    expect(naive.secretsToModel).toBeGreaterThan(0);
    expect(blindRetry.duplicateWrites).toBeGreaterThan(0);
    expect(governed.tasksSucceeded).toBeGreaterThanOrEqual(naive.tasksSucceeded);
    expect(governed.tasksSucceeded).toBeGreaterThanOrEqual(blindRetry.tasksSucceeded);
    expect(governed.wastedCalls).toBeLessThan(naive.wastedCalls);
    expect(governed.wastedCalls).toBeLessThan(blindRetry.wastedCalls);
  });

  it("stops the unfixable and the uncertain, and says why", () => {
    const byId = new Map(report.tasks.map((t) => [t.id, t]));
    expect(byId.get("lost-response-unkeyed")?.governed.outcome).toBe("uncertain_mutation");
    expect(byId.get("business-rule")?.governed.outcome).toBe("business_rule");
    expect(byId.get("lost-response-keyed")?.governed).toMatchObject({
      outcome: "succeeded",
      duplicateWrites: 0,
    });
    expect(byId.get("lost-response-keyed")?.blindRetry.duplicateWrites).toBe(1);
    expect(byId.get("permission-denied")?.naive.outcome).toBe("turn_limit");
    expect(report.totals.governed.stopReasons.uncertain_mutation).toBe(1);
    expect(report.metrics.runs).toBe(report.tasks.length);
    expect(report.metrics.retries).toBeGreaterThan(0);
    expect(report.metrics.corrections).toBeGreaterThan(0);
    expect(report.metrics.switches).toBeGreaterThan(0);
  });
});
