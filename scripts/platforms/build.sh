#!/usr/bin/env bash
# Builds what each platform's users install, from this machine (Linux x86_64), for the targets
# named (default: all): the `loghose` command (`small` profile), the Python wheels (`dist`
# profile, stripped, one per CPython version) and the npm platform package (the addon, `dist`
# profile, stripped). Cross-compiled with zig (PyPI's ziglang, through maturin and
# cargo-zigbuild), so no cross C toolchain is needed: the glibc targets link against the
# manylinux2014 baseline (glibc 2.17), the musl ones statically against musl 1.2.
#
#   bash scripts/platforms/build.sh [armv7|aarch64|x64-musl|arm64-musl ...]
#
#   target       Rust target                      wheel tag              npm package
#   armv7        armv7-unknown-linux-gnueabihf    manylinux2014_armv7l   loghose-linux-arm-gnueabihf
#   aarch64      aarch64-unknown-linux-gnu        manylinux2014_aarch64  loghose-linux-arm64-gnu
#   x64-musl     x86_64-unknown-linux-musl        musllinux_1_2_x86_64   loghose-linux-x64-musl
#   arm64-musl   aarch64-unknown-linux-musl       musllinux_1_2_aarch64  loghose-linux-arm64-musl
#
# Writes dist/platforms/<target>/ (loghose, the wheels, the npm tarball) and a line per file
# with its size to dist/platforms/sizes.txt; fails if a file is over its budget (wheel 4 MB,
# npm package 5 MB, the armv7 command 4.5 MB). PYTHONS (default "3.10 3.11 3.12 3.13") chooses
# the wheels' CPython versions; PARTS (default "command wheel npm") what to build.
# armv6 (Pi Zero and Pi 1) is not among them: see docs/packaging.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
. scripts/platforms/targets.sh

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${ALL_TARGETS[@]}")
pythons=${PYTHONS:-3.10 3.11 3.12 3.13}
parts=${PARTS:-command wheel npm}

# The tools: rustup's standard library for each target, zig, maturin and cargo-zigbuild in
# the project's virtualenv.
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/platforms/requirements.txt
export PATH="$root/.venv/bin:$PATH"

# Stripped and without debug info, whatever builds them (maturin's --strip, cargo's profiles).
export CARGO_PROFILE_DIST_DEBUG=0 CARGO_PROFILE_DIST_STRIP=symbols CARGO_PROFILE_SMALL_STRIP=symbols

mkdir -p dist/platforms
sizes=dist/platforms/sizes.txt
: > "$sizes.new"

record() { # FILE BUDGET_KB
  local kb
  kb=$(( ($(stat -c %s "$1") + 1023) / 1024 ))
  printf '%s\t%s KB\n' "${1#dist/platforms/}" "$kb" | tee -a "$sizes.new"
  if [ "$kb" -gt "$2" ]; then
    echo "$1: $kb KB, over its budget of $2 KB" >&2
    exit 1
  fi
}

for name in "${targets[@]}"; do
  target_vars "$name"
  rustup target add "$RUST_TARGET" >/dev/null
  out=dist/platforms/$name
  mkdir -p "$out"
  echo "== $name ($RUST_TARGET) =="

  if [[ " $parts " == *" command "* ]]; then
    rm -f "$out/loghose"
    cargo zigbuild --quiet --profile small -p loghose --features cli --bin loghose --target "$ZIG_TARGET"
    cp "target/$RUST_TARGET/small/loghose" "$out/loghose"
    budget=8192
    [ "$name" = armv7 ] && budget=4608
    record "$out/loghose" "$budget"
  fi

  if [[ " $parts " == *" wheel "* ]]; then
    interpreters=()
    for v in $pythons; do interpreters+=("python$v"); done
    rm -f "$out"/*.whl
    maturin build --quiet --profile dist --strip --zig --target "$RUST_TARGET" \
      --compatibility "$WHEEL_COMPAT" --interpreter "${interpreters[@]}" --out "$out"
    for wheel in "$out"/*.whl; do
      case $wheel in
        *"$WHEEL_ARCH"*) ;;
        *) echo "$wheel: not a $WHEEL_ARCH wheel" >&2; exit 1 ;;
      esac
      record "$wheel" 4096
    done
  fi

  if [[ " $parts " == *" npm "* ]]; then
    # A cdylib against musl must not link the C runtime statically.
    flags=""
    [[ $RUST_TARGET == *musl* ]] && flags="-C target-feature=-crt-static"
    RUSTFLAGS="${RUSTFLAGS:-} $flags" cargo zigbuild --quiet --profile dist -p loghose-node --target "$ZIG_TARGET"
    package=$out/npm
    rm -rf "$package" "$out"/*.tgz
    mkdir -p "$package"
    cp "npm/$NPM_PLATFORM/package.json" LICENSE "$package/"
    cp "target/$RUST_TARGET/dist/libloghose_node.so" "$package/loghose.$NPM_PLATFORM.node"
    (cd "$package" && npm pack --silent --pack-destination ..) >/dev/null
    rm -rf "$package"
    record "$(ls "$out"/loghose-"$NPM_PLATFORM"-*.tgz)" 5120
  fi
done

# The sizes of every target built so far, this run's replacing the earlier ones.
touch "$sizes"
cat "$sizes" "$sizes.new" | awk -F'\t' '{ size[$1] = $2 } END { for (f in size) print f "\t" size[f] }' | sort > "$sizes.tmp"
mv "$sizes.tmp" "$sizes"
rm -f "$sizes.new"
echo "sizes: $sizes"
