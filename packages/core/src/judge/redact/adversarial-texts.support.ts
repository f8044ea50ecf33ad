// Seeded adversarial texts for the redaction prefilters: stack frames of every runtime
// stack-frames.ts knows (cut headers, odd spacing, tabs, JSON-escaped breaks, case, mixed in prose
// and with other runtimes' marks), credentials named in the languages of named-values.ts (case,
// Turkish İ/ı, full-width separators and letters, quotes, prose), and mutants of both (a few
// characters inserted, deleted or replaced). One generator, so that prefilter-gates.test.ts (each
// gate skips only rules that would change nothing) and scripts/fuzz-redact-diff.ts (this build
// against a base build) try the same texts, and a family added for one is tried by both.
// Test support only (`*.support.ts` is left out of the build).

// Stack frames, by runtime.
const FRAMES: Record<string, readonly string[]> = {
  node: [
    "    at Object.get (/srv/app/src/notes.js:12:5)",
    "    at async Promise.all (index 0)",
    "    at new NotesClient (file:///srv/app/client.mjs:1:22)",
    "    at /srv/app/handler.js:3:14",
    "    at processTicksAndRejections (node:internal/process/task_queues:95:5)",
    "    at Module._compile (node:internal/modules/cjs/loader:1256:14)",
    "    at Array.map (<anonymous>)",
    "    at NotesService.read [as get] (/srv/app/notes.js:40:9)",
  ],
  browser: [
    "render@https://cdn.example.com/app.min.js:1:23456",
    "@https://cdn.example.com/vendor.js:2:100",
    "global code@webpack://app/src/notes.ts:42:7",
    "forEach@[native code]",
    "Notes/render/<@resource://gre/modules/x.js:3:4",
    "    at https://cdn.example.com/app.min.js:1:23456",
  ],
  python: [
    'Traceback (most recent call last):\n  File "/srv/app/main.py", line 12, in main\n    do_it(secret_id)',
    '  File "/usr/lib/python3.11/site-packages/httpx/_client.py", line 901, in send\n    raise exc',
    'File "/srv/app/notes.py", line 3, in <module>',
  ],
  go: [
    "goroutine 1 [running]:\nmain.(*Notes).get(0xc000010000, 0x1)\n\t/srv/app/notes.go:12 +0x1d",
    "main.main()\n\t/srv/app/main.go:8 +0x25",
    "created by main.start in goroutine 7\n\t/srv/app/start.go:30 +0x4f",
    "\t/usr/local/go/src/runtime/proc.go:250 +0x212",
  ],
  rust: [
    "stack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n             at /rustc/90b35a/library/core/src/panicking.rs:72:14",
    "  12: std::rt::lang_start::{{closure}}",
    "   3: __libc_start_main",
    "thread 'main' panicked at src/main.rs:5:5:",
    "thread 'main' panicked at 'oops', src/lib.rs:12:9",
    "   2: 0x55d1 - notes::store::get",
  ],
  ruby: [
    "app/models/note.rb:12:in 'find'",
    "from /usr/lib/ruby/3.2.0/net/http.rb:3:in `<main>'",
    "/srv/app/notes.rb:12:in `block in Notes#get': undefined method",
  ],
  php: [
    "Stack trace:\n#0 /var/www/src/Api.php(17): App\\Notes->get('drafts')\n#1 [internal function]: App\\Api->run()\n#2 {main}",
    "  thrown in /var/www/src/Notes.php on line 42",
    "#0 /var/www/src/Api.php(17): App\\Notes->get(Object(App\\Request))",
    "#3 {main}",
  ],
  java: [
    "\tat com.acme.notes.NotesClient.get(NotesClient.java:42)",
    "\tat java.base/java.lang.Thread.run(Thread.java:833)",
    "\t... 12 more",
    "\tat sun.reflect.NativeMethodAccessorImpl.invoke0(Native Method)",
    "\tat com.acme.Foo.bar(Unknown Source)",
  ],
  dotnet: [
    "   at Acme.Notes.NotesClient.Get(String id) in C:\\src\\Notes\\NotesClient.cs:line 42",
    "--- End of stack trace from previous location ---",
    "--- End of inner exception stack trace ---",
    "   at System.Net.Http.HttpClient.SendAsync(HttpRequestMessage request)",
  ],
  beam: [
    "(notes 0.1.0) lib/notes.ex:12: Notes.create/2",
    "(stdlib 5.0) gen_server.erl:1077: :gen_server.try_dispatch/4",
    "(elixir) lib/enum.ex:1: anonymous fn/5 in Enum.map/2",
    '(notes) test/notes_test.exs:9: NotesTest."test x"/1',
  ],
};
const FAMILIES = Object.keys(FRAMES);

