// Issue 12.5: what runs learn is shared by workers through Redis, and visible and resettable from
// the CLI (`governor learned list|reset`, `governor classify --explain --learned`,
// `governor report`).
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, type GovernorEvent } from "@governor/core";
import { createRedisStore, type RedisStore } from "@governor/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sharedRedis } from "../packages/redis/src/testing-server.ts";
import { governor as cli, governorProcess } from "./cli.ts";

const redis = await sharedRedis("learning on Redis");
const url = redis.url;
const problem = redis.problem;

// The CLI runs in this process but one call, which starts a Node process with tsx: seconds on a
// loaded machine.
const CLI_MS = 120_000;

const TEXT = "Invalid value for field 'owner': not allowed";
const failure = { content: [{ type: "text", text: TEXT }], isError: true };
const POLICY = { servers: { crm: { tools: { save: { effect: "read_only" as const } } } } };

describe.runIf(problem === undefined)("learning shared through Redis, seen from the CLI", () => {
  const prefix = `governor-test:${randomUUID()}:`;
  const stores: RedisStore[] = [];
  const events: GovernorEvent[] = [];
  const worker = () => {
    const store = createRedisStore({ url: url as string, prefix, requirePersistence: false });
    stores.push(store);
    return createGovernor(POLICY, { store, metrics: false, onEvent: (e) => events.push(e) });
  };

  /** `governor learned <command>` on this file's Redis prefix, then `more`. */
  const learnedArgs = (command: string, ...more: string[]) => [
    "learned",
    command,
    "--store",
    url as string,
    "--prefix",
    prefix,
    ...more,
  ];

  /** One run in which the model corrects `save` twice and the same failure comes back. */
  async function futile(gov: ReturnType<typeof createGovernor>) {
    const run = gov.startRun();
    const outcomes = [];
    for (let i = 0; i < 3 && !run.ended; i++) {
      outcomes.push(
        await run.call(
          { tool: "save", server: "crm", args: { owner: `o${i}` } },
          async () => failure,
        ),
      );
    }
    run.end();
    return outcomes;
  }

  beforeAll(async () => {
    // Worker A learns: each run adds two futile corrections.
    const a = worker();
    await futile(a);
    await futile(a);
  }, 60_000);

  afterAll(async () => {
    const cleanup = createRedisStore({ url: url as string, prefix, requirePersistence: false });
    await cleanup.resetOutcomes();
    await cleanup.close();
    for (const s of stores) await s.close();
  });

  it(
    "another worker stops at once on what the first one learned, and says so in its events",
    async () => {
      const b = worker();
      const outcomes = await futile(b);
      expect(outcomes).toHaveLength(1);
      expect(outcomes[0]?.kind === "stop" && outcomes[0].reason).toBe("learned_futile");
      const last = events.filter((e) => e.type === "decision").at(-1);
      expect(last?.type === "decision" && last.learned).toEqual({
        from: "correct_arguments",
        to: "stop",
        paid: 0,
        futile: expect.closeTo(4, 3),
      });
      const entries = await b.learned();
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        server: "crm",
        tool: "save",
        demotes: { correct_arguments: "stop" },
      });
    },
    CLI_MS,
  );

  it(
    "governor report counts learned overrides",
    async () => {
      const log = events.map((e) => JSON.stringify(e)).join("\n");
      const out = await cli(["report", "-", "--json"], `${log}\n`);
      expect(out.status).toBe(0);
      const report = JSON.parse(out.stdout);
      expect(report.learned).toEqual({
        total: 1,
        byChange: { "correct_arguments -> stop": 1 },
        byTool: { save: 1 },
      });
      const text = await cli(["report", "-"], `${log}\n`);
      expect(text.stdout).toContain("Decisions learned outcomes demoted: 1 of");
    },
    CLI_MS,
  );

  it(
    "learned list shows it; classify --explain --learned shows the override from the store or a snapshot",
    async () => {
      // A real process: the command as a shell runs it, its exit status and stdout.
      const listed = await governorProcess(learnedArgs("list"));
      expect(listed.status).toBe(0);
      expect(listed.stdout).toMatch(
        /crm\tsave\t[0-9a-f]{16}\tcorrect_futile=4\tdemotes correct_arguments -> stop/,
      );

      const line = `${JSON.stringify({ tool: "save", server: "crm", text: TEXT })}\n`;
      const plain = JSON.parse((await cli(["classify", "--explain"], line)).stdout);
      expect(plain.action).toBe("correct_arguments");
      expect(plain.explain.learned).toBeUndefined();
      const fromStore = JSON.parse(
        (await cli(["classify", "--explain", "--learned", url as string, "--prefix", prefix], line))
          .stdout,
      );
      expect(fromStore).toMatchObject({ action: "stop", reason: "learned_futile" });
      expect(fromStore.explain.learned).toMatchObject({ from: "correct_arguments", to: "stop" });

      const json = await cli(learnedArgs("list", "--json"));
      const file = join(mkdtempSync(join(tmpdir(), "governor-learned-")), "learned.json");
      writeFileSync(file, json.stdout);
      const fromFile = JSON.parse(
        (await cli(["classify", "--explain", "--learned", file], line)).stdout,
      );
      expect(fromFile).toMatchObject({ action: "stop", reason: "learned_futile" });
      // The policy wins: learning off in the policy, the same line is a correction again.
      const off = join(file, "..", "off.json");
      writeFileSync(off, JSON.stringify({ learning: { enabled: false } }));
      const withOff = JSON.parse(
        (await cli(["classify", "--explain", "--learned", file, "--policy", off], line)).stdout,
      );
      expect(withOff.action).toBe("correct_arguments");
    },
    CLI_MS,
  );

  it(
    "refuses a bad snapshot and a reset without a store URL, with what is accepted",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "governor-learned-"));
      const bad = join(dir, "bad.json");
      writeFileSync(bad, JSON.stringify({ records: [{ key: 1 }] }));
      const out = await cli(["classify", "--learned", bad], "{}\n");
      expect(out.status).toBe(1);
      expect(out.stderr).toContain('records[0] needs "key"');
      const reset = await cli(["learned", "reset", "--store", bad]);
      expect(reset.status).toBe(2);
      expect(reset.stderr).toContain("--store must be a Redis URL");
      expect((await cli(["learned", "list"])).stderr).toContain("--store is required");
    },
    CLI_MS,
  );

  it(
    "learned reset forgets a tool's records, and the next run decides as before",
    async () => {
      const kept = await cli(learnedArgs("reset", "--server", "other"));
      expect(kept.stdout).toBe("removed 0 learned records\n");
      const reset = await cli(learnedArgs("reset", "--server", "crm", "--tool", "save"));
      expect(reset.status).toBe(0);
      expect(reset.stdout).toBe("removed 1 learned records\n");
      expect((await cli(learnedArgs("list"))).stdout).toBe("nothing learned\n");
      const outcomes = await futile(worker());
      expect(outcomes[0]?.kind).toBe("model");
    },
    CLI_MS,
  );
});
