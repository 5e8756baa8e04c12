#!/usr/bin/env bash
# Brings a JavaScript runtime from the npm registry (each ships its binary in a package) and
# prints the path of its executable. Cached outside the checkout ($LOGHOSE_RUNTIMES, default
# /var/cache/loghose-runtimes/js): a second call is instant.
#
#   bash scripts/runtimes/js-runtime.sh node22 | node24 | node26 | bun | deno
set -euo pipefail

name=${1:?usage: js-runtime.sh node22|node24|node26|bun|deno}
case $(uname -m) in
  x86_64) node_arch=x64 bun_arch=x64 deno_arch=x64 ;;
  aarch64) node_arch=arm64 bun_arch=aarch64 deno_arch=arm64 ;;
  *) echo "no $name package for $(uname -m)" >&2; exit 1 ;;
esac
case $name in
  node[0-9]*) package=node-linux-$node_arch version=${name#node} binary=bin/node ;;
  bun) package=@oven/bun-linux-$bun_arch version=latest binary=bin/bun ;;
  deno) package=@deno/linux-$deno_arch-glibc version=latest binary=deno ;;
  *) echo "unknown runtime $name" >&2; exit 2 ;;
esac
dir=${LOGHOSE_RUNTIMES:-/var/cache/loghose-runtimes}/js/$name
path=$dir/node_modules/$package/$binary
if [ ! -x "$path" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  # --ignore-scripts: the binary is in the package; nothing needs to run at install.
  npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error \
    "$package@$version" >&2
  chmod +x "$path"
fi
echo "$path"
