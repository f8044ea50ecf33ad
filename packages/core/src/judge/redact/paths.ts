/**
 * Absolute paths: UNC shares, Windows drives, POSIX and home-relative paths (two segments or more:
 * a single `/word` is more often a route or a ratio than a file; after `file:` or `ENOENT:` too;
 * `~/…` and another user's `~bob/…`), and paths from a home or profile variable (`$HOME/.netrc`,
 * `${HOME}/.config/…`, `%USERPROFILE%\.aws\credentials`, `%APPDATA%\…`). Each becomes `[path]`;
 * trailing sentence punctuation stays. Relative paths stay.
 */
import { PATH } from "./placeholders.ts";
import type { LocationKind } from "./rule.ts";
import { splitTrailing } from "./scan.ts";

/** A Win32 device or extended-length path: `\\?\C:\…`, `\\.\pipe\…`, `\\?\UNC\…`, `\??\C:\…`. */
const DEVICE_PATH_SRC = String.raw`(?<![\w\\])\\(?:\\[?.]|\?\?)\\[^\s"'\x60<>|*()\[\]{},;]+`;
const UNC_SRC = String.raw`(?<![\w\\])\\{2,4}[^\s\\"'\x60<>|?*()\[\]{},;]+\\[^\s"'\x60<>|?*()\[\]{},;]*`;
const WINDOWS_PATH_SRC = String.raw`(?<![\w\\/])[A-Za-z]:[\\/][^\s"'\x60<>|?*()\[\]{},;]*`;
// After a word and its `:` too: a file URI with one slash, as Java writes a URL (`file:/home/…`,
// `jar:file:/C:/…!/x`), and a path glued to what names it (`ENOENT:/home/…`, a volume's
// `notes:/home/…`, `src/loader.ts:/home/…`, scp's `build-01:/var/…`), whose `:` would otherwise
// keep the path from being read. Not after another `:` (an IPv6 prefix, `::/0`).
// Two look-behinds, not an alternation of them: the pattern still starts where a `~` or `/` is.
// `~` alone or with a user's name (`~bob/.ssh/id_rsa`): a name starts with a letter or `_`.
const POSIX_PATH_SRC = String.raw`(?<![\w.~/\\-])(?<!(?<![A-Za-z0-9]):)(?:~(?:[A-Za-z_][\w.-]{0,31})?)?\/[^\s/"'\x60<>()\[\]{}|,;]+\/[^\s"'\x60<>()\[\]{}|,;]*`;

/**
 * The variables that name a home, profile or system folder: what follows them is a path from
 * there, as absolute as the folder is. Other variables (`$SRC/app`, `$1/x`) may name anything and
 * stay.
 */
const HOME_VARIABLES =
  "HOME|USERPROFILE|APPDATA|LOCALAPPDATA|PROGRAMDATA|ALLUSERSPROFILE|HOMEDRIVE|HOMEPATH|XDG_CONFIG_HOME|XDG_DATA_HOME|XDG_STATE_HOME|XDG_CACHE_HOME|XDG_RUNTIME_DIR|TMPDIR|TEMP|TMP";
// `$HOME/…` and `${HOME}/…` (a separator and one segment at least: `$HOME` alone stays).
const SHELL_HOME_PATH_SRC = String.raw`(?<![\w$\\])\$(?:(?:${HOME_VARIABLES})(?!\w)|\{(?:${HOME_VARIABLES})\})[\\/][^\s/"'\x60<>()\[\]{}|,;$%]+(?:[\\/][^\s"'\x60<>()\[\]{}|,;]*)?`;
// `%USERPROFILE%\…` and `%HOMEDRIVE%%HOMEPATH%\…` (a separator and one segment at least).
const WINDOWS_HOME_PATH_SRC = String.raw`(?<![\w%])(?:%HOMEDRIVE%)?%(?:${HOME_VARIABLES})%[\\/][^\s"'\x60<>|?*()\[\]{},;%]+`;

function redactPath(match: string): string {
  const [, trailing] = splitTrailing(match);
  return PATH + trailing;
}

/** The kinds of paths, in the order the location pattern reads them. */
export const PATH_KINDS: readonly LocationKind[] = [
  {
    source: DEVICE_PATH_SRC,
    may: (text) => text.includes("?\\") || text.includes("\\.\\"),
    replace: redactPath,
    spansSpaces: true,
  },
  {
    source: UNC_SRC,
    may: (text) => text.includes("\\\\"),
    replace: redactPath,
    spansSpaces: true,
  },
  {
    source: WINDOWS_PATH_SRC,
    may: (text) => text.includes(":\\") || text.includes(":/"),
    replace: redactPath,
    spansSpaces: true,
  },
  {
    source: SHELL_HOME_PATH_SRC,
    may: (text) => text.includes("$"),
    replace: redactPath,
    spansSpaces: true,
  },
  {
    source: WINDOWS_HOME_PATH_SRC,
    may: (text) => text.indexOf("%") !== text.lastIndexOf("%"),
    replace: redactPath,
    spansSpaces: true,
  },
  // Two slashes.
  {
    source: POSIX_PATH_SRC,
    may: (text) => text.indexOf("/") !== text.lastIndexOf("/"),
    replace: redactPath,
    spansSpaces: true,
  },
];
