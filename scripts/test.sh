#!/usr/bin/env bash
# Every test, from a fresh clone: formatting and lints, the Rust unit and integration tests
# (engine and emulator), S1 at 200 000 logs/s, the Node package (addon build, types, jest),
# and the Python tests (the package and official-SDK interop) in a project-local virtualenv. Installs what it
# needs; nothing by hand.
#
#   bash scripts/test.sh              every step, in order (what CI runs)
#   bash scripts/test.sh --list       the steps' names and what each checks
#   bash scripts/test.sh rust pytest  only those steps (builds are kept between them)
set -euo pipefail
cd "$(dirname "$0")/.."

step() {
  printf '\n== %s ==\n' "$*"
  df -h . | sed -n '2s/^/disk: /p'
}

# Disk: builds no later step uses are deleted as the run goes (a CI machine once ran out of
# space at the last step, with 10 GB of earlier builds behind it). LOGHOSE_KEEP_BUILDS=1
# keeps them (a developer's incremental builds).
free_disk() {
  [ "${LOGHOSE_KEEP_BUILDS:-0}" = 1 ] && return 0
  local before
  before=$(df -BM --output=avail . | tail -1)
  for path in "$@"; do
    case $path in
      test-binaries)
        # Test and example executables (not the libraries, build scripts or proc macros
        # later builds reuse).
        find target/debug/deps -maxdepth 1 -type f -executable ! -name '*.*' -delete 2>/dev/null || true
        rm -rf target/debug/examples
        ;;
      *) rm -rf --one-file-system "$path" ;;
    esac
  done
  echo "disk: freed $(( $(df -BM --output=avail . | tail -1 | tr -dc 0-9) - $(echo "$before" | tr -dc 0-9) )) MB ($*)"
}

# Disk: without incremental caches, with line tables only in test builds and no debug info in
# release builds, each build is about half its default size (a CI machine once ran out of
# space building the Node addon); with free_disk the checkout peaks near 4 GB (8.5 GB before).
# The `disk:` line of each step says what is free. Each setting can be overridden from the
# environment.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"
export CARGO_PROFILE_RELEASE_DEBUG="${CARGO_PROFILE_RELEASE_DEBUG:-0}"
# What every run needs first: the toolchains and tools the steps call.
prepare() {
  df -h . | sed -n '2s/^/disk: /p'

  if ! command -v cargo >/dev/null; then
    echo "cargo is required (the machine's Rust toolchain)" >&2
    exit 1
  fi
  if ! command -v python3 >/dev/null; then
    step "installing python3"
    apt-get update -qq && apt-get install -y -qq python3 python3-venv python3-pip
  fi

  if ! command -v strace >/dev/null; then
    # The command's exit statuses on a disk whose syncs fail (strace injects the errors).
    step "installing strace"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null
  fi
}

step_fmt() {
  cargo fmt --all -- --check
}

step_clippy() {
  cargo clippy --workspace --all-targets -- -D warnings
}

step_producer_alone() {
  cargo clippy --quiet -p loghose --no-default-features -- -D warnings
  # And what an application gets by default (the producer, log, tracing): no emulator, no
  # command, no Prometheus, no lab in its build.
  cargo tree -p loghose -e normal --prefix none --format '{p}' | grep -E '^(clap|toml|prometheus-client|roaring|rustls-pemfile|loghose-lab) ' \
    && { echo "the engine's default build pulls in a tool's dependency (above)"; return 1; }
  cargo clippy --quiet -p loghose -- -D warnings
}

step_rustdoc() {
  RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p loghose --features emulator,prometheus
  RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps --document-private-items -p loghose-python -p loghose-node
}

step_msrv() {
  msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
  if rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1; then
    cargo +"$msrv" check --quiet --workspace --all-targets --target-dir target/msrv
    rm -rf target/msrv
  else
    echo "skipped: Rust $msrv could not be installed here"
  fi
}

step_rust() {
  LOGHOSE_FUZZ_SECS=20 cargo test -p loghose
  cargo test -p loghose-node
  # The user programs of examples/rust, as a user runs them (against the embedded emulator).
  cargo run --quiet -p loghose --example batch_job
  cargo run --quiet -p loghose --example throughput -- 0.5
}

