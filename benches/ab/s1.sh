#!/usr/bin/env bash
# The hot path's guard: the S1 example (core/examples/s1.rs) built at BASE and from the working
# tree, run unthrottled in alternated rounds in one period (A B, then B A, ...), each against
# its own emulator child. Prints, for each, the median and range over the rounds of logs per
# CPU-second, CPU %, delivered logs per second, context switches and minor page faults per
# 1 000 logs, and the ratio of the working tree to BASE per round (the figure to quote: one
# machine, one period, so drift cancels). Every run checks its logs arrived exactly once.
#
#   bash benches/ab/s1.sh BASE [ROUNDS] [SECONDS]     (default 5 rounds of 5 s)
#
# BASE is any commit (main, HEAD~1, a tag). Its binary is built once into target/ab-cache/SHA
# (a worktree, built with its own Cargo.lock into a shared target/ab-build, then removed) and
# reused; the working tree's is built fresh. WORKLOAD=s1r runs S1-R; S1_ARGS adds flags to both
# (e.g. "--spool-dir /tmp/ab-spool --spool-sync batch"). OUT=DIR keeps every run's output
# (default: a temporary directory, printed). Run it before a change to the hot path (add, seal,
# compress, send, deliver, the runtime's tasks) lands, and put its table in the change's notes:
# instruction counts (scripts/instructions.sh) do not see wake-ups, contention or cache traffic.
set -euo pipefail
BASE=${1:?usage: bash benches/ab/s1.sh BASE [ROUNDS] [SECONDS]}
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

base_bin=$CACHE/$sha/s1
if [ ! -x "$base_bin" ]; then
  echo "building the S1 example at ${sha:0:12} (once; cached in $CACHE)"
  tree=$(mktemp -d)
  git worktree add --detach -q "$tree" "$sha"
  (cd "$tree" && cargo build --release --quiet -p loghose --example s1 --target-dir "$top/target/ab-build")
  mkdir -p "$CACHE/$sha"
  cp "$top/target/ab-build/release/examples/s1" "$base_bin"
  git worktree remove --force "$tree"
fi
echo "building the S1 example of the working tree"
cargo build --release --quiet -p loghose --example s1
head_bin=$OUT/s1-working-tree
cp target/release/examples/s1 "$head_bin"

run() { # NAME BINARY ROUND
  "$2" --workload "$WORKLOAD" --rates 200000 --seconds 1 --unthrottled-seconds "$S" "${EXTRA[@]}" \
    >"$OUT/$1_$3.txt" 2>"$OUT/$1_$3.err" || echo "$1 round $3 FAILED (see $OUT/$1_$3.err)"
}
bash "$top/benches/machine.sh"
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then
    run base "$base_bin" "$r"; run tree "$head_bin" "$r"
  else
    run tree "$head_bin" "$r"; run base "$base_bin" "$r"
  fi
  echo "round $r of $ROUNDS done"
done

bash "$top/benches/machine.sh"
PYTHONPATH="$top/benches" python3 - "$OUT" "$ROUNDS" "${sha:0:12}" "$WORKLOAD" <<'PY'
import statistics, sys
from rows import rust_rows

out, rounds, base, workload = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
columns = [("per_cpu_second", "logs per CPU-s", 1e-6, "{:.2f} M"), ("cpu_pct", "CPU %", 1, "{:.0f}"),
           ("delivered_per_s", "delivered/s", 1e-6, "{:.2f} M"), ("vol_cs_per_1k", "vol. switches/1k", 1, "{:.1f}"),
           ("invol_cs_per_1k", "invol. switches/1k", 1, "{:.1f}"), ("minflt_per_1k", "minor faults/1k", 1, "{:.2f}")]

def unthrottled(name, r):
    for row in rust_rows(f"{out}/{name}_{r}.txt"):
        if row.get("rate", "").strip() in ("", "unthrottled", "—", "-"):
            return row
    return None

def number(row, key):
    try:
        return float(row[key].replace(",", "").replace(" ", ""))
    except (KeyError, ValueError, AttributeError):
        return None

runs = {name: [unthrottled(name, r) for r in range(1, rounds + 1)] for name in ("base", "tree")}
lost = [f"{n} round {i + 1}" for n, rs in runs.items() for i, row in enumerate(rs)
        if row is None or any((number(row, k) or 0) != 0 for k in ("lost", "duplicates", "pending"))]
print(f"\nS1 example unthrottled ({workload}), {rounds} alternated rounds: base {base} against the working tree\n")
print("| build | " + " | ".join(title for _, title, _, _ in columns) + " |")
print("|---" * (len(columns) + 1) + "|")
for name, label in (("base", f"base {base}"), ("tree", "working tree")):
    cells = []
    for key, _, scale, fmt in columns:
        values = [v * scale for v in (number(row, key) for row in runs[name] if row) if v is not None]
        cells.append(f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"
                     if values else "n/a")
    print(f"| {label} | " + " | ".join(cells) + " |")
ratios = [t / b for b, t in ((number(b, "per_cpu_second"), number(t, "per_cpu_second"))
                             for b, t in zip(runs["base"], runs["tree"]) if b and t) if b and t]
if ratios:
    print(f"\nworking tree / base, logs per CPU-second: median {statistics.median(ratios):.3f} "
          f"(rounds: {', '.join(f'{x:.3f}' for x in ratios)})")
if lost:
    print("\nFAILED: a run lost, duplicated or left logs pending, or printed no row: " + ", ".join(lost))
    sys.exit(1)
PY
