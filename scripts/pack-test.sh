#!/usr/bin/env bash
# The pack test: what a user gets from `npm install`, run the way a user runs it.
#
#   build every package, `pnpm -r pack` the tarballs, lint them (publint --strict, attw esm-only),
#   install them with npm into a clean project outside the workspace (peers from the registry),
#   type-check test/pack/*.ts against the installed declarations (NodeNext and bundler), then
#   under plain `node` (no tsx, no conditions), on every Node in PACK_TEST_NODES: govern the
#   installed testkit's fault server over stdio and Streamable HTTP, run the AI SDK adapter with
#   ai 6, and `npx governor classify` / `npx governor demo --json` from the installed bin; then
#   installs ai 7 and runs the adapter with it. Every node must be 22 or later (the packages'
#   `engines`).
#
# Environment:
#   PACK_TEST_NODES       node binaries to run under, space-separated (default: `node` on PATH)
#   PACK_TEST_SKIP_BUILD  1: use the dist/ already built
#   PACK_TEST_KEEP        1: keep the temporary directory (printed at the end)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
read -r -a NODES <<<"${PACK_TEST_NODES:-$(command -v node)}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/governor-pack.XXXXXX")"
TARBALLS="$WORK/tarballs"
NPM_FLAGS=(--no-audit --no-fund --loglevel=error)
# Versions the consumer projects install next to the tarballs, as a user would.
MCP_SDK="@modelcontextprotocol/sdk@~1.32.2"
MCP_CLIENT_V2="@modelcontextprotocol/client@~2.4.0"
TYPESCRIPT="typescript@6.0.3"
TYPES_NODE="@types/node@^22.20.7"