step_windows() {
  # Lints of the Windows-only code (cfg fences), then the engine's tests and the Python tests
  # under Wine, and the Node addon in Windows Node under Wine 10 (scripts/platforms/windows.sh).
  if rustup target add x86_64-pc-windows-gnu >/dev/null 2>&1 &&
    { command -v x86_64-w64-mingw32-gcc >/dev/null ||
      { apt-get update -qq && apt-get install -y -qq gcc-mingw-w64-x86-64 >/dev/null; }; }; then
    cargo clippy --quiet -p loghose --lib --target x86_64-pc-windows-gnu -- -D warnings
  else
    echo "skipped: the Windows standard library or the mingw-w64 C compiler could not be installed here"
  fi
  bash scripts/platforms/windows.sh
  free_disk target/x86_64-pc-windows-gnu target/windows
}

step_macos() {
  bash scripts/platforms/macos.sh
  free_disk target/aarch64-apple-darwin target/x86_64-apple-darwin target/macos
}

step_spool_release() {
  cargo test --quiet --release -p loghose --test spool -- sigkill
}

step_s1() {
  cargo run --quiet --release -p loghose-lab --example s1 -- --rates 200000 --seconds 10 --unthrottled-seconds 3
  free_disk target/release target/x86_64-pc-windows-gnu test-binaries
}

step_node() {
  if ! command -v npm >/dev/null; then
    apt-get update -qq && apt-get install -y -qq nodejs npm
  fi
  npm ci --no-audit --no-fund
  # The emulator's console is tested in a real browser: Debian's headless Chromium.
  if ! command -v chromium >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  npm run build
  npm run typecheck
  # The API reference of every export (typedoc: each documented, a warning fails it).
  npm run docs
  npm test
}

step_npm_package() {
  bash scripts/release/test-npm-package.sh
}

step_python_env() {
  if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
  fi
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests-py/requirements.txt
  # The official OTLP exporters, apart: their protobuf is not the one the Log Service SDK takes
  # (pip's note about that conflict, which --target keeps apart, is left out).
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade \
    --target target/otlp-exporters -r tests-py/requirements-otlp.txt 2>&1 | grep -v -e "dependency resolver" -e "requires protobuf" || true
  [ -d target/otlp-exporters/opentelemetry/exporter/otlp/proto/http ]
  .venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' >target/otlp-exporters/.python-version
}

step_ruff() {
  .venv/bin/ruff check tests-py python lab/python lab/scripts/rows.py examples/python scripts
}

step_wheel() {
  bash scripts/release/wheel.sh
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps dist/wheels/loghose-*.whl
  free_disk target/x86_64-unknown-linux-gnu
}

step_pytest() {
  # Run alone, it tests the package installed from this checkout's source (the whole run tests
  # the wheel as published, installed by the step before).
  if ! { [ -x .venv/bin/python ] && .venv/bin/python -c "import loghose" 2>/dev/null; }; then
    step_python_env
    .venv/bin/python -m pip install --quiet --disable-pip-version-check .
  fi
  cargo build --quiet -p loghose --features cli --bin loghose-emulator
  LOGHOSE_EMULATOR_BIN="$PWD/target/debug/loghose-emulator" .venv/bin/python -m pytest tests-py -q
}

step_lab() {
  # The lab (lab/): its Rust harness's tests, then short runs of the scenarios from Python and
  # Node, each checking what it measured (every log counted once at the emulator).
  cargo test --quiet -p loghose-lab --lib
  PYTHONPATH=lab/python LOGHOSE_EMULATOR_BIN="$PWD/target/debug/loghose-emulator" \
    .venv/bin/python -m pytest lab/python/tests -q
  npx jest --runInBand --testMatch '<rootDir>/lab/node/tests/**/*.test.js'
}

step_runtimes() {
  bash scripts/runtimes/test.sh
}

step_arm() {
  free_disk target/debug target/free-threaded
  PYTHONS=3.13 bash scripts/platforms/test.sh armv7
}