const PROSE = [
  "Error: could not read note",
  "request failed at least once (of 3)",
  "look at this",
  "retry at 10:00",
  "see #42",
  "namespace a::b",
  "user_name is taken",
  "mail me @ home://x",
  "wait... 3 more",
  "the goroutine leaked",
  "it panicked",
  "thrown in",
  "--- End of ",
  'File "x"',
  "Traceback (",
  "note.rb: ok",
  "a.ex: fine",
  "stack backtrace",
  "",
];
const JOINS = ["\n", "\n", "\\n", " ", "\r\n", "\\n\\t", "\n\t", "  ", "\t", "\\r\\n"];
const SPACES = [" ", "  ", "\t", "\u00a0", "   ", " \t", "\u3000", "\u2003"];

// Credentials.
const NAMES = [
  "passwort",
  "kennwort",
  "contraseña",
  "contrasena",
  "senha",
  "palavra-passe",
  "palavra passe",
  "mot de passe",
  "mot  de passe",
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
  // In Turkish capitals: a dotted İ, which a case-insensitive pattern does not read as i.
  "ŞİFRE",
  "пароль",
  "гасло",
  "κωδικός",
  "密码",
  "密碼",
  "口令",
  "パスワード",
  "비밀번호",
  "암호",
  // English names: localised only before a full-width separator.
  "password",
  "passwort",
  "passwd",
  "pwd",
  "passphrase",
  "secret",
  "token",
  "api_key",
  "api-key",
  "apikey",
];
const SEPARATORS = [
  ":",
  "=",
  "：",
  "＝",
  " : ",
  " = ",
  "： ",
  '":',
  "'=",
  "\t:",
  "  ＝  ",
  "\u00a0:",
];
const PROSE_VERBS = [
  "passwort ist",
  "Passwort lautet",
  "kennwort war",
  "mot de passe est",
  "mot de passe était",
  "contraseña es",
  "contrasena era",
  "senha é",
  "palavra-passe será",
  "password è",
  "password era",
  "password sarà",
  "wachtwoord is",
  "wachtwoord luidt",
  "hasło to",
  "haslo jest",
  "hasło brzmi",
  "пароль —",
  "пароль - ",
  "пароль это ",
  "пароль был ",
  "пароль:",
  "密码是",
  "密碼為",
  "口令为",
  "パスワードは",
  "비밀번호는",
  "비밀번호은",
];
const VALUES = [
  "Geheim123!",
  "hunter2-Secret",
  "s3cr3tP@ss",
  "Zx9#kLm2qR",
  '"quoted secret 42"',
  "'q-Val_9x'",
  "「秘密の値99」",
  "Tr0ub4dor&3",
  "xK8vQ2mN7pL4",
  "ÇokGizli2024",
];
const PREFIX = [
  "",
  "Fehler: ",
  "Error de autenticación. ",
  "ошибка: ",
  "登录失败，",
  "login failed; ",
  '{"detail":"',
  "user=bob ",
];

/** Characters the prefilters read (or should): separators, escapes, case, other scripts. */
const EDITS = [
  "\\",
  "n",
  "t",
  "r",
  "$",
  ".",
  "_",
  "#",
  "@",
  ":",
  "：",
  "＝",
  "=",
  " ",
  "  ",
  "\t",
  "\u00a0",
  "\u3000",
  "\n",
  "\\n",
  "a",
  "at",
  " at ",
  "İ",
  "ı",
  "ſ",
  "\u212a",
  "É",
  "é",
  "e\u0301",
  "ё",
  "Σ",
  "ς",
  "\ud801\udc37",
  "\ud801",
  "(",
  ")",
  "/",
  "'",
  '"',
  "`",
  "-",
  "...",
  "::",
  "goroutine ",
  'File "',
  "panicked",
  "thrown in",
  ".rb:",
  ".ex:",
  "://",
  "[native code]",
  "--- End of ",
];

/** Which kind of text `next` wrote. */
export type TextFamily = "frames" | "credentials" | "mutants";

/**
 * The texts of `seed`: the same seed writes the same texts, in the same order. `rand`, `pick` and
 * `chance` draw from the same stream (mulberry32), for a caller's own choices between texts.
 */
