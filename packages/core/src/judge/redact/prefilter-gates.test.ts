/**
 * The gates of the stack-frame rules and of the localised credential rules (a rule is not run where
 * its gate fails) skip only rules that would change nothing: on seeded adversarial texts, stack
 * frames of every runtime (cut, re-spaced, re-cased, JSON-escaped, mixed with other runtimes'
 * marks and prose) and credentials named in every language of named-values.ts (case, Turkish İ/ı,
 * full-width separators and letters, quotes, prose), each also mutated a character at a time. A
 * gate that fails on a text its rule would match is a leak. The same generators, against a base
 * build, are scripts/fuzz-redact-diff.ts.
 */
import { describe, expect, it } from "vitest";
import { NAMED_VALUE_RULES } from "./named-values.ts";
import { applySecretRule } from "./rule.ts";
import { FRAME_RULE_TESTS } from "./stack-frames.ts";

function generator(seed0: number) {
  let seed = seed0 >>> 0;
  const rand = (): number => {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const chance = (p: number) => rand() < p;
  return { rand, pick, chance };
}

const FRAMES = [
  "    at Object.get (/srv/app/src/notes.js:12:5)",
  "    at async Promise.all (index 0)",
  "    at new NotesClient (file:///srv/app/client.mjs:1:22)",
  "    at /srv/app/handler.js:3:14",
  "    at NotesService.read [as get] (/srv/app/notes.js:40:9)",
  "render@https://cdn.example.com/app.min.js:1:23456",
  "global code@webpack://app/src/notes.ts:42:7",
  "forEach@[native code]",
  "    at https://cdn.example.com/app.min.js:1:23456",
  'Traceback (most recent call last):\n  File "/srv/app/main.py", line 12, in main\n    do_it(x)',
  'File "/srv/app/notes.py", line 3, in <module>',
  "goroutine 1 [running]:\nmain.(*Notes).get(0xc000010000, 0x1)\n\t/srv/app/notes.go:12 +0x1d",
  "created by main.start in goroutine 7\n\t/srv/app/start.go:30 +0x4f",
  "stack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n             at /rustc/9/library/core/src/panicking.rs:72:14",
  "   3: __libc_start_main",
  "thread 'main' panicked at src/main.rs:5:5:",
  "thread 'main' panicked at 'oops', src/lib.rs:12:9",
  "app/models/note.rb:12:in 'find'",
  "from /usr/lib/ruby/3.2.0/net/http.rb:3:in `<main>'",
  "Stack trace:\n#0 /var/www/src/Api.php(17): App\\Notes->get('drafts')\n#1 [internal function]: App\\Api->run()\n#2 {main}",
  "  thrown in /var/www/src/Notes.php on line 42",
  "\tat com.acme.notes.NotesClient.get(NotesClient.java:42)",
  "\t... 12 more",
  "   at Acme.Notes.NotesClient.Get(String id) in C:\\src\\Notes\\NotesClient.cs:line 42",
  "--- End of stack trace from previous location ---",
  "(notes 0.1.0) lib/notes.ex:12: Notes.create/2",
  "(stdlib 5.0) gen_server.erl:1077: :gen_server.try_dispatch/4",
];
const PROSE = [
  "Error: could not read note",
  "at least one (of 3)",
  "see #42",
  "a::b",
  "user_name",
  "wait... 3 more",
  "it panicked",
  "thrown in",
  "",
];
const JOINS = ["\n", "\\n", " ", "\r\n", "\\n\\t", "\n\t", "\t"];
const SPACES = [" ", "  ", "\t", "\u00a0", "\u3000", "\u2003"];
const NAMES = [
  "passwort",
  "kennwort",
  "contraseña",
  "contrasena",
  "senha",
  "palavra-passe",
  "mot de passe",
  "wachtwoord",
  "passord",
  "lösenord",
  "adgangskode",
  "salasana",
  "jelszó",
  "hasło",
  "haslo",
  "heslo",
  "şifre",
  "пароль",
  "гасло",
  "κωδικός",
  "密码",
  "密碼",
  "口令",
  "パスワード",
  "비밀번호",
  "암호",
  "password",
  "passwd",
  "pwd",
  "passphrase",
  "secret",
  "token",
  "api_key",
  "apikey",
];
const SEPARATORS = [":", "=", "：", "＝", " : ", "： ", '":', "'=", "  ＝  "];
const TOLD = [
  "Passwort lautet",
  "kennwort war",
  "mot de passe est",
  "contraseña es",
  "senha é",
  "palavra-passe será",
  "password è",
  "password sarà",
  "wachtwoord luidt",
  "hasło to",
  "haslo jest",
  "пароль —",
  "пароль это ",
  "密码是",
  "密碼為",
  "パスワードは",
  "비밀번호는",
];
const VALUES = [
  "Geheim123!",
  "hunter2-Secret",
  "Zx9#kLm2qR",
  '"quoted secret 42"',
  "「秘密の値99」",
];
const EDITS = [
  "\\",
  "n",
  "t",
  "$",
  ".",
  "_",
  "#",
  "@",
  ":",
  "：",
  "＝",
  " ",
  "\t",
  "\u00a0",
  "\n",
  "\\n",
  "at",
  " at ",
  "İ",
  "ı",
  "ſ",
  "\u212a",
  "é",
  "e\u0301",
  "ς",
  "\ud801\udc37",
  "(",
  ")",
  "/",
  "'",
  '"',
  "...",
  "::",
  "goroutine ",
  'File "',
  "panicked",
  "thrown in",
  ".rb:",
  ".ex:",
  "://",
  "--- End of ",
];

function texts(count: number, seed: number): string[] {
  const { rand, pick, chance } = generator(seed);
  const recase = (s: string) => {
    const r = rand();
    if (r < 0.5) return s;
    if (r < 0.65) return s.toUpperCase();
    if (r < 0.75) return s.charAt(0).toUpperCase() + s.slice(1);
    if (r < 0.9) return [...s].map((c) => (chance(0.5) ? c.toUpperCase() : c)).join("");
    return s.replace(/i/g, () => pick(["i", "İ", "ı", "I"]));
  };
  const frames = () => {
    const parts = [pick(PROSE)];
    for (let n = 1 + Math.floor(rand() * 4); n > 0; n--) {
      let f = pick(FRAMES);
      if (chance(0.2)) f = recase(f);
      if (chance(0.3)) f = f.replace(/ /g, () => (chance(0.2) ? pick(SPACES) : " "));
      if (chance(0.2)) f = f.split("\n").slice(1).join("\n") || f;
      if (chance(0.1)) f = f.replace(/\n/g, "\\n").replace(/\t/g, "\\t");
      parts.push(f);
    }
    return parts.map((p, i) => (i === 0 ? p : pick(JOINS) + p)).join("");
  };
  const credentials = () => {
    let out = "";
    for (let n = 1 + Math.floor(rand() * 2); n > 0; n--) {
      let name = recase(pick(NAMES));
      if (chance(0.1))
        name = name.replace(/[A-Za-z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
      out += chance(0.6)
        ? `${name}${chance(0.2) ? '"' : ""}${pick(SEPARATORS)}${pick(VALUES)}`
        : `${recase(pick(TOLD))}${pick(["", " ", "\t"])}${pick(VALUES)}`;
      out += pick(["", ". ", "\n", "\\n", '"}']);
    }
    return out;
  };
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    let s = chance(0.5) ? frames() : credentials();
    if (chance(0.3)) s += pick(JOINS) + (chance(0.5) ? frames() : credentials());
    if (chance(0.4)) {
      for (let n = 1 + Math.floor(rand() * 3); n > 0; n--) {
        const at = Math.floor(rand() * (s.length + 1));
        s = chance(0.5)
          ? s.slice(0, at) + pick(EDITS) + s.slice(at)
          : s.slice(0, at) + s.slice(at + 1);
      }
    }
    out.push(s);
  }
  return out;
}

const TEXTS = texts(4000, 29);

describe("prefilter gates skip only rules that would change nothing", () => {
  it("a frame rule whose test fails on a text takes no frame from it", () => {
    let gated = 0;
    for (const text of TEXTS) {
      for (const { pattern, test, takes } of FRAME_RULE_TESTS) {
        if (test(text)) continue;
        gated++;
        expect(takes(text), `${pattern.source}\n${JSON.stringify(text)}`).toBe(false);
      }
    }
    expect(gated).toBeGreaterThan(10_000);
  });

  it("a named-value rule whose test fails on a text changes nothing in it", () => {
    let gated = 0;
    for (const text of TEXTS) {
      for (const rule of NAMED_VALUE_RULES.rules) {
        if (rule[2](text)) continue;
        gated++;
        expect(applySecretRule(rule, text), `${rule[0].source}\n${JSON.stringify(text)}`).toBe(
          text,
        );
      }
    }
    expect(gated).toBeGreaterThan(1_000);
  });
});
