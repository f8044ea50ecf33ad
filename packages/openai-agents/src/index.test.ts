import { GovernorStopError } from "@governor/core";
import { expect, it } from "vitest";
import * as api from "./index.ts";

it("exports exactly the public API", () => {
  expect(Object.keys(api).sort()).toEqual([
    "GovernorStopError",
    "governMcpServer",
    "governedFetch",
    "governedTool",
    "governorStopOf",
    "hostErrorOf",
  ]);
});

it("GovernorStopError is @governor/core's class, the one every adapter throws", () => {
  expect(api.GovernorStopError).toBe(GovernorStopError);
});

it("refuses a run or governor it could not work with, naming the field (without a run the first call threw)", async () => {
  const { createGovernor } = await import("@governor/core");
  const governor = createGovernor({}, { metrics: false });
  const run = governor.startRun();
  const options = { name: "t", description: "d", parameters: undefined, execute: async () => "x" };
  const refused = (call: () => unknown, message: RegExp) =>
    expect(call).toThrow(
      expect.objectContaining({ code: "invalid_options", message: expect.stringMatching(message) }),
    );
  refused(
    () => api.governedTool(options as never, {} as never),
    /^governedTool\(t\): run must be a Governor run/,
  );
  refused(() => api.governedTool(options as never, { run: governor } as never), /got object/);
  refused(
    () => api.governedTool(options as never, { run, server: 3 } as never),
    /server must be a string/,
  );
  const server = { name: "notes", callTool: async () => [], listTools: async () => [] };
  refused(
    () => api.governMcpServer(server as never, { governor, run: undefined } as never),
    /^governMcpServer: run must be/,
  );
  refused(
    () => api.governMcpServer(server as never, { run } as never),
    /governor must be a Governor/,
  );
  refused(
    () => api.governMcpServer(server as never, { governor, run, reconnect: "yes" } as never),
    /^governMcpServer: reconnect must be true, false or a function \(signal\) => Promise<void>, got string$/,
  );
  for (const reconnectTimeoutMs of [0, -1, Number.NaN, "10"]) {
    refused(
      () =>
        api.governMcpServer(
          server as never,
          {
            governor,
            run,
            reconnect: true,
            reconnectTimeoutMs,
          } as never,
        ),
      /^governMcpServer: reconnectTimeoutMs must be a positive number of ms, got /,
    );
  }
  expect(api.governMcpServer(server as never, { governor, run }).name).toBe("notes");
});
