/**
 * A call's arguments without the one its idempotency key travels in (the tool's
 * `idempotency.argument`); the same object when the tool names none or the call does not have it.
 *
 * Governor writes that argument itself, over whatever value the call had: a model that sees it in
 * the tool's schema fills it in, with a new value each time it writes the call again, yet on the
 * wire the two calls are one write. So everything that asks whether two calls are the same call
 * (the run's canonical arguments, and through them the loop detector, the index of writes in
 * doubt, a kept answer and the call hash in events; the proxy's stop memory; the Agents SDK
 * adapter's queue of identical calls) reads the arguments through this. What is sent is not: it
 * carries Governor's key in that argument.
 *
 * The value left out is never read (a getter that throws is not run here). The copy has no
 * prototype, so an own `__proto__` argument (JSON.parse makes them) stays an argument.
 *
 * @example
 * const tool = governor.toolPolicy("charge");
 * withoutKeyArgument({ amount: 5, idempotency_key: "k-1" }, tool); // { amount: 5 } with "idempotency_key" named
 */
export function withoutKeyArgument(
  args: Readonly<Record<string, unknown>>,
  tool: { readonly idempotency: { readonly argument?: string | undefined } },
): Readonly<Record<string, unknown>> {
  const name = tool.idempotency.argument;
  if (name === undefined || !Object.hasOwn(args, name)) return args;
  const rest: Record<string, unknown> = Object.create(null);
  for (const own of Object.keys(args)) {
    if (own !== name) rest[own] = args[own];
  }
  return rest;
}
