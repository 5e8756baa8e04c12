#!/usr/bin/env bash
# The engine on Windows, run here under Wine: its unit tests (the spool's files, recovery,
# the directory lock, power cuts on a model disk) and the producer's integration tests, built
# for x86_64-pc-windows-gnu with mingw-w64 and run by Debian's wine64 in a prefix of their own.
# Not yet in CI: on a loaded machine Wine 8 fails some runs (allocations refused in the spool's
# model tests; the spool's process-kill tests, `--test spool`, under TerminateProcess). Quiet,
# the default set passes (182 unit tests, 34 producer tests).
# Installs what it needs (the Rust target, mingw-w64, wine64); prints "skipped: ..." and exits
# 0 when one cannot be installed (a machine without Debian's archive).
#
#   bash scripts/platforms/windows.sh            build and run the tests
#   WINE_TESTS="--lib" bash scripts/platforms/windows.sh   a subset (cargo test's target flags)
set -euo pipefail
cd "$(dirname "$0")/../.."
target=x86_64-pc-windows-gnu
need_apt() {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
if ! rustup target add "$target" >/dev/null 2>&1; then
  echo "skipped: the Windows standard library could not be installed here"
  exit 0
fi
command -v x86_64-w64-mingw32-gcc >/dev/null || need_apt gcc-mingw-w64-x86-64 ||
  { echo "skipped: the mingw-w64 C compiler could not be installed here"; exit 0; }
wine=/usr/lib/wine/wine64
[ -x "$wine" ] || need_apt wine64 || { echo "skipped: wine64 could not be installed here"; exit 0; }

# A prefix of the tests' own, made once per checkout, with the DLL Wine 8 lacks.
export WINEPREFIX="$PWD/target/wine-prefix" WINEDEBUG=-all
if [ ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]; then
  "$wine" cmd /c exit >/dev/null 2>&1 || true
  x86_64-w64-mingw32-gcc -O2 -shared -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
    scripts/platforms/windows/bcryptprimitives.c -ladvapi32
fi
echo "wine: $("$wine" --version)"

read -r -a tests <<<"${WINE_TESTS:---lib --test producer}"
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine"
# Two test threads: Wine's own threads share the machine's two cores.
cargo test --quiet -p loghose --target "$target" "${tests[@]}" -- --test-threads 2
# Wine's server outlives the tests unless told to go.
/usr/lib/wine/wineserver -k 2>/dev/null || true
