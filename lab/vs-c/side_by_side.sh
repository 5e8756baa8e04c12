#!/usr/bin/env bash
# S1 and S1-R side by side with the vendor's C producer, in one period, alternating: per round,
# the C driver (C_S1) at 200 000 logs/s and unthrottled, then loghose's Rust harness
# (examples/s1), Python (lab/python) and Node (lab/node/bench-cli.js), on S1 and on S1-R, in
# that order in odd rounds and the reverse in even ones; every run against
# one emulator at nice 10. Prints, per producer and workload, the median (and range)
# over the rounds of µs per add at 200 000 logs/s, CPU %, RSS MB, and logs per CPU-second
# unthrottled, with the ratio to the C producer's.
#
#   bash lab/scripts/vs-c/side_by_side.sh [ROUNDS] [SECONDS]     (default 3 rounds of 5 s)
#
# Needs: C_S1=PATH, the C driver (c_s1.c linked against the vendor's library, both built
# outside this checkout as docs/vs-c.md shows; only when PRODUCERS has c), the release emulator and
# harness (cargo build --release -p loghose --features cli --bin loghose-emulator && cargo build --release -p loghose-lab --example s1), the Python
# .venv with loghose (bash scripts/run.sh makes it; the figures in BENCHMARKS.md are of the wheel
# as published: bash scripts/release/wheel.sh, then pip install dist/wheels/*.whl, as whole-program
# optimisation is worth a fifth of Python's logs per CPU-second) and the Node addon as published
# (npm run build:dist: the same whole-program optimisation; npm run build's is a fifth slower), and
# `127.0.0.1 bench.sls.local sls.local` in /etc/hosts: the C producer posts to
# http://{project}.{endpoint}. OUT=DIR keeps every run's output there (default: a temporary
# directory, printed). PRODUCERS="c rust python python-sender node node-sender" (the -sender
# ones add through `Producer.sender`) and WORKLOADS="s1 s1r" choose.
set -u
ROUNDS=${1:-3}; S=${2:-5}
C=${C_S1:-}
EMU=${EMU:-target/release/loghose-emulator}
RUST=${RUST:-target/release/examples/s1}
PRODUCERS=${PRODUCERS:-c rust python python-sender node node-sender}
WORKLOADS=${WORKLOADS:-s1 s1r}
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; echo "out: $OUT"
bash "$(dirname "$0")/../scripts/machine.sh"
case " $PRODUCERS " in *" c "*) [ -x "$C" ] || { echo "set C_S1 to the C driver built outside this checkout (docs/vs-c.md), or leave c out of PRODUCERS" >&2; exit 1; } ;; esac
for f in "$EMU" "$RUST"; do [ -x "$f" ] || { echo "missing $f (see the comment at the top)" >&2; exit 1; }; done
grep -q 'bench.sls.local' /etc/hosts || { echo "add '127.0.0.1 bench.sls.local sls.local' to /etc/hosts" >&2; exit 1; }
"$RUST" --s1r-pool-out "$OUT/s1r-pool.tsv"

nice -n 10 "$EMU" --host 127.0.0.1 --port 0 --access-key-id bench-id --access-key-secret bench-secret \
  --retention-mib 64 >"$OUT/emu.out" 2>"$OUT/emu.err" &
EPID=$!; trap 'kill $EPID 2>/dev/null' EXIT
for _ in $(seq 50); do URL=$(grep -m1 -oE 'http://[0-9.:]+' "$OUT/emu.out"); [ -n "$URL" ] && break; sleep 0.1; done
PORT=${URL##*:}

for r in $(seq "$ROUNDS"); do
  for w in $WORKLOADS; do
    pool=; [ "$w" = s1r ] && pool="$OUT/s1r-pool.tsv"
    # Even rounds run the producers in reverse (C last): over the rounds each one runs as
    # often after C as before it, so a drift in the host's speed (per-second add times of any
    # producer here vary up to 2× within a run) does not lean every ratio the same way.
    order=$PRODUCERS
    [ $((r % 2)) = 0 ] && order=$(printf '%s\n' $PRODUCERS | tac | tr '\n' ' ')
    for p in $order; do
      case $p in
        c)
          C_S1_QUIET=1 C_S1_POOL=$pool "$C" "sls.local:$PORT" bench "c-$w-$r" bench-id bench-secret 200000 "$S" throttled \
            >"$OUT/c_${w}_$r.txt" 2>&1
          C_S1_QUIET=1 C_S1_POOL=$pool "$C" "sls.local:$PORT" bench "cu-$w-$r" bench-id bench-secret 1000000 "$S" unthrottled \
            >"$OUT/cu_${w}_$r.txt" 2>&1 ;;
        rust)
          "$RUST" --workload "$w" --rates 200000 --seconds "$S" --unthrottled-seconds "$S" >"$OUT/rust_${w}_$r.txt" 2>/dev/null ;;
        python)
          PYTHONPATH=lab/python .venv/bin/python -m loghose_lab --scenario "$w" --rates 200000 --seconds "$S" --unthrottled-seconds "$S" \
            --no-progress --json >"$OUT/python_${w}_$r.json" 2>"$OUT/python_${w}_$r.err" ;;
        python-sender)
          PYTHONPATH=lab/python .venv/bin/python -m loghose_lab --scenario "$w" --rates 200000 --seconds "$S" --unthrottled-seconds "$S" \
            --param api='"sender"' --no-progress --json >"$OUT/python-sender_${w}_$r.json" 2>"$OUT/python-sender_${w}_$r.err" ;;
        node)
          node lab/node/bench-cli.js bench --scenario "$w" --rates 200000 --seconds "$S" --unthrottled-seconds "$S" --json \
            --no-progress >"$OUT/node_${w}_$r.json" 2>"$OUT/node_${w}_$r.err" ;;
        node-sender)
          node lab/node/bench-cli.js bench --scenario "$w" --rates 200000 --seconds "$S" --unthrottled-seconds "$S" --json \
            --no-progress --param api='"sender"' >"$OUT/node-sender_${w}_$r.json" 2>"$OUT/node-sender_${w}_$r.err" ;;
      esac
    done
  done
  echo "round $r done"
