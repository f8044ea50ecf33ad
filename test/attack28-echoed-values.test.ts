/**
 * attack28: the model varies a value it sends and the server echoes it verbatim; the repeat rule
 * must still count one failure (docs/architecture.md §2: "a word of the text that is one of their
 * values is removed too"). Through run.call with a host executor, the one path every surface uses.
 */
import { createGovernor } from "@governor/core";
import { describe, expect, it } from "vitest";

/** Each: the failure template (`$` is the value), and the values the model tries in turn. */
const ECHOES: [string, string, string[]][] = [
  [
    "a page token with digits inside",
    "cursor $ is invalid",
    ["abc123XYZ", "qqq999PPP", "mno456RST"],
  ],
  ["a hex value", "cannot parse $", ["0x1F", "0xZZ", "0x7Q"]],
  [
    "a branch name with a slash",
    "The branch $ does not exist",
    ["feature/login", "fix/typo", "chore/deps"],
  ],
  ["a city name with a non-ASCII letter", "city $ unknown", ["München", "Zürich", "Köln"]],
  ["a text in Cyrillic", "город $ не найден", ["Москва", "Казань", "Самара"]],
  ["a two-character name in Chinese", "未找到城市：$", ["东京", "大阪", "上海"]],
  [
    "a value the model wraps in brackets",
    "lookup failed for $",
    ["(drafts)", "{notes}", "(archive)"],
  ],
  ["a value with punctuation glued on", "$ is not a valid owner", ["alice!", "bob?", "carol;"]],
  [
    "a value sent with spaces around it",
    "cannot open $: no such entry",
    ["  drafts", "notes  ", " archive "],
  ],
];

async function runOf(template: string, values: string[]) {
  const governor = createGovernor({
    tools: { "*": { effect: "read_only" } },
  });
  const run = governor.startRun();
  const actions: string[] = [];
  for (const value of values) {
    const outcome = await run.call({ tool: "lookup", args: { value } }, async () => {
      throw new Error(template.replace("$", value));
    });
    actions.push(
      outcome.kind === "model"
        ? outcome.action
        : `${outcome.kind}:${"reason" in outcome ? outcome.reason : ""}`,
    );
    if (outcome.kind !== "model") break;
  }
  return { actions, summary: run.end() };
}

describe("attack28: a value the model sent, echoed verbatim, varied each call", () => {
  for (const [what, template, values] of ECHOES) {
    it(`${what}: the third occurrence stops the run (repeated_failure)`, async () => {
      const { actions, summary } = await runOf(template, values);
      expect(actions).toHaveLength(3);
      expect(summary.reason).toBe("repeated_failure");
    });
  }
});

describe("attack28: a value the server echoes cut short with an ellipsis", () => {
  it("a title shortened each call, still too long, stops the run on the third", async () => {
    const governor = createGovernor({ tools: { "*": { effect: "read_only" } } });
    const run = governor.startRun();
    const titles = [
      "Quarterly revenue summary for the northern region",
      "Revenue summary for the northern region, Q3",
      "Northern region revenue summary (third quarter)",
    ];
    const actions: string[] = [];
    for (const title of titles) {
      const outcome = await run.call({ tool: "create_report", args: { title } }, async () => {
        // The server echoes the title cut to 30 characters.
        throw new Error(`Invalid title ${title.slice(0, 30)}... exceeds 40 characters`);
      });
      actions.push(outcome.kind === "model" ? outcome.action : outcome.kind);
      if (outcome.kind !== "model") break;
    }
    expect(actions).toEqual(["correct_arguments", "correct_arguments", "stop"]);
    expect(run.end().reason).toBe("repeated_failure");
  });
});

describe("attack28: an object argument the server echoes as JSON", () => {
  // The fold looked for the call's scalar values only: an object written back as JSON kept its
  // keys, which the model chose, so each new object was a new fingerprint.
  for (const [how, write] of [
    ["as JavaScript writes it", (f: object) => JSON.stringify(f)],
    ["as Python writes it", (f: object) => JSON.stringify(f).replace(/([,:])/g, "$1 ")],
  ] as const) {
    it(`${how}: a new filter object each call still stops the run on the third`, async () => {
      const governor = createGovernor({ tools: { "*": { effect: "read_only" } } });
      const run = governor.startRun();
      for (const filter of [{ region: "eu" }, { zone: "b", tier: 2 }, { tier: "gold" }]) {
        const outcome = await run.call({ tool: "search", args: { filter } }, async () => {
          throw new Error(`invalid filter ${write(filter)}`);
        });
        if (outcome.kind !== "model") break;
      }
      expect(run.end().reason).toBe("repeated_failure");
    });
  }
});

describe("attack28: a query the server echoes URL-encoded", () => {
  for (const [how, encode] of [
    ["percent-encoded", (q: string) => encodeURIComponent(q)],
    ["form-encoded", (q: string) => q.replaceAll(" ", "+")],
  ] as const) {
    it(`${how}: a new query each call still stops the run on the third`, async () => {
      const governor = createGovernor({ tools: { "*": { effect: "read_only" } } });
      const run = governor.startRun();
      for (const query of ["hello world", "lorem ipsum dolor", "red running shoes"]) {
        const outcome = await run.call({ tool: "search", args: { query } }, async () => {
          throw new Error(`no results for ${encode(query)}`);
        });
        if (outcome.kind !== "model") break;
      }
      expect(run.end().reason).toBe("repeated_failure");
    });
  }
});
