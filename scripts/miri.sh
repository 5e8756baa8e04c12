#!/usr/bin/env bash
# The unit tests of the engine's unsafe fast paths under Miri, which finds undefined behaviour
# the native tests cannot see (an unaligned pointer handed to an intrinsic that dereferences it
# works on x86-64 hardware, yet the compiler may assume alignment): the record encoder's key and
# value copies, the batch buffers and their mappings, the shard routing, the budget, the
# accumulator. (The threads' signal masks are foreign calls, which Miri cannot run.)
# Slow (the interpreter runs each test thousands of times slower; about 15 minutes on two
# cores), so not part of scripts/test.sh: run it after touching `unsafe` in those modules.
# Needs a nightly toolchain with Miri (installed with its components when missing; last run on
# nightly 2026-05-19). LOGHOSE_MIRI_TOOLCHAIN names another.
# Usage: bash scripts/miri.sh [test name filters...]
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain=${LOGHOSE_MIRI_TOOLCHAIN:-nightly}
if ! cargo +"$toolchain" miri --version >/dev/null 2>&1; then
  rustup toolchain install "$toolchain" --profile minimal --component miri,rust-src
fi
filters=("$@")
[ ${#filters[@]} -gt 0 ] || filters=(producer::encode producer::buffer producer::routing
  producer::budget producer::accumulator producer::text)
# Isolation off: the tests read clocks and make temporary files.
MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/miri}" \
  cargo +"$toolchain" miri test -p loghose --no-default-features --lib -- "${filters[@]}"
