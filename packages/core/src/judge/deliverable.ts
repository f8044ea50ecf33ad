/**
 * Whether a tool's successful result can reach the model: a host serializes what it hands over
 * (`JSON.stringify`, a wire's encoder), and a serializer walks nesting recursively, so a result a
 * server nests 10,000 levels deep (a JSON text any parser reads) throws a `RangeError` in the
 * host's loop, or leaves a proxy's answer unwritten. Every surface checks a success with
 * {@link isDeliverable} before handing it over and, when it is not, answers
 * {@link undeliverableText}: the call was made, so the model must not make it again blindly.
 */

/** The deepest nesting of objects and arrays a result handed to the model may have. */
export const MAX_RESULT_DEPTH = 100;

/** How many objects and arrays {@link isDeliverable} reads at most before it says yes. */
const MAX_NODES = 1_000_000;

/**
 * Whether a value nests objects and arrays at most {@link MAX_RESULT_DEPTH} levels deep (a cycle
 * nests without end), and its own properties can be read. Read with a stack of its own, not by
 * recursion; a value of more than a million objects and arrays is said deliverable once that many
 * were read within the depth (its size is the host's to judge).
 */
export function isDeliverable(value: unknown, maxDepth = MAX_RESULT_DEPTH): boolean {
  if (typeof value !== "object" || value === null) return true;
  const values: object[] = [value];
  const depths: number[] = [1];
  let read = 0;
  try {
    while (values.length > 0) {
      const node = values.pop() as object;
      const depth = depths.pop() as number;
      if (depth > maxDepth) return false;
      if (++read > MAX_NODES) return true;
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) {
          const item: unknown = node[i];
          if (typeof item === "object" && item !== null) {
            values.push(item);
            depths.push(depth + 1);
          }
        }
        continue;
      }
      for (const key in node) {
        if (!Object.hasOwn(node, key)) continue;
        const item: unknown = (node as Record<string, unknown>)[key];
        if (typeof item === "object" && item !== null) {
          values.push(item);
          depths.push(depth + 1);
        }
      }
    }
  } catch {
    // A getter that throws (a proxy, a class instance): no serializer reads it either.
    return false;
  }
  return true;
}

/**
 * The model's text for a success that cannot be handed over (see {@link isDeliverable}): the call
 * was made, and what to do instead of making it again.
 */
export function undeliverableText(tool: string): string {
  return `${tool}: this call was made and succeeded, but its result nests deeper than ${MAX_RESULT_DEPTH} levels (or cannot be read) and could not be handed over. Do not make this call again for the same result; ask for less of it if the tool allows.`;
}
