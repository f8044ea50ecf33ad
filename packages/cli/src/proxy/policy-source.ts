/**
 * The policy `governor proxy` runs with: a policy file, or a starter policy shipped for a common
 * server (`--preset`), and `--trust-annotations` for a server whose tool annotations the user
 * trusts to say which tools only read. Without any of them every tool is a write (the library's
 * default for a tool nobody described): safe, but a repeated read is then refused as a write that
 * may have happened.
 */
import { readFile } from "node:fs/promises";
import { GovernorError, loadPolicy, type Policy } from "@governor/core";

/** The starter policies shipped in the package's `presets/` (one server each, named after it). */
export const PRESETS = ["everything", "filesystem", "git"] as const;
export type Preset = (typeof PRESETS)[number];

export function isPreset(name: string): name is Preset {
  return (PRESETS as readonly string[]).includes(name);
}

/** Where a preset's file is: `presets/NAME.json` beside `src/` and `dist/` alike. */
export function presetFile(name: Preset): URL {
  return new URL(`../../presets/${name}.json`, import.meta.url);
}

/** What the policy is made of. */
export interface PolicySource {
  /** A policy file (JSON). */
  readonly policy?: string;
  readonly preset?: Preset;
  /** The server's name in the policy (`servers.NAME`); a preset's own name by default. */
  readonly server?: string;
  /** Let the server's tool annotations set effects (`servers.NAME.trustAnnotations`). */
  readonly trustAnnotations?: boolean;
}

type PolicyObject = { servers?: Record<string, Record<string, unknown>> } & Record<string, unknown>;

function parse(text: string, where: string): PolicyObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // loadPolicy says what is wrong with the JSON, as it does for `governor check`.
    loadPolicy(text);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new GovernorError("invalid_policy", `${where}: a policy is a JSON object`);
  }
  return value as PolicyObject;
}

/**
 * The proxy's policy and its server name. A preset's settings are filed under `--server` when
 * one is given; `--trust-annotations` is added to that server's settings.
 */
export async function loadProxyPolicy(
  source: PolicySource,
): Promise<{ policy: Policy; server?: string }> {
  const server = source.server ?? source.preset;
  let input: PolicyObject = {};
  if (source.policy !== undefined) {
    input = parse(await readFile(source.policy, "utf8"), source.policy);
  } else if (source.preset !== undefined) {
    const preset = parse(await readFile(presetFile(source.preset), "utf8"), source.preset);
    const settings = preset.servers?.[source.preset] ?? {};
    input = { ...preset, servers: { [server as string]: settings } };
  }
  if (source.trustAnnotations === true && server !== undefined) {
    input = {
      ...input,
      servers: {
        ...input.servers,
        [server]: { ...input.servers?.[server], trustAnnotations: true },
      },
    };
  }
  return { policy: loadPolicy(input), ...(server !== undefined && { server }) };
}
