#!/usr/bin/env bash
# snapshot-dist.sh DIR: copies the built @governor/core, @governor/mcp and @governor/cli of this
# checkout (run `pnpm build` first) into DIR, each with its package.json and its dependencies linked
# by absolute path, the mcp and cli copies importing the core and mcp copies. bench/mcp-ab.ts then
# measures that copy side by side with the current build in one process (bench/proxy-cpu.ts and
# bench/proxy-path.ts run the cli copy's proxy):
#
#   git stash && pnpm build && bash bench/snapshot-dist.sh /tmp/governor-base && git stash pop
#   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/mcp-ab.ts
set -euo pipefail
dest="${1:?usage: snapshot-dist.sh DIR}"
root="$(cd "$(dirname "$0")/.." && pwd)"
rm -rf "$dest"
for p in core mcp cli; do
  src="$root/packages/$p"
  [ -f "$src/dist/index.js" ] || [ -f "$src/dist/bin.js" ] || { echo "snapshot-dist: $src/dist is not built (pnpm build)" >&2; exit 1; }
  mkdir -p "$dest/packages/$p/node_modules"
  cp "$src/package.json" "$dest/packages/$p/"
  cp -r "$src/dist" "$dest/packages/$p/"
  for link in "$src"/node_modules/* "$src"/node_modules/@*/*; do
    [ -L "$link" ] || continue
    rel="${link#"$src"/node_modules/}"
    mkdir -p "$(dirname "$dest/packages/$p/node_modules/$rel")"
    ln -s "$(readlink -f "$link")" "$dest/packages/$p/node_modules/$rel"
  done
done
rm "$dest/packages/mcp/node_modules/@governor/core"
ln -s "$dest/packages/core" "$dest/packages/mcp/node_modules/@governor/core"
for p in core mcp; do
  rm "$dest/packages/cli/node_modules/@governor/$p"
  ln -s "$dest/packages/$p" "$dest/packages/cli/node_modules/@governor/$p"
done
echo "snapshot-dist: $dest"
