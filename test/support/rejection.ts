/** What `pending` rejected with; throws when it resolved (the test expected a rejection). */
export function rejection(pending: Promise<unknown>): Promise<unknown> {
  return pending.then(
    (value) => {
      let shown: string;
      try {
        shown = JSON.stringify(value) ?? String(value);
      } catch {
        shown = String(value);
      }
      throw new Error(`expected a rejection, got ${shown}`);
    },
    (error: unknown) => error,
  );
}
