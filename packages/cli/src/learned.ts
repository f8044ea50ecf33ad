// `governor learned list|reset`, and the learned state `governor classify --learned` reads:
// what runs learned from outcomes (docs/learning.md), from a shared Redis store or a snapshot.
import { readFile } from "node:fs/promises";
import {
  GovernorError,
  type LearnedEntry,
  loadPolicy,
  type OutcomeRecord,
  type Policy,
} from "@governor/core";
import {
  countsAt,
  describeLearned,
  learnedKey,
  learnedPrefix,
  type OutcomeField,
  resolveToolPolicy,
} from "@governor/core/judge";
import type { RedisStore } from "@governor/redis";
import type { CliIo } from "./io.ts";
import { parseOptions } from "./options.ts";

/** Learned counts of a failure by server, tool and fingerprint, decayed to now. */
export type LearnedLookup = (
  server: string | undefined,
  tool: string,
  fingerprint: string,
) => Readonly<Record<OutcomeField, number>> | undefined;

const STORE_HELP =
  "a Redis URL (redis://host:port[/db], the store the workers share) or a JSON snapshot file written by `governor learned list --json`";

/**
 * Opens a Redis store for learning: advice only, so a server without persistence is accepted.
 * `@governor/redis` is an optional peer of the CLI (only `--store`/`--learned redis://…` needs it),
 * so it is loaded here, and its absence is said in words, with the install line.
 */
async function openRedis(url: string, prefix: string | undefined): Promise<RedisStore> {
  let createRedisStore: typeof import("@governor/redis").createRedisStore;
  try {
    ({ createRedisStore } = await import("@governor/redis"));
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    if (e.code !== "ERR_MODULE_NOT_FOUND" || !e.message.includes("@governor/redis")) throw error;
    throw new GovernorError(
      "invalid_options",
      `a redis:// store needs @governor/redis, which is not installed: install it next to the CLI (npm i -D @governor/redis), or give a JSON snapshot file written by \`governor learned list --json\``,
      { cause: error },
    );
  }
  return createRedisStore({
    url,
    ...(prefix !== undefined && { prefix }),
    requirePersistence: false,
    requireNoEviction: false,
    connectTimeoutMs: 3_000,
  });
}

const isUrl = (source: string) => /^rediss?:\/\//i.test(source);

