#!/usr/bin/env bash
# Instructions per S1 add, counted with callgrind (repeatable where seconds are not):
# - rust: the engine's encode and add (lab/examples/encode_cost.rs), whole process, run with N
#   adds and with 0; the difference over N is the marginal cost of one add; and of one log
#   delivered (all the producer's threads).
# - python, node: the native call of each `send` (the binding and the engine's add, inclusive;
#   not the interpreter building or passing the record), 8 000 sends of lab/python/send_instructions.py
#   and lab/node/send-instructions.js (one batch), counted only inside the native entry (`--toggle-collect`).
# Needs valgrind, a release build of the example, the Python package installed in .venv and the
# Node addon built (bash scripts/test.sh leaves all three).
# Usage: bash lab/scripts/instructions.sh [rust|python|node]...
set -euo pipefail
cd "$(dirname "$0")/../.."
N=16000
count() {
  local out n
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" $TOGGLE "$@" >/dev/null 2>&1 ||
    { echo "failed: $*" >&2; rm -f "$out"; return 1; }
  n=$(awk '/^summary:/ {print $2}' "$out")
  rm -f "$out"
  # A toggle that names no function of the build counts nothing: say so rather than print 0.
  if [ -n "$TOGGLE" ] && [ "${n:-0}" -eq 0 ] && [ "${@: -1}" != 0 ]; then
    echo "nothing counted inside ${TOGGLE#--toggle-collect=} (renamed?): $*" >&2
    return 1
  fi
  echo "$n"
}
TOGGLE=
per_add() {
  local label=$1; shift
  local zero full
  zero=$(count "$@" 0) || exit 1
  full=$(count "$@" "$N") || exit 1
  printf '%-28s %8d instructions per add (%d adds)\n' "$label" $(( (full - zero) / N )) "$N"
}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(rust python node)
for t in "${targets[@]}"; do
  case $t in
    rust)
      cargo build --quiet --release -p loghose-lab --example encode_cost
      per_add "rust encode" target/release/examples/encode_cost encode
      # Adds stay within one batch (8 000 S1 logs), so nothing seals while they are counted.
      N=8000 per_add "rust add" target/release/examples/encode_cost add
      N=8000 per_add "rust add, spool none" target/release/examples/encode_cost add-spool
      N=8000 per_add "rust add, time_precision s" target/release/examples/encode_cost add-seconds
      # Delivered: every thread of the producer (add, lz4, MD5, signing, HTTP) against an
      # emulator in a child process, which callgrind does not follow.
      N=200000 per_add "rust delivered" target/release/examples/encode_cost deliver
      N=200000 per_add "rust delivered, precision s" target/release/examples/encode_cost deliver-seconds
      cargo build --quiet --release -p loghose-lab --example destination_cost
      N=8000 per_add "rust add, a topic of its own" target/release/examples/destination_cost topic
      N=8000 per_add "rust add, 100 topics in turn" target/release/examples/destination_cost topics ;;
    # 8 000 sends stay within one batch (at most 4 MiB), so nothing seals while they are counted.
    python) N=8000 TOGGLE="--toggle-collect=*::send_one_body" per_add "python send (native call)" .venv/bin/python lab/python/send_instructions.py ;;
    node) N=8000 TOGGLE="--toggle-collect=*::send_fields_callback" per_add "node send (native call)" node lab/node/send-instructions.js ;;
    *) echo "unknown target $t (rust, python, node)" >&2; exit 2 ;;
  esac
done
