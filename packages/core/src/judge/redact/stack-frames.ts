/**
 * Stack frames, by runtime: the lines each runtime's traces are made of, as data, and the one pass
 * that drops them. A frame names files, functions and line numbers of the server's code: none of
 * it is the model's business. Frames that lost their line breaks (joined, or JSON-escaped `\n`)
 * go too.
 */
import { isWhitespace, isWordCode } from "./scan.ts";

/** A line a runtime's traces are made of: dropped where it stands alone on its line. */
interface FrameLine {
  readonly pattern: RegExp;
  /** Whether the match is a frame (default: every match is). */
  readonly accept?: (match: RegExpExecArray) => boolean;
  /** The next line, when it is indented deeper, is the frame's source code and goes too. */
  readonly sourceBelow?: boolean;
  /** The line above, when it matches this, is the same frame's function line and goes too. */
  readonly functionAbove?: RegExp;
  /**
   * Something every line it matches holds, for a line its runtime's `mayHold` does not imply (a Go
   * location line without a `goroutine ` header): such a line is read whenever the text may hold
   * frames of any runtime, as ever, but only when it holds this.
   */
  readonly may?: (text: string) => boolean;
}

/** A frame inside a line: dropped when the location it captures (group 1) is accepted. */
interface InlineFrame {
  readonly pattern: RegExp;
  readonly accept: (location: string) => boolean;
  /** Something every match holds, where its runtime's `mayHold` is not implied by one. */
  readonly may?: (text: string) => boolean;
}

/** A runtime's traces: what every one of them holds, their lines, and their frames inside a line. */
interface Runtime {
  readonly name: string;
  /**
   * Strings a text holds one of where one of this runtime's lines or inline frames may be (but
   * see {@link FrameLine.may} and {@link InlineFrame.may}): where it holds none, they are not
   * read. The marks of every runtime are looked for with one pattern ({@link FRAME_MARK}).
   */
  readonly marks?: readonly string[];
  /** The same test, for a runtime whose test is not one of a few strings (instead of `marks`). */
  readonly mayHold?: (text: string) => boolean;
  readonly lines: readonly FrameLine[];
  readonly inline?: readonly InlineFrame[];
}

/**
 * A location inside a stack frame: `file.js:1:2`, `node:net:1555:16`, `Bar.java:42`, `native`,
 * `<anonymous>`, `index 0`, `Native Method`, `Unknown Source`.
 */
function isFrameLocation(location: string): boolean {
  const loc = location.trim();
  if (
    loc === "native" ||
    loc === "Native Method" ||
    loc === "Unknown Source" ||
    loc.includes("<anonymous>") ||
    /^index \d+$/.test(loc)
  ) {
    return true;
  }
  return /:\d+$/.test(loc);
}

/** A location that ends in a line number: `file:///x.js:1:2`, `/srv/app.js:3`. */
function endsInLineNumber(location: string): boolean {
  return /:\d+$/.test(location);
}

/**
 * A script a browser served, as its frames name it: a URL with a path, then a line and a column
 * (`https://cdn.example.com/app.min.js:1:23456`, `webpack://app/src/notes.ts:42:7`). A URL
 * without both numbers (`https://api.example.com:8443`, `https://x.dev/incidents/42`) is none.
 */
const SCRIPT_URL_FRAME =
  /^(?:https?|file|webpack(?:-internal)?|blob|(?:chrome|moz|safari(?:-web)?)-extension|resource|app):\/\/[^\s()/]{0,300}\/[^\s()]{0,1000}:\d{1,7}:\d{1,7}$/;

/**
 * The `at` frame of {@link AT_FRAME_LINE}: its location in parentheses must look like one; a bare
 * location (`at file:///x.js:1:2`, `at /rustc/…/panicking.rs:645:5`, `at ./src/main.rs:4:5`, a
 * browser's `at https://cdn.example.com/app.js:1:2`) must be a path, file or script with a line
 * number.
 */