/** Reads every learned record of a store URL or a snapshot file. */
export async function readLearned(
  source: string,
  prefix?: string,
  limit = 10_000,
): Promise<OutcomeRecord[]> {
  if (isUrl(source)) {
    const store = await openRedis(source, prefix);
    try {
      return await store.listOutcomes(limit);
    } finally {
      await store.close();
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(await readFile(source, "utf8"));
  } catch (error) {
    throw new GovernorError(
      "invalid_options",
      `--learned/--store: ${source} is not readable JSON (${(error as Error).message}); give ${STORE_HELP}`,
    );
  }
  const records = (value as { records?: unknown } | null)?.records;
  if (!Array.isArray(records)) {
    throw new GovernorError(
      "invalid_options",
      `${source}: expected an object with "records" (an array), as \`governor learned list --json\` writes`,
    );
  }
  return records.map((r: unknown, i) => {
    const { key, counts, updatedAt } = (r ?? {}) as Partial<OutcomeRecord>;
    const countsOk =
      typeof counts === "object" &&
      counts !== null &&
      Object.values(counts).every((c) => typeof c === "number" && Number.isFinite(c) && c >= 0);
    if (typeof key !== "string" || !countsOk || typeof updatedAt !== "number") {
      throw new GovernorError(
        "invalid_options",
        `${source}: records[${i}] needs "key" (a string), "counts" (numbers >= 0) and "updatedAt" (epoch ms)`,
      );
    }
    return { key, counts, updatedAt };
  });
}

/** A lookup of learned counts over records, decayed to `now` with each tool's half-life. */
export function learnedLookup(
  records: readonly OutcomeRecord[],
  policy: Policy,
  now: number,
): LearnedLookup {
  const byKey = new Map(records.map((r) => [r.key, r]));
  return (server, tool, fingerprint) => {
    const record = byKey.get(learnedKey(server, tool, fingerprint));
    if (record === undefined) return undefined;
    return countsAt(record, now, resolveToolPolicy(policy, tool, server).learning.halfLifeMs);
  };
}

function describeAll(records: readonly OutcomeRecord[], policy: Policy, now: number) {
  const settingsFor = (server: string | undefined, tool: string) => {
    const tp = resolveToolPolicy(policy, tool, server);
    return { learning: tp.learning, hasAlternatives: tp.alternatives.length > 0 };
  };
  return records.flatMap((r) => describeLearned(r, now, settingsFor) ?? []);
}

const round = (x: number) => Math.round(x * 100) / 100;

function line(e: LearnedEntry): string {
  const counts = Object.entries(e.counts)
    .filter(([, n]) => n > 0)
    .map(([f, n]) => `${f}=${round(n)}`)
    .join(" ");
  const demotes = Object.entries(e.demotes)
    .map(([from, to]) => `${from} -> ${to}`)
    .join(", ");
  const scope = e.scope === undefined ? "" : `\tscope ${e.scope}`;
  return `${e.server ?? "(none)"}\t${e.tool}\t${e.fingerprint}\t${counts}${demotes === "" ? "" : `\tdemotes ${demotes}`}${scope}`;
}

/**
 * `governor learned list --store SOURCE [--policy FILE] [--prefix P] [--limit N] [--json]` and
 * `governor learned reset --store URL [--server S [--tool T]] [--prefix P]`.
 */
export async function learnedCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const { values } = parseOptions({
    args: rest,
    options: {
      store: { type: "string" },
      policy: { type: "string" },
      prefix: { type: "string" },
      server: { type: "string" },
      tool: { type: "string" },
      limit: { type: "string" },
      json: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (sub !== "list" && sub !== "reset") {
    io.stderr.write(`governor learned: expected list or reset, got ${JSON.stringify(sub ?? "")}\n`);
    return 2;
  }
  if (values.store === undefined) {
    io.stderr.write(`governor learned ${sub}: --store is required: ${STORE_HELP}\n`);
    return 2;
  }
  if (sub === "reset") {
    if (!isUrl(values.store)) {
      io.stderr.write(
        "governor learned reset: --store must be a Redis URL (a snapshot file is not a store)\n",
      );
      return 2;
    }
    if (values.tool !== undefined && values.server === undefined) {
      io.stderr.write(
        "governor learned reset: --tool needs --server (a tool is learned per server)\n",
      );
      return 2;
    }
    const store = await openRedis(values.store, values.prefix);
    try {
      const removed = await store.resetOutcomes(
        values.server === undefined ? undefined : learnedPrefix(values.server, values.tool),
      );
      io.stdout.write(
        values.json ? `${JSON.stringify({ removed })}\n` : `removed ${removed} learned records\n`,
      );
      return 0;
    } finally {
      await store.close();
    }
  }
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!Number.isSafeInteger(limit) || limit < 1) {
    io.stderr.write(`governor learned list: --limit takes a positive whole number\n`);
    return 2;
  }
  const policy = loadPolicy(
    values.policy === undefined ? {} : await readFile(values.policy, "utf8"),
  );
  const records = (await readLearned(values.store, values.prefix, limit)).slice(0, limit);
  const now = Date.now();
  const entries = describeAll(records, policy, now);
  if (values.json) {
    // The records as stored (a snapshot `classify --learned` reads), each with what it means now.
    const byKey = new Map(entries.map((e) => [e.key, e]));
    const out = records.map((r) => {
      const e = byKey.get(r.key);
      return {
        ...r,
        ...(e !== undefined && {
          server: e.server ?? null,
          tool: e.tool,
          fingerprint: e.fingerprint,
          ...(e.scope !== undefined && { scope: e.scope }),
          decayed: e.counts,
          demotes: e.demotes,
        }),
      };
    });
    io.stdout.write(`${JSON.stringify({ at: now, records: out }, null, 2)}\n`);
    return 0;
  }
  io.stdout.write(
    entries.length === 0
      ? "nothing learned\n"
      : `server\ttool\tfingerprint\tcounts (decayed to now)\n${entries.map(line).join("\n")}\n`,
  );
  return 0;
}
