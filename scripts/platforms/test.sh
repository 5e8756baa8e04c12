#!/usr/bin/env bash
# Runs what scripts/platforms/build.sh built, on the platforms it was built for, here: ARM
# under qemu-user with Debian 13's (what Raspberry Pi OS is based on) ARM Python 3.13 and
# Node.js unpacked into a directory (nothing installed; no toolchain reaches them), musl
# natively or under qemu.
#
#   bash scripts/platforms/test.sh [armv7|aarch64|x64-musl|arm64-musl ...]   (default: armv7 aarch64)
#
# For each target, what its users run:
# - the engine's tests (unit, producer, spool: the spool's kill tests start their children
#   through the same runner) cross-compiled for it and run under qemu (ARM) or natively (musl);
# - ARM: the CPython 3.13 wheel unpacked beside pytest, and the value table shared with the
#   other tests, every kind of dict table the in-place walk reads, send_many and a report
#   awaited from asyncio (tests-py/test_values.py, test_asyncio.py), a LogRecord written natively
#   (test_logging_handler.py's native-path tests), and the signal watchdog of a
#   stuck main thread (test_signals.py, a fresh interpreter under qemu), in the ARM interpreter;
# - ARM: the npm packages (loghose and its platform package) unpacked into node_modules, and
#   scripts/platforms/check-node.js in the ARM Node.js: the value table, sendMany, a report
#   awaited from a Promise, the pino transport;
# - the `loghose` command: `pipe --preset pi` with a spool, SIGKILLed, then run again: no line
#   lost; SIGINT delivers what it holds and exits 0 (scripts/platforms/check-command.py).
# PARTS (default "rust python node command") chooses what runs. Builds what it needs that
# dist/platforms/<target>/ lacks (PYTHONS=3.13 for the wheel).
set -euo pipefail

# Whether a built artifact exists and is newer than every source it is built from (a package
# built before the last change would test old code).
fresh() {
  local artifact=$1
  [ -e "$artifact" ] || return 1
  [ -z "$(find core/src python/src python/loghose node/src node -maxdepth 3 -newer "$artifact" \
    \( -name '*.rs' -o -name '*.py' -o -name '*.js' -o -name 'Cargo.toml' \) -print -quit 2>/dev/null)" ]
}
cd "$(dirname "$0")/../.."
root=$PWD
. scripts/platforms/targets.sh

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(armv7 aarch64)
parts=${PARTS:-rust python node command}

need_debian() { # PACKAGE...
  local missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }
}

need_debian qemu-user
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/platforms/requirements.txt
# The host's own loghose, for the emulator the command check talks to.
.venv/bin/python -c 'import loghose' 2>/dev/null || .venv/bin/python -m pip install --quiet .

