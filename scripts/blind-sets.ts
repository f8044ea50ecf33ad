/**
 * The blind sets of issue 27, in the order they were collected (README.md of each): texts of
 * servers nobody doing rule work had read when the set was scored. One list for every script and
 * test that walks them: `pnpm eval` scores each under its name as the JSON key (`--<name>=DIR`
 * scores another directory in its place), and test/blind-frozen.test.ts keeps each frozen and its
 * servers apart from every other set's.
 */
export const BLIND_SETS = [
  "blind",
  "blind2",
  "blind3",
  "blind4",
  "blind5",
  "blind6",
  "blind7",
  "blind8",
  "blind9",
  "blind10",
  "blind11",
  "blind12",
  "blind13",
] as const;

export type BlindSetName = (typeof BLIND_SETS)[number];
