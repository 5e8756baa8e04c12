#!/usr/bin/env bash
# `send` on each CPython side by side: S1 and S1-R unthrottled from Python (`python -m loghose_lab`),
# the interpreters alternated within each round, so that each version's figures are
# taken against the 3.11 run beside them (a ratio per round, then the median of the rounds).
#
#   bash lab/scripts/pythons.sh [ROUNDS] [SECONDS]     (default 5 rounds of 5 s)
#
# Each interpreter's virtualenv is the one scripts/runtimes/test.sh built (python3.11 the
# machine's .venv; python3.14, python3.15 Debian sid's, in the chroot), each with the module as
# `pip install .` builds it (the `source` profile).
set -euo pipefail
cd "$(dirname "$0")/../.."

rounds=${1:-5}
seconds=${2:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=(
  "3.11|.venv/bin/python"
  "3.14|bash scripts/runtimes/sid-chroot.sh run /var/cache/loghose-venvs/3.14/bin/python"
  "3.15|bash scripts/runtimes/sid-chroot.sh run /var/cache/loghose-venvs/3.15/bin/python"
)
for round in $(seq 1 "$rounds"); do
  for scenario in s1 s1r; do
    for run in "${runs[@]}"; do
      version=${run%%|*}
      # shellcheck disable=SC2086 # the command is words
      PYTHONPATH="$PWD/lab/python" ${run#*|} -m loghose_lab --scenario "$scenario" --rates 1000 --seconds 1 \
        --unthrottled-seconds "$seconds" --json --no-progress >"$out/$round-$scenario-$version.json" 2>/dev/null
      echo "round $round $scenario $version done" >&2
    done
  done
done

python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
from pathlib import Path

out, rounds = Path(sys.argv[1]), int(sys.argv[2])
def unthrottled(path):
    return next(r for r in json.loads(path.read_text()) if r.get("unthrottled"))
print("| scenario | CPython | µs per send | logs per CPU-second | vs 3.11, µs (median of rounds) | vs 3.11, per CPU-s |")
print("|---|---|---|---|---|---|")
for scenario in ("s1", "s1r"):
    for version in ("3.11", "3.14", "3.15"):
        rows = [unthrottled(out / f"{r}-{scenario}-{version}.json") for r in range(1, rounds + 1)]
        base = [unthrottled(out / f"{r}-{scenario}-3.11.json") for r in range(1, rounds + 1)]
        us = [r["us_per_send"] for r in rows]
        cpu = [r["per_cpu_second"] for r in rows]
        assert all(r["lost"] == 0 and r["duplicates"] == 0 for r in rows), "a run lost or duplicated logs"
        us_ratio = statistics.median(r["us_per_send"] / b["us_per_send"] for r, b in zip(rows, base))
        cpu_ratio = statistics.median(r["per_cpu_second"] / b["per_cpu_second"] for r, b in zip(rows, base))
        print(f"| {scenario.upper().replace('S1R', 'S1-R')} | {version} | {statistics.median(us):.3f} ({min(us):.3f}–{max(us):.3f}) "
              f"| {statistics.median(cpu) / 1e6:.2f} M ({min(cpu) / 1e6:.2f}–{max(cpu) / 1e6:.2f}) "
              f"| {us_ratio:.2f}× | {cpu_ratio:.2f}× |")
EOF
