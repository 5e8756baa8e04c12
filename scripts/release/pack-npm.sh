#!/usr/bin/env bash
# Packs the npm packages as they are published: the main package `loghose` (JavaScript, types,
# the generated loader; no native code, no install script) whose optionalDependencies name one
# package per platform in `napi.targets`, and this machine's platform package
# (`loghose-linux-x64-gnu`: the addon, debug info stripped). Writes both tarballs to dist/npm/.
# The other platforms' packages are built by the release workflow
# (.github/workflows/release.yml); they cannot be built here.
# Usage: bash scripts/release/pack-npm.sh   (builds the addon first if it is not built)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=dist/npm
rm -rf "$out" && mkdir -p "$out/main" "$out/platform"
[ -f node/lib/loghose.linux-x64-gnu.node ] && [ -f node/lib/native.js ] || npm run build

# This machine's platform package: its manifest from npm/, the addon without debug info.
cp npm/linux-x64-gnu/package.json "$out/platform/"
cp LICENSE "$out/platform/"
strip --strip-debug -o "$out/platform/loghose.linux-x64-gnu.node" node/lib/loghose.linux-x64-gnu.node
(cd "$out/platform" && npm pack --silent --pack-destination ..) >/dev/null

# The main package: the files package.json lists, and a manifest with the platform packages
# as optionalDependencies and nothing for development (no scripts, no devDependencies).
node - "$out/main" <<'JS'
const fs = require('node:fs')
const path = require('node:path')
const dest = process.argv[2]
const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8'))
const optional = {}
for (const dir of fs.readdirSync('npm').sort()) {
  const platform = JSON.parse(fs.readFileSync(path.join('npm', dir, 'package.json'), 'utf8'))
  optional[platform.name] = platform.version
}
for (const file of pkg.files) {
  fs.mkdirSync(path.dirname(path.join(dest, file)), { recursive: true })
  fs.copyFileSync(file, path.join(dest, file))
}
delete pkg.scripts
delete pkg.devDependencies
delete pkg.jest
pkg.optionalDependencies = optional
fs.writeFileSync(path.join(dest, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
JS
(cd "$out/main" && npm pack --silent --pack-destination ..) >/dev/null
ls -l "$out"/*.tgz
