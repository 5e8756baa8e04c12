#!/usr/bin/env bash
# macOS, built here (not run: no macOS runs on Linux). Linked with zig (PyPI's ziglang, through
# maturin and cargo-zigbuild), which carries the system's stubs, so no Apple SDK is needed:
# - aarch64-apple-darwin (Apple silicon), linked: the CPython 3.13 wheel's module, the Node
#   addon and the `loghose` command, each checked to be a Mach-O arm64 file; the wheel also
#   for its tag (macosx_11_0_arm64);
# - x86_64-apple-darwin (Intel Macs), compiled: `cargo check` of the engine, the Python module
#   and the Node addon.
# What a release builds for users (with Apple's toolchain on macOS runners) is in
# docs/packaging.md; this is the check that the code compiles and links for both.
#
#   bash scripts/platforms/macos.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/target/macos
step() { printf '\n== macos: %s ==\n' "$*"; }
for t in aarch64-apple-darwin x86_64-apple-darwin; do
  rustup target add "$t" >/dev/null 2>&1 || { echo "skipped: the $t standard library could not be installed here"; exit 0; }
done
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/platforms/requirements.txt
export PATH="$root/.venv/bin:$PATH"
# The oldest macOS the wheels' tag and the binaries' load commands name.
export MACOSX_DEPLOYMENT_TARGET=11.0

macho() { # FILE CPU: fails unless FILE is a 64-bit Mach-O file for CPU (arm64 | x86_64)
  python3 - "$1" "$2" <<'EOF'
import struct, sys
path, cpu = sys.argv[1:]
magic, cputype = struct.unpack("<II", open(path, "rb").read(8))
want = {"arm64": 0x0100000C, "x86_64": 0x01000007}[cpu]
if magic != 0xFEEDFACF or cputype != want:
    sys.exit(f"{path}: not a 64-bit Mach-O {cpu} file (magic {magic:#x}, cpu {cputype:#x})")
print(f"{path}: Mach-O {cpu}")
EOF
}

# Runs a build, leaving out rustc's note that Apple's SDK was not found (zig's stubs stand in
# for it); a failing build prints everything.
built() { # COMMAND...
  local log
  log=$(mktemp)
  if "$@" >"$log" 2>&1; then
    grep -v -e xcrun -e 'the SDK is needed' -e DEVELOPER_DIR -e '^ *|$' -e '^ *= ' "$log" || true
    rm -f "$log"
  else
    cat "$log"
    rm -f "$log"
    return 1
  fi
}

step "aarch64-apple-darwin: the wheel, the Node addon, the command (linked with zig)"
rm -rf "$out" && mkdir -p "$out"
built maturin build --quiet --profile dev --zig --target aarch64-apple-darwin --interpreter python3.13 --out "$out"
wheel=$(ls "$out"/loghose-*-cp313-cp313-macosx_11_0_arm64.whl)
python3 -m zipfile -e "$wheel" "$out/wheel"
macho "$out"/wheel/loghose/_native.cpython-313-darwin.so arm64
built cargo zigbuild --quiet -p loghose-node --target aarch64-apple-darwin
macho target/aarch64-apple-darwin/debug/libloghose_node.dylib arm64
built cargo zigbuild --quiet -p loghose --features cli --bin loghose --target aarch64-apple-darwin
macho target/aarch64-apple-darwin/debug/loghose arm64

step "x86_64-apple-darwin: the engine, the Python module, the Node addon (compiled)"
# cargo-zigbuild's check: the build scripts' C (ring's assembly) needs zig's compiler too.
PYO3_CROSS_PYTHON_VERSION=3.13 built cargo-zigbuild check --quiet --target x86_64-apple-darwin \
  -p loghose --features cli -p loghose-python -p loghose-node
