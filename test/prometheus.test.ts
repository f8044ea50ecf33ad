import { createServer } from "node:net";
import { createGovernor } from "@governor/core";
import { metrics } from "@opentelemetry/api";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// docs/telemetry.md "Scraping with Prometheus": Governor's OpenTelemetry metrics served by
// @opentelemetry/exporter-prometheus on loopback, scraped over HTTP as Prometheus does.

/** A port free on loopback right now (the exporter takes a port, not an ephemeral 0). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(),
      );
    });
  });
}

describe("Prometheus scrape of Governor's metrics", () => {
  let exporter: PrometheusExporter;
  let provider: MeterProvider;
  let port: number;

  beforeAll(async () => {
    port = await freePort();
    exporter = new PrometheusExporter({ host: "127.0.0.1", port, endpoint: "/metrics" });
    await exporter.startServer();
    provider = new MeterProvider({ readers: [exporter] });
    metrics.setGlobalMeterProvider(provider);
  });

  afterAll(async () => {
    await provider.shutdown();
    metrics.disable();
  });

  it("after a governed run, the stop-reason counter is on the endpoint", async () => {
    const governor = createGovernor(
      { defaults: { effect: "read_only" } },
      { random: () => 0.5, knownTools: ["get_note"] },
    );
    const run = governor.startRun();
    const missing = async () => ({
      isError: true,
      content: [{ type: "text", text: 'No note with id "drafts"' }],
    });
    let outcome = await run.call({ tool: "get_note", args: { id: "drafts" } }, missing);
    for (let i = 0; outcome.kind !== "stop" && i < 5; i += 1) {
      outcome = await run.call({ tool: "get_note", args: { id: `drafts-${i}` } }, missing);
    }
    expect(outcome).toMatchObject({ kind: "stop", reason: "repeated_failure" });
    run.end();

    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/plain");
    const body = await response.text();
    expect(body).toContain("# TYPE governor_runs_stopped_total counter");
    expect(body).toMatch(/^governor_runs_stopped_total\{[^}]*reason="repeated_failure"[^}]*\} 1$/m);
    expect(body).toMatch(
      /^governor_tool_failures_total\{[^}]*tool="get_note"[^}]*reason="not_found"[^}]*\} 2$/m,
    );
    expect(body).toMatch(/^governor_run_duration_bucket\{/m);
  });
});