cleanup() {
  if [ "${PACK_TEST_KEEP:-}" = 1 ]; then echo "pack test: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

STARTED="$(date +%s.%N)"
step() { printf '\n== pack test: %s (at %s s)\n' "$*" "$(since "$STARTED")"; }
fail() {
  echo "pack test: FAILED: $*" >&2
  exit 1
}
major() { "$1" -p 'process.versions.node.split(".")[0]'; }
# Seconds since $1 (from `date +%s.%N`), one decimal.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

for node in "${NODES[@]}"; do
  [ "$(major "$node")" -ge 22 ] || fail "$node is Node $("$node" --version): the packages need Node 22 or later"
done

cd "$ROOT"
if [ "${PACK_TEST_SKIP_BUILD:-}" != 1 ]; then
  step "build"
  pnpm --silent build
fi

step "pack"
mkdir -p "$TARBALLS"
pnpm -r pack --pack-destination "$TARBALLS" >/dev/null
for tarball in "$TARBALLS"/*.tgz; do
  listing="$(tar -tzf "$tarball")"
  if grep -Eq '\.test\.|(^|/)(test|tests|fixtures|bench|corpus|src)/|\.tsbuildinfo$' <<<"$listing"; then
    fail "$(basename "$tarball") holds files users do not need:
$(grep -E '\.test\.|(^|/)(test|tests|fixtures|bench|corpus|src)/|\.tsbuildinfo$' <<<"$listing")"
  fi
  printf '%-34s %7s bytes packed, %3s files\n' "$(basename "$tarball")" \
    "$(wc -c <"$tarball" | tr -d ' ')" "$(wc -l <<<"$listing" | tr -d ' ')"
done
tarball() { ls "$TARBALLS"/governor-"$1"-*.tgz; }

step "publint --strict, attw --profile esm-only"
for tarball in "$TARBALLS"/*.tgz; do
  name="$(basename "$tarball")"
  pnpm exec publint run "$tarball" --strict --level suggestion >"$WORK/publint.log" 2>&1 ||
    fail "publint $name: $(cat "$WORK/publint.log")"
  pnpm exec attw "$tarball" --profile esm-only --format table-flipped --no-emoji --no-color \
    >"$WORK/attw.log" 2>&1 || fail "attw $name: $(cat "$WORK/attw.log")"
  echo "$name: publint clean ($(tail -1 "$WORK/publint.log")); attw clean"
done

# A project outside the workspace: npm, the tarballs, their peers from the registry.
new_project() {
  mkdir -p "$1"
  printf '{ "name": "governor-pack-consumer", "private": true, "type": "module" }\n' >"$1/package.json"
  cp "$ROOT"/test/pack/tsconfig.*.json "$1/"
}

step "npm install into a clean project"
APP="$WORK/app"
new_project "$APP"
cp "$ROOT"/test/pack/consumer.ts "$ROOT"/test/pack/ai-consumer.ts "$APP/"
started="$(date +%s.%N)"
(cd "$APP" && npm install "${NPM_FLAGS[@]}" \
  "$(tarball core)" "$(tarball mcp)" "$(tarball redis)" "$(tarball sqlite)" "$(tarball ai-sdk)" \
  "$(tarball testkit)" "$(tarball cli)" "$MCP_SDK" "$MCP_CLIENT_V2" "ai@^6" "zod@^4" \
  "$TYPESCRIPT" "$TYPES_NODE")
echo "installed in $(since "$started") s: $(cd "$APP" && npm ls --all --parseable 2>/dev/null | wc -l | tr -d ' ') packages"
[ ! -e "$APP/node_modules/tsx" ] || fail "tsx was installed: a package still depends on it"

# tsc with skipLibCheck off, so our declarations are checked as deeply as the consumer's code.
# Errors in other packages' declarations (ai's DOM types, json-schema without types) are theirs:
# counted, not fatal. Any error in the consumer or in node_modules/@governor fails the test.
typecheck() {
  local dir="$1" config="$2" log="$WORK/tsc.log"
  if (cd "$dir" && npx --no-install tsc -p "$config" >"$log" 2>&1); then
    echo "$config: clean"
    return
  fi
  local ours
  ours="$(grep -E '^[^ ].*: error TS' "$log" | grep -Ev '^node_modules/' || true)"
  ours+="$(grep -E '^node_modules/@governor/.*: error TS' "$log" || true)"
  [ -z "$ours" ] || fail "tsc -p $config in $dir: $(cat "$log")"
  echo "$config: clean ($(grep -cE '^node_modules/.*: error TS' "$log") errors in other packages' declarations ignored)"
}

step "type-check the consumer against the installed types (NodeNext, bundler)"
typecheck "$APP" tsconfig.nodenext.json # also emits out/*.js, which the runs below execute
typecheck "$APP" tsconfig.bundler.json

step "the install lines of README.md and docs/proxy.md, as written"
# Each line that installs from /tmp/governor, with that directory replaced by ours: a line that no
# longer installs (a wrong version in the file name, a dependency the tarballs cannot satisfy from
# the registry) fails here as it would for a user.
docs_lines() {
  grep -oE "npm i [^\`]*/tmp/governor/governor-[^\`]*" "$@" | sed "s#/tmp/governor/#$TARBALLS/#g"
}
mapfile -t readme_lines < <(docs_lines "$ROOT/README.md")
[ "${#readme_lines[@]}" -ge 2 ] || fail "README.md: expected the two tarball install lines, found ${#readme_lines[@]}"
MY_APP="$WORK/my-app"
new_project "$MY_APP"
for line in "${readme_lines[@]}"; do
  echo "README.md: $line"
  (cd "$MY_APP" && PATH="$(dirname "${NODES[0]}"):$PATH" bash -euo pipefail -c "$line" >"$WORK/line.log" 2>&1) ||
    fail "README.md's line failed: $line
$(tail -40 "$WORK/line.log")"
done
grep -q "scripted agent" "$WORK/line.log" || fail "npx governor demo printed no demo: $(tail -20 "$WORK/line.log")"
[ ! -e "$MY_APP/node_modules/@governor/redis" ] || fail "the CLI line installed @governor/redis (an optional peer)"
# The CLI line is a dev install next to the first line's: it must leave core and mcp the app's
# dependencies (npm moves a package named again with -D to devDependencies).
(cd "$MY_APP" && node -e '
  const { dependencies = {}, devDependencies = {} } = require("./package.json");
  for (const name of ["@governor/core", "@governor/mcp"])
    if (!(name in dependencies) || name in devDependencies) throw new Error(`${name} is not a dependency`);
  if (!("@governor/cli" in devDependencies)) throw new Error("@governor/cli is not a dev dependency");
') || fail "README.md's lines left the app's package.json: $(cat "$MY_APP/package.json")"
mapfile -t proxy_lines < <(docs_lines "$ROOT/docs/proxy.md")
[ "${#proxy_lines[@]}" -eq 1 ] || fail "docs/proxy.md: expected one global install line, found ${#proxy_lines[@]}"
echo "docs/proxy.md: ${proxy_lines[0]}"
(
  export PATH="$(dirname "${NODES[0]}"):$PATH" npm_config_prefix="$WORK/global"
  bash -euo pipefail -c "${proxy_lines[0]}" >"$WORK/line.log" 2>&1 ||
    fail "docs/proxy.md's line failed: ${proxy_lines[0]}
$(tail -40 "$WORK/line.log")"
  version="$("$WORK/global/bin/governor" --version)"
  [ "$version" = "$(node -p 'require(process.argv[1]).version' "$ROOT/packages/cli/package.json")" ] ||
    fail "governor --version printed $version"
  echo "global governor --version: $version"
  # The proxy's starter policies ship with the CLI and are valid policies.
  for preset in "$WORK"/global/lib/node_modules/@governor/cli/presets/*.json; do
    "$WORK/global/bin/governor" check "$preset" >/dev/null || fail "governor check $preset"
  done
  [ -e "$WORK/global/lib/node_modules/@governor/cli/presets/filesystem.json" ] ||
    fail "the CLI package holds no presets/filesystem.json"
)

check_demo='
let input = "";
process.stdin.on("data", (chunk) => (input += chunk)).on("end", () => {
  const lines = input.trim().split("\n");
  if (lines.length !== 1) throw new Error(`demo --json printed ${lines.length} lines`);
  const report = JSON.parse(lines[0]);
  for (const strategy of ["naive", "blindRetry", "governed"])
    for (const field of ["toolCalls", "wastedCalls", "duplicateWrites", "secretsToModel", "tasksSucceeded"])
      if (!Number.isFinite(report.totals?.[strategy]?.[field])) throw new Error(`no totals.${strategy}.${field}`);
  if (!Array.isArray(report.tasks) || report.tasks.length === 0) throw new Error("no tasks");
  if (typeof report.metrics?.runs !== "number") throw new Error("no metrics.runs");
  const g = report.totals.governed;
  if (g.secretsToModel !== 0 || g.duplicateWrites !== 0) throw new Error("governed leaked or duplicated");
  console.log(`demo --json: governed ${g.tasksSucceeded} tasks done, ${g.wastedCalls} wasted calls, ` +
    `naive ${report.totals.naive.secretsToModel} secrets to the model`);
});'
# @governor/sqlite on node:sqlite (Node 22.13 and later): a claim in one process is a write in
# doubt for the next one on the same file.
check_sqlite='
import { createSqliteStore } from "@governor/sqlite";
const [path, step] = process.argv.slice(1);
const store = createSqliteStore({ path });
const now = step === "first" ? 1000 : 5000;
const claim = store.claim("charge", "h1", { now, allowUncertain: false, leaseMs: 1000 });
store.close();
const expected = step === "first" ? "claimed" : "uncertain";
if (claim.status !== expected) throw new Error(`sqlite ${step}: ${claim.status}, expected ${expected}`);
console.log(`sqlite ${step} process: ${claim.status}`);'
check_classify='
let input = "";
process.stdin.on("data", (chunk) => (input += chunk)).on("end", () => {
  const out = JSON.parse(input.trim());
  if (out.action !== "correct_arguments" || out.reason !== "not_found" || !/^[0-9a-f]+$/.test(out.fingerprint))
    throw new Error(`classify printed ${input}`);
  console.log(`classify: ${out.action} (${out.reason})`);
});'

for node in "${NODES[@]}"; do
  step "run under plain node $("$node" --version) ($node)"
  bin="$(dirname "$node")"
  started="$(date +%s.%N)"
  (
    cd "$APP"
    export PATH="$bin:$PATH"
    unset NODE_OPTIONS
    [ "$(node --version)" = "$("$node" --version)" ] || fail "PATH does not start with $bin"
    # Importing core writes nothing to stderr, not even a warning of the runtime's.
    node --input-type=module -e 'await import("@governor/core"); await import("@governor/core/judge")' \
      2>"$WORK/import.err" || fail "importing @governor/core failed: $(cat "$WORK/import.err")"
    [ ! -s "$WORK/import.err" ] || fail "importing @governor/core wrote to stderr: $(cat "$WORK/import.err")"
    node out/consumer.js
    node out/ai-consumer.js
    head -1 "$ROOT/examples/failures.jsonl" | npx --no-install governor classify | node -e "$check_classify"
    npx --no-install governor demo --json | node -e "$check_demo"
    if node -e 'process.exit(process.getBuiltinModule?.("node:sqlite") ? 0 : 1)' 2>/dev/null; then
      node --input-type=module -e "$check_sqlite" "$WORK/ledger.db" first
      node --input-type=module -e "$check_sqlite" "$WORK/ledger.db" restarted
      rm -f "$WORK"/ledger.db*
    else
      echo "sqlite: skipped (node $(node --version) has no node:sqlite)"
    fi
  )
  echo "node $("$node" --version): passed in $(since "$started") s"
done

step "ai 7 with @governor/ai-sdk"
AI7="$WORK/app-ai7"
new_project "$AI7"
cp "$ROOT"/test/pack/ai-consumer.ts "$AI7/"
(
  cd "$AI7"
  # npm checks engines against the node that runs it.
  export PATH="$(dirname "${NODES[0]}"):$PATH"
  npm install "${NPM_FLAGS[@]}" --engine-strict "$(tarball core)" "$(tarball ai-sdk)" \
    "ai@^7" "zod@^4" "$TYPESCRIPT" "$TYPES_NODE"
)
typecheck "$AI7" tsconfig.nodenext.json
for node in "${NODES[@]}"; do
  (cd "$AI7" && "$node" out/ai-consumer.js)
done

step "passed"