# The steps, in the order a whole run takes them: NAME|what it checks.
STEPS=(
  "fmt|cargo fmt --check"
  "clippy|cargo clippy -D warnings (workspace)"
  "producer-alone|the producer alone (no emulator or command: cargo build --no-default-features)"
  "rustdoc|API reference: rustdoc of the engine and both modules, free of warnings (missing_docs is denied)"
  "msrv|the declared rust-version builds the workspace"
  "rust|cargo test (core: wire layer, emulator, integration, 20 s per fuzz target; the Node addon's pure functions)"
  "spool-release|the spool's kill tests in a release build (faster producer, more in flight at each kill: the duplicate bound holds there too)"
  "s1|S1 at 200 000 logs/s for 10 s: every log read back exactly once (release build)"
  "node|Node: npm ci, the addon built from source (npm run build), tsc --noEmit, jest"
  "npm-package|npm packages as published (main + linux-x64-gnu), installed with no Rust toolchain on PATH"
  "python-env|Python test environment (.venv)"
  "ruff|ruff"
  "wheel|the wheel as published (manylinux2014, dist profile, stripped), installed with no Rust toolchain on PATH"
  "pytest|pytest (the Python package; the official aliyun-log-python-sdk against the emulator)"
  "windows|Windows under Wine: clippy on x86_64-pc-windows-gnu, the engine's tests, the CPython 3.13 wheel in the embeddable CPython (pytest: send, asyncio, logging, the spool across TerminateProcess), the Node addon in Windows Node 24 and 26 (Wine 10: check.cjs, Ctrl-C, jest), loghose.exe pipe across a kill and Ctrl-C"
  "macos|macOS built with zig: the wheel, the Node addon and the command linked for aarch64-apple-darwin, all three compiled for x86_64-apple-darwin"
  "lab|the benchmark lab: its harness's tests, the scenarios from Python and Node in short runs"
  "runtimes|the newest runtimes: CPython 3.15 (Debian's, in a chroot: the whole pytest suite), free-threaded 3.14t (compiled), Node 26 (typecheck, jest), Bun and Deno (tests-js/runtimes/check.cjs)"
  "arm|32-bit ARM (armv7, a Raspberry Pi's): the engine's tests, the wheel in ARM Python, the npm packages in ARM Node.js, the command across a SIGKILL, under qemu-user"
)

usage() {
  echo "usage: bash scripts/test.sh [--list | STEP...]   (no STEP: every step, as CI runs them)"
  echo "       (python: the Python steps, python-env, ruff, pytest)"
}

if [ "${1:-}" = "--list" ]; then
  for entry in "${STEPS[@]}"; do printf '%-15s %s\n' "${entry%%|*}" "${entry#*|}"; done
  exit 0
fi
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  usage
  exit 0
fi
wanted=()
for name in "$@"; do
  # `python` names the Python steps together (the package from source, its lints, pytest).
  if [ "$name" = python ]; then wanted+=(python-env ruff pytest); else wanted+=("$name"); fi
done
if [ ${#wanted[@]} -gt 0 ]; then
  # A developer running some steps keeps every build (no step deletes what the next needs).
  export LOGHOSE_KEEP_BUILDS=1
  for name in "${wanted[@]}"; do
    found=0
    for entry in "${STEPS[@]}"; do [ "${entry%%|*}" = "$name" ] && found=1; done
    [ $found = 1 ] || { echo "no step named '$name' (bash scripts/test.sh --list)" >&2; exit 2; }
  done
fi
prepare
timings=()
for entry in "${STEPS[@]}"; do
  name=${entry%%|*}
  if [ ${#wanted[@]} -gt 0 ]; then
    selected=0
    for w in "${wanted[@]}"; do [ "$w" = "$name" ] && selected=1; done
    [ $selected = 1 ] || continue
  fi
  step "$name: ${entry#*|}"
  started=$SECONDS
  "step_${name//-/_}"
  timings+=("$(printf '%-15s %5d s' "$name" $((SECONDS - started)))")
done
# Where the run's time went, step by step (CI's budget: 60 minutes warm, 80 fresh).
printf '\n== time by step ==\n'
printf '%s\n' "${timings[@]}"
printf '%-15s %5d s\n' total "$SECONDS"