function isAtFrame(m: RegExpExecArray): boolean {
  const [, inParens, bare] = m;
  if (inParens !== undefined) return isFrameLocation(inParens);
  return (
    bare !== undefined &&
    (bare === "<anonymous>" ||
      SCRIPT_URL_FRAME.test(bare) ||
      /^(?:file:|node:|\/|\\\\|\.{1,2}[\\/]|[A-Za-z]:[\\/]).*:\d+$/.test(bare) ||
      /^[\w.-]+\.[A-Za-z]{1,6}:\d+(?::\d+)?$/.test(bare))
  );
}

/**
 * `at callee (anything)`: a JS, Java or .NET frame whatever its location (`node:net:1555:16`,
 * `Native Method`, a .NET argument list), with `async`, `new`, `[as name]` and a .NET
 * `in file:line N` suffix. The callee is one token, so prose such as `at least one (of 3)` stays.
 */
const CALL_FRAME_LINE =
  /^\s*at\s+(?:async\s+)?(?:new\s+)?[^\s()]+(?:\s+\[as [^\]\n]*\])?\s*\([^\n]*\)(?:\s+in\s[^\n]*)?\s*$/;
/** `at callee (location)` with a callee of several words: the location must look like one. */
const AT_FRAME_LINE = /^\s*at\s(?:[^()\n]*\(([^\n]*)\)|\s*(?:async\s+)?(\S+))\s*$/;
/** Go: the function line above a location line (`main.(*T).run(0xc0, 0x1)`, `created by main.main`). */
const GO_FUNCTION_LINE =
  /^\s*(?:[\w./*()$[\]{}-]+\([^\n]*\)|created by [^\s()]+(?:\([^\n]*\))?(?: in goroutine \d+)?)\s*$/;

/**
 * Whether an `at` starts a word, or follows a JSON `\n`, `\r` or `\t` (a JVM trace in a JSON
 * string: `\n\tat com.acme.Foo.bar(Foo.java:42)`), and has whitespace after it: where every `at`
 * frame, on its line or inside one, starts.
 */
function hasAtWord(text: string): boolean {
  for (let at = text.indexOf("at"); at >= 0; at = text.indexOf("at", at + 2)) {
    if (!isWhitespace(text.charCodeAt(at + 2))) continue;
    if (!isWordCode(text.charCodeAt(at - 1)) || afterJsonBreak(text, at)) return true;
  }
  return false;
}

/** Whether a JSON `\n`, `\r` or `\t` ends right before `at`. */
function afterJsonBreak(text: string, at: number): boolean {
  const letter = text.charCodeAt(at - 1);
  return (letter === 110 || letter === 114 || letter === 116) && text.charCodeAt(at - 2) === 92;
}

/**
 * The runtimes whose frames are dropped. No line matches the patterns of two (each starts with its
 * own word after the indentation), so their order only orders the cheap tests of
 * {@link mayHoldFrames}: the literals first, the scan for `at` last.
 */
const RUNTIMES: readonly Runtime[] = [
  {
    name: "Python",
    marks: ['File "', "Traceback ("],
    lines: [
      { pattern: /^\s*File "[^"\n]*", line \d+/, sourceBelow: true },
      { pattern: /^\s*Traceback \(most recent call last\):?\s*$/ },
    ],
  },
  {
    name: "Java/JVM",
    marks: ["... "],
    // The JVM's frames are `at` frames (below); this is the line that ends a cause's frames.
    lines: [{ pattern: /^\s*\.\.\. \d+ more\s*$/ }],
  },
  {
    name: "Go",
    marks: ["goroutine "],
    lines: [
      // A goroutine header, and the `file.go:12 +0x1d` line under each function line.
      { pattern: /^\s*goroutine \d+ \[[^\]\n]*\]:?\s*$/ },
      {
        pattern: /^\s+\S+\.go:\d+(?: \+0x[0-9a-f]+)?\s*$/,
        functionAbove: GO_FUNCTION_LINE,
        // Read without its goroutine header too (a trace cut above it).
        may: (text) => text.includes(".go:"),
      },
    ],
  },
  {
    name: "Rust",
    marks: ["stack backtrace", "panicked at"],
    // `stack backtrace:` and `  12: std::rt::lang_start::{{closure}}`; the `at file:line` lines
    // under them are `at` frames (below).
    lines: [
      { pattern: /^\s*stack backtrace:\s*$/ },
      {
        pattern:
          /^\s*\d+:\s+(?:0x[0-9a-f]+ - )?(?:[\w$<>{}[\]&*. ]*::[^\n]*|_{1,2}\w+|rust_\w+)\s*$/,
        // Read without `stack backtrace:` too: a `::` path or a `_` name.
        may: (text) => text.includes("::") || text.includes("_"),
      },
    ],
    // A panic's location, the source file and line of the code that panicked: `thread 'main'
    // panicked at src/main.rs:5:5:` (Rust 1.73 on) reads `thread 'main' panicked:`, and
    // `panicked at 'oops', src/lib.rs:12:9` (before) reads `panicked at 'oops'`. A `.rs` file
    // elsewhere (a compiler's `--> src/main.rs:5:5` about the model's own code) stays.
    inline: [
      {
        pattern:
          /\s{1,4}at\s{1,4}(?<=panicked\s{1,4}at\s{1,4})((?:[A-Za-z]:)?[\w./\\~-]{1,1000}\.rs:\d{1,7}:\d{1,7})(?![\w/.-])/g,
        accept: () => true,
        // More than one space between the words is not the runtime's `panicked at`.
        may: (text) => text.includes("panicked"),
      },
      {
        pattern:
          /,\s{1,4}(?<=panicked at '[^\n]{0,1000}',\s{1,4})((?:[A-Za-z]:)?[\w./\\~-]{1,1000}\.rs:\d{1,7}:\d{1,7})(?![\w/.-])/g,
        accept: () => true,
      },
    ],
  },
  {
    name: "Ruby",
    marks: [".rb:"],
    // `app/models/note.rb:12:in 'find'` (Ruby 3.4 quotes with `'`, earlier ones with a backtick),
    // `from /usr/lib/ruby/3.2.0/x.rb:3:in `<main>'`, `x.rb:12:in `block in Foo#bar'`.
    // A line that goes on after the frame (the first, `…:in 'find': undefined method…`) keeps
    // its message: the inline frame below takes the frame from it.
    lines: [{ pattern: /^\s*(?:from\s+)?\S{1,1000}\.rb:\d+:in\s+[`'][^`'\n]{1,200}'\s*$/ }],
    // The same frames in a line (a trace joined, or the first line, before its message).
    inline: [
      {
        pattern:
          /(?<![\w./~-])(?:from\s{1,4})?([\w./~-]{0,1000}\.rb:\d{1,7}):in\s{1,4}[`'][^`'\n]{1,200}'/g,
        accept: () => true,
      },
    ],
  },
  {
    name: "PHP",
    marks: ["#", "Stack trace:", "thrown in "],
    // `Stack trace:`, `#0 /var/www/src/Api.php(17): App\Notes->get('drafts')`,
    // `#1 [internal function]: …`, `#2 {main}`, and `  thrown in /var/www/src/Notes.php on line 42`.
    lines: [
      { pattern: /^\s*Stack trace:\s*$/ },
      { pattern: /^\s*#\d+\s+(?:\S[^\n]{0,1000}\(\d+\)|\[internal function\]):\s[^\n]*$/ },
      { pattern: /^\s*#\d+\s+\{main\}\s*$/ },
      {
        pattern: /^\s*thrown in\s\S[^\n]{0,1000}\son line \d+\s*$/,
        // A tab after `thrown in` is not the runtime's `thrown in `.
        may: (text) => text.includes("thrown in"),
      },
    ],
    // The same frames in a line: `Stack trace: #0 /x.php(17): A->b() #1 {main}` (arguments
    // hold one level of parentheses: `Object(App\\Request)`).
    inline: [
      { pattern: /(?<![\w-])(Stack trace:)\s{0,4}(?=#0\s)/g, accept: () => true },
      {
        pattern:
          /(?<![\w#])#\d{1,4}\s{1,4}(?:([^\s()]{1,1000}\(\d{1,7}\))|\[internal function\]):\s{1,4}[^\s()]{1,300}\((?:[^()\n]|\([^()\n]{0,200}\)){0,500}\)/g,
        accept: () => true,
      },
      { pattern: /(?<![\w#])#\d{1,4}\s{1,4}(\{main\})/g, accept: () => true },
    ],
  },
  {
    name: "Elixir/Erlang (BEAM)",
    marks: [".ex:", ".exs:", ".erl:"],
    // `(notes 0.1.0) lib/notes.ex:12: Notes.create/2`, `(stdlib 5.0) gen_server.erl:1077:
    // :gen_server.try_dispatch/4`, `(elixir) lib/enum.ex:1: anonymous fn/5 in Enum.map/2`: the
    // application (its version optional), a relative file and line, then the function.
    lines: [
      {
        pattern:
          /^\s*\([\w.-]{1,100}(?:\s[\w.+-]{1,50})?\)\s{1,4}\S{1,1000}\.(?:ex|exs|erl):\d{1,7}:\s[^\n]*$/,
      },
    ],
    // The same frames in a line (a trace joined): up to the function's arity (`/2`).
    inline: [
      {
        pattern:
          /(?<![\w)])\([\w.-]{1,100}(?:\s[\w.+-]{1,50})?\)\s{1,4}([\w./~-]{1,1000}\.(?:ex|exs|erl):\d{1,7}):\s{1,4}(?:anonymous fn\/\d{1,3} in\s{1,4})?[^\s]{1,300}\/\d{1,3}/g,
        accept: () => true,
      },
    ],
  },
  {
    name: "Browsers (SpiderMonkey, JavaScriptCore): `function@script:line:column`",
    mayHold: (text) =>
      text.includes("@") && (text.includes("://") || text.includes("[native code]")),
    // `render@https://cdn.example.com/app.min.js:1:23456`, `@https://…/vendor.js:2:100` (an
    // anonymous function), `global code@webpack://app/src/notes.ts:42:7`,
    // `Notes/render/<@resource://…`, and Safari's `forEach@[native code]`.
    lines: [
      {
        pattern:
          /^\s*(?:[^\s@]{1,300}(?:\s[^\s@]{1,300}){0,3})?@(?:[^\s@]{1,1300}:\d{1,7}:\d{1,7}|\[native code\])\s*$/,
        accept: (m) => {
          const at = m[0].lastIndexOf("@");
          const location = m[0].slice(at + 1).trim();
          return location === "[native code]" || SCRIPT_URL_FRAME.test(location);
        },
      },
    ],
    // The same frames in a line (a trace joined): the function glued to `@`, then the script.
    inline: [
      {
        pattern:
          /(?<!\S)[^\s@]{0,300}@((?:https?|webpack(?:-internal)?|blob|(?:chrome|moz|safari(?:-web)?)-extension|resource|app|file):\/\/[^\s@]{1,1300})/g,
        accept: (location) => SCRIPT_URL_FRAME.test(location),
      },
    ],
  },
  {
    name: "Node/V8, JVM and .NET `at` frames",
    mayHold: hasAtWord,
    lines: [
      { pattern: CALL_FRAME_LINE },
      { pattern: AT_FRAME_LINE, accept: isAtFrame },
      // .NET: the line between the frames of an awaited call.
      {
        pattern: /^\s*--- End of (?:inner exception )?stack trace[^\n]*---\s*$/,
        // Read without an `at` frame too.
        may: (text) => text.includes("--- End of "),
      },
    ],
    // Each pattern starts with `at` itself, then looks back at what is before it (the start, a
    // character outside `[\w$.]` or a JSON `\n`, `\r`, `\t`): a pattern that opened with the
    // look-behind was tried at every position of the text, not only where an `at` is.
    inline: [
      {
        pattern:
          /at(?<=(?:^|[^\w$.]|\\[nrt])at)\s{1,4}(?:async\s{1,4})?(?:new\s{1,4})?(?:[^\s()]{1,200}\s{0,4})?(?:\[as [^\]\n]{1,100}\]\s{0,4})?\(([^()\n]{1,1000})\)/g,
        accept: isFrameLocation,
      },
      {
        pattern:
          /at(?<=(?:^|[^\w$.]|\\[nrt])at)\s{1,4}(?:async\s{1,4})?((?:file:|node:|\/|[A-Za-z]:[\\/])[^\s()]{1,1000})/g,
        accept: endsInLineNumber,
      },
      // A browser's bare frame inside a line: `… at https://cdn.example.com/app.min.js:1:23456`.
      {
        pattern:
          /at(?<=(?:^|[^\w$.]|\\[nrt])at)\s{1,4}(?:async\s{1,4})?((?:https?|webpack(?:-internal)?|blob|(?:chrome|moz|safari(?:-web)?)-extension|resource|app):\/\/[^\s()]{1,1000})/g,
        accept: (location) => SCRIPT_URL_FRAME.test(location),
      },
    ],
  },
];

const FRAME_LINES: readonly FrameLine[] = RUNTIMES.flatMap((runtime) => runtime.lines);
const INLINE_FRAMES: readonly InlineFrame[] = RUNTIMES.flatMap((runtime) => runtime.inline ?? []);

/**
 * What a text must hold for each rule of {@link FRAME_LINES} to match one of its lines: the rule's
 * own test, else its runtime's. A text that may hold frames of one runtime (an `at` in a sentence)
 * is not read with the patterns of the others.
 */
const LINE_TESTS: readonly ((text: string) => boolean)[] = RUNTIMES.flatMap((runtime) =>
  runtime.lines.map((line) => line.may ?? runtimeTest(runtime)),
);
/** The same for {@link INLINE_FRAMES}. */
const INLINE_TESTS: readonly ((text: string) => boolean)[] = RUNTIMES.flatMap((runtime) =>
  (runtime.inline ?? []).map((frame) => frame.may ?? runtimeTest(runtime)),
);

/** A runtime's test: one of its marks, or its own. */
function runtimeTest(runtime: Runtime): (text: string) => boolean {
  const { marks, mayHold } = runtime;
  if (mayHold !== undefined) return mayHold;
  return (text) => (marks ?? []).some((mark) => text.includes(mark));
}

/**
 * One pattern for the marks of every runtime that has them: one scan of a text that holds none
 * (most texts), where a search for each mark read the text a dozen times.
 */
const FRAME_MARK = new RegExp(
  RUNTIMES.flatMap((runtime) => runtime.marks ?? [])
    .map((mark) => mark.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
    .join("|"),
);
/** The tests of the runtimes without marks, in order: the scan for `at` last. */
const OTHER_TESTS: readonly ((text: string) => boolean)[] = RUNTIMES.flatMap((runtime) =>
  runtime.mayHold === undefined ? [] : [runtime.mayHold],
);

/**
 * Each rule of the frames with the test that gates it (a line rule is read only where its test
 * holds on the whole text, an inline frame only where its test holds on the text so far) and
 * whether it takes a frame from `text` (a line of it, or a frame inside it). Where it does, the
 * test must hold (a leak where it does not): pinned by the tests.
 * @internal Exported for tests; not part of the public API.
 */
export const FRAME_RULE_TESTS: readonly {
  readonly pattern: RegExp;
  readonly test: (text: string) => boolean;
  readonly takes: (text: string) => boolean;
}[] = [
  ...FRAME_LINES.map((line, i) => ({
    pattern: line.pattern,
    test: LINE_TESTS[i] as (text: string) => boolean,
    takes: (text: string) => text.split("\n").some((l) => frameLine(l, [line]) !== undefined),
  })),
  ...INLINE_FRAMES.map((frame, i) => ({
    pattern: frame.pattern,
    test: INLINE_TESTS[i] as (text: string) => boolean,
    takes: (text: string) =>
      [...text.matchAll(frame.pattern)].some((m) => frame.accept(m[1] as string)),
  })),
];

/**
 * Every pattern of the frames, for the linear-time checks in the tests.
 * @internal
 */
export const FRAME_PATTERNS: readonly RegExp[] = [
  ...FRAME_LINES.map((line) => line.pattern),
  GO_FUNCTION_LINE,
  ...INLINE_FRAMES.map((frame) => frame.pattern),
  FRAME_MARK,
];

/**
 * Whether a text may hold a stack frame: what one of the runtimes needs. Every frame line and
 * inline frame has `at` after a non-word character and before a space, or `File "`,
 * `Traceback (` or `... `. Go and Rust traces start with `goroutine N [` and `stack backtrace:`; a
 * .NET `--- End of stack trace ---` line sits between `at` frames; a Rust panic's location follows
 * `panicked at`. Ruby's frames hold `.rb:`,
 * PHP's `#`, `Stack trace:` or `thrown in `, Elixir's and Erlang's `.ex:`, `.exs:` or `.erl:`, a
 * browser's `@` frames `@` and `://` or `[native code]`. The same answer as the pattern
 * `/(?:\b|(?<=\\[nrt]))at\s|File "|Traceback \(|\.\.\. |goroutine |stack backtrace|panicked at|\.rb:|#|Stack trace:|thrown in |\.exs?:|\.erl:|^(?=[\s\S]*@)[\s\S]*(?::\/\/|\[native code\])/`
 * (prefilter.test.ts), read without it.
 * @internal Exported for tests; not part of the public API.
 */
export function mayHoldFrames(text: string): boolean {
  if (FRAME_MARK.test(text)) return true;
  for (let i = 0; i < OTHER_TESTS.length; i++) {
    if ((OTHER_TESTS[i] as (text: string) => boolean)(text)) return true;
  }
  return false;
}

/** The line's rule of `rules` (the rules of {@link FRAME_LINES} in order) that makes it a frame, if any. */
function frameLine(line: string, rules: readonly FrameLine[]): FrameLine | undefined {
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as FrameLine;
    const { pattern, accept } = rule;
    if (accept === undefined) {
      if (pattern.test(line)) return rule;
      continue;
    }
    const m = pattern.exec(line);
    if (m !== null && accept(m)) return rule;
  }
  return undefined;
}

function indentOf(line: string): number {
  let i = 0;
  while (i < line.length && (line[i] === " " || line[i] === "\t")) i++;
  return i;
}

/** The text without its stack frames: frame lines, the lines that belong to them, inline frames. */
export function dropStackFrames(text: string): string {
  if (!mayHoldFrames(text)) return text;
  // Only the rules that may match somewhere in the text (each line is part of it): the first
  // rule that matches a line is the same.
  const rules = FRAME_LINES.filter((_, i) => (LINE_TESTS[i] as (text: string) => boolean)(text));
  const lines = text.split("\n");
  const kept: string[] = [];
  // After a frame with its source below (Python's `File "...", line N`), the indentation of the
  // frame: the next line, when deeper, is its source code.
  let sourceIndent = -1;
  for (const line of lines) {
    if (sourceIndent >= 0) {
      const deeper = line.trim() !== "" && indentOf(line) > sourceIndent;
      sourceIndent = -1;
      if (deeper) continue;
    }
    const rule = frameLine(line, rules);
    if (rule === undefined) {
      kept.push(line);
      continue;
    }
    if (rule.sourceBelow === true) sourceIndent = indentOf(line);
    if (rule.functionAbove !== undefined) {
      const previous = kept.at(-1);
      if (previous !== undefined && rule.functionAbove.test(previous)) kept.pop();
    }
  }
  let out = kept.join("\n");
  for (let i = 0; i < INLINE_FRAMES.length; i++) {
    // Tested on the text as the frames before left it (a frame taken out joins what was around
    // it): where the test fails, the pattern has no match.
    if (!(INLINE_TESTS[i] as (text: string) => boolean)(out)) continue;
    const { pattern, accept } = INLINE_FRAMES[i] as InlineFrame;
    out = out.replace(pattern, (m, location: string) => (accept(location) ? "" : m));
  }
  return out;
}
