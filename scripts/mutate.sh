#!/usr/bin/env bash
# Mutation testing of the core (`pnpm mutate [stryker options]`), e.g.
#   pnpm mutate --mutate packages/core/src/judge/effect.ts
# Stryker 10 needs Node 22 or later, as the project does.
set -euo pipefail
cd "$(dirname "$0")/.."

node_bin=node
major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$major" -lt 22 ]; then
  echo "mutate: Stryker needs Node 22 or later; this is $(node --version 2>/dev/null || echo 'no node')" >&2
  exit 1
fi
# Property tests replay one fixed seed (test/setup.ts), so two runs kill the same mutants.
export CI="${CI:-true}"
echo "mutate: Stryker under $("$node_bin" --version) ($node_bin)" >&2
exec "$node_bin" node_modules/@stryker-mutator/core/bin/stryker.js run stryker.config.mjs "$@"
