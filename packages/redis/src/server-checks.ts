import { StoreError } from "@governor/core";

/** A server setting the store found unsafe but was told to accept (see `onWarning`). */
export interface RedisStoreWarning {
  /**
   * - `no_persistence`: AOF is off (`appendonly no`): a restart forgets the ledger;
   * - `weak_fsync`: `appendfsync no`: a crash can lose about 30 s of the ledger;
   * - `eviction`: `maxmemory-policy` is not `noeviction`: Redis may drop keys to make room;
   * - `unverified`: a setting could not be read (INFO or CONFIG refused, as on some managed
   *   services), so it was not checked.
   */
  readonly code: "no_persistence" | "weak_fsync" | "eviction" | "unverified";
  /** What was found and what the ledger needs. Names no host, address or key. */
  readonly message: string;
}

/** What the store requires of the server, and where it reports what it accepts anyway. */
export interface ServerRequirements {
  readonly requirePersistence: boolean;
  readonly requireNoEviction: boolean;
  readonly onWarning: (warning: RedisStoreWarning) => void;
}

type Send = (args: string[]) => Promise<unknown>;

/**
 * Checks that the server keeps the ledger: AOF on (`INFO persistence`: `aof_enabled:1`),
 * `appendfsync` `everysec` or `always` (`CONFIG GET`, often refused on managed services: then a
 * warning), and `maxmemory-policy` `noeviction` (`INFO memory`). A failed requirement throws a
 * `StoreError` (`misconfigured`) that says which setting and the opt-out; a failed check that was
 * opted out of is reported through `onWarning`. INFO is used because managed services that refuse
 * CONFIG usually allow it.
 */
export async function checkServer(send: Send, needs: ServerRequirements): Promise<void> {
  const problems: { code: RedisStoreWarning["code"]; required: boolean; message: string }[] = [];

  const persistence = await info(send, "persistence");
  const memory = await info(send, "memory");
  if (persistence === undefined || memory === undefined) {
    problems.push({
      code: "unverified",
      required: needs.requirePersistence || needs.requireNoEviction,
      message:
        "the server refused INFO, so its persistence and eviction policy are unknown; allow INFO " +
        "for the store's user, or check appendonly yes and maxmemory-policy noeviction yourself " +
        "and set requirePersistence: false and requireNoEviction: false",
    });
  }
  if (persistence !== undefined) {
    if (persistence.get("aof_enabled") !== "1") {
      problems.push({
        code: "no_persistence",
        required: needs.requirePersistence,
        message:
          "the server runs without AOF persistence (appendonly no): a restart forgets the ledger " +
          "and a write in doubt could run again; set appendonly yes with appendfsync everysec or " +
          "always, or pass requirePersistence: false to accept that",
      });
    } else {
      const fsync = await configGet(send, "appendfsync");
      if (fsync === undefined) {
        problems.push({
          code: "unverified",
          required: false,
          message:
            "the server refused CONFIG GET appendfsync; make sure it is everysec or always " +
            "(with no, a crash can lose about 30 s of the ledger)",
        });
      } else if (fsync !== "everysec" && fsync !== "always") {
        problems.push({
          code: "weak_fsync",
          required: needs.requirePersistence,
          message: `the server syncs its AOF with appendfsync ${fsync}: a crash can lose about 30 s of the ledger; set everysec or always, or pass requirePersistence: false to accept that`,
        });
      }
    }
  }
  if (memory !== undefined) {
    const policy = memory.get("maxmemory_policy") ?? "unknown";
    if (policy !== "noeviction") {
      problems.push({
        code: "eviction",
        required: needs.requireNoEviction,
        message: `the server's maxmemory-policy is ${policy}: Redis may evict keys to make room (replay results, breaker state and budgets${policy.startsWith("allkeys") ? ", and ledger entries" : ""}); set noeviction, or pass requireNoEviction: false to accept that`,
      });
    }
  }

  const refused = problems.filter((p) => p.required);
  if (refused.length > 0) {
    throw new StoreError({
      reason: "misconfigured",
      operation: "connect",
      message: `RedisStore: refusing the server: ${refused.map((p) => p.message).join("; ")}.`,
    });
  }
  for (const problem of problems) {
    needs.onWarning({ code: problem.code, message: `RedisStore: ${problem.message}.` });
  }
}

/** `INFO section` as a map, or undefined when the server refuses it. */
async function info(send: Send, section: string): Promise<Map<string, string> | undefined> {
  let reply: unknown;
  try {
    reply = await send(["INFO", section]);
  } catch (error) {
    if (isRefusal(error)) return undefined;
    throw error;
  }
  const fields = new Map<string, string>();
  for (const line of String(reply).split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon > 0 && !line.startsWith("#")) fields.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return fields;
}

/** One `CONFIG GET` value, or undefined when the server refuses it (renamed or ACL-denied). */
async function configGet(send: Send, name: string): Promise<string | undefined> {
  let reply: unknown;
  try {
    reply = await send(["CONFIG", "GET", name]);
  } catch (error) {
    if (isRefusal(error)) return undefined;
    throw error;
  }
  // RESP2 answers [name, value]; RESP3 a map, which node-redis gives as an object or a Map.
  if (Array.isArray(reply)) return reply[1] === undefined ? undefined : String(reply[1]);
  if (reply instanceof Map) return reply.has(name) ? String(reply.get(name)) : undefined;
  if (typeof reply === "object" && reply !== null && name in reply) {
    return String((reply as Record<string, unknown>)[name]);
  }
  return undefined;
}

/** An error reply from the server (unknown command, NOPERM): a refusal, not an outage. */
function isRefusal(error: unknown): boolean {
  return (
    error instanceof Error &&
    /^(ERR|NOPERM)\b/.test(error.message) &&
    !/timeout|closed|connect/i.test(error.constructor.name)
  );
}
