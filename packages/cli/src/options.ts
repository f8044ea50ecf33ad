import { type ParseArgsConfig, parseArgs } from "node:util";

/**
 * `parseArgs` of `node:util`, strict as the commands call it, whose refusal of an option it does
 * not know names the options the command accepts: Node's own says only `Unknown option '--x'`,
 * and for a command taking files advises putting the option after `--`, which no command wants.
 * @example
 * const { values } = parseOptions({ args, options: { json: { type: "boolean" } } });
 */
export function parseOptions<T extends ParseArgsConfig>(
  config: T,
): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw error;
    const option = /'(-[^']*)'/.exec((error as Error).message)?.[1] ?? "";
    throw new Error(`unknown option ${option}; accepted: ${accepted(config).join(", ")}`, {
      cause: error,
    });
  }
}

/** The options of `config` as a user types them: `--json`, `--policy VALUE`. */
function accepted(config: ParseArgsConfig): string[] {
  const options = Object.entries(config.options ?? {});
  if (options.length === 0) return ["none"];
  return options.map(([name, option]) => `--${name}${option.type === "string" ? " VALUE" : ""}`);
}