export function adversarialTexts(seed0: number) {
  let seed = seed0 >>> 0;
  /** mulberry32 */
  function rand(): number {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const chance = (p: number): boolean => rand() < p;

  function turkish(s: string): string {
    return s
      .replace(/i/g, () => pick(["i", "İ", "ı", "I"]))
      .replace(/I/g, () => pick(["I", "ı", "İ"]));
  }

  /** A frame's case: mostly as written; else upper, lower, capitalised, mixed or Turkish İ/ı. */
  function mutateCase(s: string): string {
    const r = rand();
    if (r < 0.7) return s;
    if (r < 0.8) return s.toUpperCase();
    if (r < 0.9) return s.toLowerCase();
    if (r < 0.93) return s.charAt(0).toUpperCase() + s.slice(1);
    if (r < 0.97) return [...s].map((c) => (chance(0.3) ? c.toUpperCase() : c)).join("");
    return turkish(s);
  }

  function mutateSpaces(s: string): string {
    if (chance(0.6)) return s;
    return s.replace(/ /g, () => (chance(0.2) ? pick(SPACES) : " "));
  }

  function cut(s: string): string {
    if (chance(0.8)) return s;
    const lines = s.split("\n");
    if (lines.length > 1 && chance(0.6))
      return lines.slice(1 + Math.floor(rand() * (lines.length - 1))).join("\n");
    const at = Math.floor(rand() * s.length);
    return chance(0.5) ? s.slice(at) : s.slice(0, at);
  }

  /** One to five frames, mostly of one runtime, often with prose around them. */
  function frameText(): string {
    const parts: string[] = [];
    if (chance(0.7)) parts.push(pick(PROSE));
    const n = 1 + Math.floor(rand() * 5);
    const home = pick(FAMILIES);
    for (let i = 0; i < n; i++) {
      const family = chance(0.6) ? home : pick(FAMILIES);
      let frame = pick(FRAMES[family] as readonly string[]);
      frame = cut(mutateSpaces(mutateCase(frame)));
      if (chance(0.15)) frame = frame.replace(/^\s+/, "");
      if (chance(0.1)) frame = frame.replace(/\n/g, "\\n").replace(/\t/g, "\\t");
      parts.push(frame);
      if (chance(0.2)) parts.push(pick(PROSE));
    }
    let out = parts[0] as string;
    for (let i = 1; i < parts.length; i++) out += pick(JOINS) + (parts[i] as string);
    return out;
  }

  function caseOf(s: string): string {
    const r = rand();
    if (r < 0.35) return s;
    if (r < 0.55) return s.toUpperCase();
    if (r < 0.7) return s.charAt(0).toUpperCase() + s.slice(1);
    if (r < 0.85)
      return [...s].map((c) => (chance(0.5) ? c.toUpperCase() : c.toLowerCase())).join("");
    return turkish(s);
  }

  function fullWidth(s: string): string {
    // ASCII letters to full-width, now and then.
    if (chance(0.9)) return s;
    return s.replace(/[A-Za-z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0));
  }

  /** One or two credentials, named (`name: value`) or told in prose (`Passwort lautet value`). */
  function credentialText(): string {
    let out = pick(PREFIX);
    const n = 1 + Math.floor(rand() * 2);
    for (let i = 0; i < n; i++) {
      if (chance(0.6)) {
        const name = fullWidth(caseOf(pick(NAMES)));
        const quote = chance(0.2) ? pick(['"', "'"]) : "";
        out += `${name}${quote}${pick(SEPARATORS)}${chance(0.3) ? pick(SPACES) : ""}${pick(VALUES)}`;
      } else {
        out += `${chance(0.5) ? pick(["Das ", "le ", "la ", "a ", "het ", "", "Ваш "]) : ""}${mutateSpaces(caseOf(pick(PROSE_VERBS)))}${pick(["", " ", "  ", "\t", "\u00a0"])}${pick(VALUES)}`;
      }
      out += pick(["", ". ", "\n", " — ", "\\n", '"}', ", "]);
    }
    if (chance(0.2)) out += ` ${frameText()}`;
    return out;
  }

  /** A frame or credential text with a few characters inserted, deleted or replaced. */
  function mutantText(): string {
    let s = chance(0.5) ? frameText() : credentialText();
    const n = 1 + Math.floor(rand() * 4);
    for (let i = 0; i < n; i++) {
      const at = Math.floor(rand() * (s.length + 1));
      const r = rand();
      if (r < 0.4) s = s.slice(0, at) + pick(EDITS) + s.slice(at);
      else if (r < 0.7) s = s.slice(0, at) + s.slice(at + 1 + Math.floor(rand() * 3));
      else s = s.slice(0, at) + pick(EDITS) + s.slice(at + 1);
    }
    return s;
  }

  /** The next text: about a third each of frames, credentials and mutants. */
  function next(): { family: TextFamily; text: string } {
    const r = rand();
    if (r < 0.35) return { family: "frames", text: frameText() };
    if (r < 0.7) return { family: "credentials", text: credentialText() };
    return { family: "mutants", text: mutantText() };
  }

  return { rand, pick, chance, next };
}