done
bash "$(dirname "$0")/../scripts/machine.sh"

PYTHONPATH="$(dirname "$0")/../scripts" python3 - "$OUT" "$ROUNDS" "$PRODUCERS" "$WORKLOADS" "$URL" <<'PY'
import json, os, statistics, sys, urllib.request
from rows import kv, rust_rows
out, rounds, producers, workloads, url = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]
# What the emulator received of each of the C producer's logstores (its own check is by batch).
overview = json.load(urllib.request.urlopen(f"{url}/_emulator/overview"))
received = {ls["name"]: ls["logs"] for p in overview["projects"] if p["name"] == "bench" for ls in p["logstores"]}

def run(p, w, r):
    """(µs per add at 200 000/s, CPU %, RSS MB, logs per CPU-second unthrottled, lost)"""
    if p == "c":
        t, u = kv(f"{out}/c_{w}_{r}.txt"), kv(f"{out}/cu_{w}_{r}.txt")
        if not t or not u:
            return None
        lost = (t["accepted"] - received.get(f"c-{w}-{r}", 0)) + (u["accepted"] - received.get(f"cu-{w}-{r}", 0))
        return (t["avg_us_per_add"], t["cpu_pct"], t["maxrss_mb"], u["accepted"] / u["cpu_total_s"], int(lost))
    if p == "rust":
        rows = rust_rows(f"{out}/rust_{w}_{r}.txt")
        t = next((x for x in rows if x.get("rate") == "200000"), None)
        u = next((x for x in rows if x.get("unthrottled") == "true"), None)
        if not t or not u:
            return None
        return (float(t["us_per_send"]), float(t["cpu_pct"]), float(t["rss_mb"]), float(u["per_cpu_second"]),
                int(t["lost"]) + int(u["lost"]))
    path = f"{out}/{p}_{w}_{r}.json"
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    rows = json.load(open(path))
    g = lambda row, *keys: next((row[k] for k in keys if k in row), None)
    t = next((x for x in rows if g(x, "rate") == 200000), None)
    u = next((x for x in rows if g(x, "unthrottled")), None)
    if not t or not u:
        return None
    return (g(t, "us_per_send", "usPerSend"), g(t, "cpu_pct", "cpuPct"), g(t, "rss_mb", "rssMb"),
            g(u, "per_cpu_second", "perCpuSecond"), g(t, "lost") + g(u, "lost"))

def med(values):
    return statistics.median(values), min(values), max(values)

print()
print("| workload | producer | µs per add @200 000/s | CPU % | RSS MB | logs per CPU-second (median, range) "
      "| vs C (median of the rounds' ratios, range) | lost |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for w in workloads:
    # Each round's C run is the reference for the runs beside it: the machine drifts between
    # rounds more than between neighbouring runs.
    c_by_round = {r: x[3] for r in range(1, rounds + 1) if "c" in producers and (x := run("c", w, r))}
    for p in producers:
        by_round = {r: x for r in range(1, rounds + 1) if (x := run(p, w, r))}
        runs = list(by_round.values())
        failed = [r for r in range(1, rounds + 1) if r not in by_round]
        if failed:
            # Said, not left out quietly: a harness that stopped running is a broken table.
            print(f"{p} {w}: no figures from round(s) {failed}; see {out}/{p}*_{w}_*", file=sys.stderr)
        if not runs:
            continue
        us, cpu, rss, per_cpu = (med([x[i] for x in runs]) for i in range(4))
        ratios = [x[3] / c_by_round[r] for r, x in by_round.items() if r in c_by_round]
        ratio = "–"
        if ratios:
            mid, low, high = med(ratios)
            ratio = f"{mid:.2f}× ({low:.2f}–{high:.2f})"
        lost = sum(x[4] or 0 for x in runs)
        print(f"| {w.upper().replace('S1R', 'S1-R')} | {p} | {us[0]:.3f} | {cpu[0]:.1f} | {rss[0]:.0f} | "
              f"{per_cpu[0] / 1e6:.2f} M ({per_cpu[1] / 1e6:.2f}–{per_cpu[2] / 1e6:.2f}) | {ratio} | {lost} |")
PY