for name in "${targets[@]}"; do
  target_vars "$name"
  rustup target add "$RUST_TARGET" >/dev/null
  out=dist/platforms/$name
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  step() { printf '\n== %s: %s ==\n' "$name" "$*"; }
  triple=$(echo "$RUST_TARGET" | tr 'a-z-' 'A-Z_')
  sysroot=""
  if [ -n "$DEB_ARCH" ]; then
    need_debian "gcc-$GNU_PREFIX"
    sysroot=$root/target/platforms/sysroot-trixie-$DEB_ARCH
    python3 scripts/platforms/sysroot.py "$DEB_ARCH" "$sysroot"
  fi
  # How a binary of the target runs here.
  if [ -n "$QEMU" ]; then
    if [ -n "$GNU_PREFIX" ]; then runner="$QEMU -L /usr/$GNU_PREFIX"; else runner="$QEMU"; fi
  else
    runner=""
  fi

  if [[ " $parts " == *" rust "* ]]; then
    step "the engine's tests (lib, producer, spool)"
    # For cargo only (the builds of scripts/platforms/build.sh link with zig).
    cross=()
    [ -z "$runner" ] || cross+=("CARGO_TARGET_${triple}_RUNNER=$runner")
    if [ -n "$GNU_PREFIX" ]; then
      # Debian's cross gcc links against its ARM glibc, which qemu finds with -L.
      cross+=("CARGO_TARGET_${triple}_LINKER=$GNU_PREFIX-gcc" "CC_${RUST_TARGET//-/_}=$GNU_PREFIX-gcc")
      env ${cross[@]+"${cross[@]}"} cargo test -p loghose --target "$RUST_TARGET" --lib --test producer --test spool
    else
      # musl: zig links, with its own musl (Debian's musl-gcc mixed with Rust's musl makes
      # binaries that crash at start).
      env ${cross[@]+"${cross[@]}"} PATH="$root/.venv/bin:$PATH" cargo-zigbuild test -p loghose \
        --target "$RUST_TARGET" --lib --test producer --test spool
    fi
  fi

  if [[ " $parts " == *" python "* && -n "$sysroot" ]]; then
    step "the CPython 3.13 wheel, in Debian 13's $DEB_ARCH Python 3.13 under $QEMU"
    fresh "$out"/*cp313*.whl || PYTHONS=3.13 PARTS=wheel bash scripts/platforms/build.sh "$name"
    wheel=$(ls "$out"/*cp313*.whl)
    python3 -m zipfile -e "$wheel" "$work/site"
    # pytest and what it needs are pure Python, as are structlog and loguru: this machine's pip
    # installs them for the ARM one.
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --target "$work/site" \
      "$(grep '^pytest>' tests-py/requirements.txt)" "$(grep '^pytest-timeout' tests-py/requirements.txt)" \
      "$(grep '^structlog' tests-py/requirements.txt)" "$(grep '^loguru' tests-py/requirements.txt)"
    # The watchdog of a main thread that cannot run Python's signal handler, in a fresh ARM
    # interpreter the test starts through qemu (LOGHOSE_TEST_PYTHON: no binfmt here).
    PYTHONPATH="$work/site" QEMU_LD_PREFIX="$sysroot" LOGHOSE_TEST_PYTHON="$QEMU $sysroot/usr/bin/python3.13" \
      "$QEMU" "$sysroot/usr/bin/python3.13" -m pytest -q -p no:cacheprovider tests-py/test_values.py \
      tests-py/test_asyncio.py tests-py/test_producer.py \
      "tests-py/test_signals.py::test_a_main_thread_that_cannot_run_the_handler_still_delivers_and_ends_by_the_signal" \
      "tests-py/test_signals.py::test_a_second_signal_ends_the_watchdogs_delivery_at_once" \
      -k "not test_logging_handler or native or formatted_first or without_thread or whichever_path" \
      tests-py/test_logging_handler.py \
      tests-py/test_structlog_loguru.py::test_structlog_native_path_writes_exactly_what_the_python_path_builds \
      tests-py/test_structlog_loguru.py::test_loguru_native_path_writes_exactly_what_the_python_path_builds
  fi

  if [[ " $parts " == *" node "* && -n "$sysroot" ]]; then
    step "the npm packages, in Debian 13's $DEB_ARCH Node.js under $QEMU"
    fresh "$out"/loghose-"$NPM_PLATFORM"-*.tgz || PARTS=npm bash scripts/platforms/build.sh "$name"
    fresh dist/npm/loghose-[0-9]*.tgz || bash scripts/release/pack-npm.sh >/dev/null
    mkdir -p "$work/node_modules/loghose" "$work/node_modules/loghose-$NPM_PLATFORM"
    tar -xzf dist/npm/loghose-[0-9]*.tgz -C "$work/node_modules/loghose" --strip-components 1
    tar -xzf "$(ls "$out"/loghose-"$NPM_PLATFORM"-*.tgz)" -C "$work/node_modules/loghose-$NPM_PLATFORM" --strip-components 1
    cp scripts/platforms/check-node.js "$work/"
    # pino and the transport's dependencies are JavaScript: the clone's node_modules serve.
    (cd "$work" && NODE_PATH="$root/node_modules" QEMU_LD_PREFIX="$sysroot" "$QEMU" "$sysroot/usr/bin/node" \
      check-node.js "$root/tests-shared/values.json")
  fi

  if [[ " $parts " == *" command "* ]]; then
    step "the loghose command: pipe --preset pi with a spool, across a SIGKILL"
    [ -x "$out/loghose" ] || PARTS=command bash scripts/platforms/build.sh "$name"
    # shellcheck disable=SC2086 # the runner is a command and its arguments
    .venv/bin/python scripts/platforms/check-command.py "$work/command" $runner "$root/$out/loghose"
  fi
  rm -rf "$work"
  trap - EXIT
done
