#!/usr/bin/env bash
# The npm packages as a user gets them: the main tarball and this platform's, installed into an
# empty project with no Rust toolchain on PATH (nothing may build at install time), then a round
# trip against the emulator they carry, from the library and from the `loghose` command.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/release/pack-npm.sh
root=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# PATH without cargo, rustc or napi: only where node and npm live.
nodedir=$(dirname "$(command -v node)")
export PATH="$nodedir:/usr/bin:/bin"
! command -v cargo >/dev/null || { echo "cargo is still on PATH" >&2; exit 1; }
cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund "$root"/dist/npm/loghose-0.1.0.tgz "$root"/dist/npm/loghose-linux-x64-gnu-0.1.0.tgz
! ls node_modules/loghose/node/lib/*.node 2>/dev/null || { echo "the main package carries native code" >&2; exit 1; }
cat > roundtrip.js <<'JS'
const { Producer, Emulator } = require('loghose')
const emu = new Emulator()
const producer = new Producer({ ...emu.producerOptions('loghose', 'packaged'), lingerMs: 10 })
producer.send({ from: 'the installed package' })
producer.flush().then((left) => {
  const logs = emu.logs('loghose', 'packaged')
  if (left !== 0 || logs.length !== 1) throw new Error(`left ${left}, stored ${logs.length}`)
  producer.close()
  emu.close()
  console.log('round trip: 1 record delivered')
})
JS
node roundtrip.js
npx --no-install loghose --version
# Without the platform package: an error that names the package this platform needs.
# (a directory of its own: Node would find the first project's packages from a subdirectory)
alone=$(mktemp -d)
trap 'rm -rf "$work" "$alone"' EXIT
cd "$alone" && npm init -y >/dev/null
npm install --no-audit --no-fund --omit=optional "$root"/dist/npm/loghose-0.1.0.tgz >/dev/null
if node -e "require('loghose')" 2>err.txt; then echo "loaded without its addon" >&2; exit 1; fi
grep -q "the package loghose-linux-x64-gnu is not installed" err.txt ||
  { cat err.txt >&2; echo "the error does not name the package" >&2; exit 1; }
echo "without the platform package: $(grep -o 'no native addon for [a-z0-9-]*' err.txt)"
cd "$work"
echo "installed package sizes:"
du -sh node_modules/loghose node_modules/loghose-linux-x64-gnu
