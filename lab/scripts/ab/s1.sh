#!/usr/bin/env bash
# The hot path's guard: the S1 example (lab/examples/s1.rs) built at BASE and from the working
# tree, run unthrottled in alternated rounds in one period (A B, then B A, ...), each against
# its own emulator child. Prints, for each, the median and range over the rounds of logs per
# CPU-second, CPU %, delivered logs per second, context switches and minor page faults per
# 1 000 logs, and the ratio of the working tree to BASE per round (the figure to quote: one
# machine, one period, so drift cancels). Every run checks its logs arrived exactly once.
#
#   bash lab/scripts/ab/s1.sh BASE [ROUNDS] [SECONDS]     (default 5 rounds of 5 s)
#
# BASE is any commit (main, HEAD~1, a tag). Its binary is built once into target/ab-cache/SHA
# (a worktree, built with its own Cargo.lock into a shared target/ab-build, then removed) and
# reused; the working tree's is built fresh, or AGAINST=COMMIT compares two commits. Each run
# first adds RATE logs/s for RATE_SECONDS (default 200 000 for 1 s: the µs per add and CPU %
# columns), then runs unthrottled for SECONDS. WORKLOAD=s1r runs S1-R; S1_ARGS adds flags to
# both (e.g. "--spool-dir /tmp/ab-spool --spool-sync batch"). OUT=DIR keeps every run's output
# (default: a temporary directory, printed). Run it before a change to the hot path (add, seal,
# compress, send, deliver, the runtime's tasks) lands, and put its table in the change's notes:
# instruction counts (lab/scripts/instructions.sh) do not see wake-ups, contention or cache traffic.
set -euo pipefail
BASE=${1:?usage: bash lab/scripts/ab/s1.sh BASE [ROUNDS] [SECONDS]}
ROUNDS=${2:-5}
S=${3:-5}
WORKLOAD=${WORKLOAD:-s1}
read -r -a EXTRA <<<"${S1_ARGS:-}"
cd "$(git rev-parse --show-toplevel)"
top=$PWD
sha=$(git rev-parse --verify "$BASE^{commit}")
CACHE=${AB_CACHE:-$top/target/ab-cache}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
echo "out: $OUT"

RATE=${RATE:-200000}
RATE_SECONDS=${RATE_SECONDS:-1}

built_at() { # COMMIT: the S1 example built at COMMIT, once, into the cache; its path
  local at=$1 bin=$CACHE/$1/s1 tree
  if [ ! -x "$bin" ]; then
    echo "building the S1 example at ${at:0:12} (once; cached in $CACHE)" >&2
    tree=$(mktemp -d)
    git worktree add --detach -q "$tree" "$at"
    # The S1 example is the lab's since the lab has a crate of its own; the engine's before.
    local package=loghose
    [ -f "$tree/lab/Cargo.toml" ] && package=loghose-lab
    (cd "$tree" && cargo build --release --quiet -p "$package" --example s1 --target-dir "$top/target/ab-build")
    mkdir -p "$CACHE/$at"
    cp "$top/target/ab-build/release/examples/s1" "$bin"
    git worktree remove --force "$tree"
  fi
  echo "$bin"
}
base_bin=$(built_at "$sha")
head_bin=$OUT/s1-working-tree
if [ -n "${AGAINST:-}" ]; then
  against=$(git rev-parse --verify "$AGAINST^{commit}")
  cp "$(built_at "$against")" "$head_bin"
  tree_label="${against:0:12}"
else
  echo "building the S1 example of the working tree"
  cargo build --release --quiet -p loghose-lab --example s1
  cp target/release/examples/s1 "$head_bin"
  tree_label="working tree"
fi

run() { # NAME BINARY ROUND
  "$2" --workload "$WORKLOAD" --rates "$RATE" --seconds "$RATE_SECONDS" --unthrottled-seconds "$S" "${EXTRA[@]}" \
    >"$OUT/$1_$3.txt" 2>"$OUT/$1_$3.err" || echo "$1 round $3 FAILED (see $OUT/$1_$3.err)"
}
bash "$top/lab/scripts/machine.sh"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    run base "$base_bin" "$r"; run tree "$head_bin" "$r"
  else
    run tree "$head_bin" "$r"; run base "$base_bin" "$r"
  fi
  echo "round $r of $ROUNDS done"
done

bash "$top/lab/scripts/machine.sh"
PYTHONPATH="$top/lab/scripts" python3 - "$OUT" "$ROUNDS" "${sha:0:12}" "$WORKLOAD" "$tree_label" "$RATE" <<'PY'
import statistics, sys
from rows import rust_rows

out, rounds, base, workload, tree, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
rated = [("us_per_send", "µs per add", 1, "{:.3f}"), ("cpu_pct", "CPU %", 1, "{:.1f}"), ("rss_mb", "RSS MB", 1, "{:.1f}")]
unthrottled = [("per_cpu_second", "logs per CPU-s", 1e-6, "{:.2f} M"), ("cpu_pct", "CPU %", 1, "{:.0f}"),
               ("delivered_per_s", "delivered/s", 1e-6, "{:.2f} M"), ("vol_cs_per_1k", "vol. switches/1k", 1, "{:.1f}"),
               ("invol_cs_per_1k", "invol. switches/1k", 1, "{:.1f}"), ("minflt_per_1k", "minor faults/1k", 1, "{:.2f}")]


def rows_of(name, r):
    """(the rate row, the unthrottled row) of one run."""
    found = rust_rows(f"{out}/{name}_{r}.txt")
    return (next((x for x in found if x.get("rate")), None), next((x for x in found if not x.get("rate")), None))


def number(row, key):
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return None


runs = {name: [rows_of(name, r) for r in range(1, rounds + 1)] for name in ("base", "tree")}
bad = [f"{n} round {i + 1}" for n, rs in runs.items() for i, pair in enumerate(rs) for row in pair
       if row is None or any((number(row, k) or 0) != 0 for k in ("lost", "duplicates", "pending"))]


def table(title, which, columns, ratio_key, better):
    print(f"\n{title}\n")
    print("| build | " + " | ".join(t for _, t, _, _ in columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for name, label in (("base", f"base {base}"), ("tree", tree)):
        cells = []
        for key, _, scale, fmt in columns:
            values = [v * scale for v in (number(pair[which], key) for pair in runs[name] if pair[which]) if v is not None]
            cells.append(f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"
                         if values else "n/a")
        print(f"| {label} | " + " | ".join(cells) + " |")
    ratios = []
    for b, t in zip(runs["base"], runs["tree"]):
        x, y = number(b[which], ratio_key), number(t[which], ratio_key)
        if x and y:
            ratios.append(y / x)
    if ratios:
        print(f"\n{tree} / base, {ratio_key} ({better}): median {statistics.median(ratios):.3f} "
              f"(rounds: {', '.join(f'{x:.3f}' for x in ratios)})")


print(f"\nS1 example ({workload}), {rounds} alternated rounds: base {base} against {tree}")
table(f"At {rate} logs/s", 0, rated, "us_per_send", "lower is better")
table("Unthrottled", 1, unthrottled, "per_cpu_second", "higher is better")
if bad:
    print("\nFAILED: a run lost, duplicated or left logs pending, or printed no row: " + ", ".join(bad))
    sys.exit(1)
PY
