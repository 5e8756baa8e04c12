#!/usr/bin/env bash
# S1 and S1-R across round trips: for each round trip (default 0 10 50 150 ms, jitter a tenth of
# it), per round, loghose's Rust harness (examples/s1, whose emulator plays the round trip) at
# 200 000 logs/s and unthrottled, then — when C_S1 names the vendor's C producer's driver, built
# outside this checkout as docs/vs-c.md shows — the C producer unthrottled against the release
# emulator playing the same round trip. Prints, per workload and round trip, the medians (and
# ranges) over the rounds of logs delivered per second unthrottled, logs per CPU-second, the 99th
# percentile of a batch's add-to-delivery time at 200 000 logs/s, and the ratios to loghose's own
# loopback throughput and to the C producer's in the same round.
#
#   bash lab/scripts/network/rtt.sh [ROUNDS] [SECONDS]     (default 3 rounds of 5 s)
#
# Needs: the release emulator and harness (cargo build --release -p loghose --features cli --bin
# loghose-emulator; cargo build --release -p loghose-lab --example s1); for C, C_S1=PATH and `127.0.0.1 bench.sls.local sls.local` in
# /etc/hosts. RTTS="0 10 50 150", WORKLOADS="s1 s1r", MODE=adaptive|fixed choose; OUT=DIR keeps
# every run's output (default: a temporary directory, printed).
set -u
ROUNDS=${1:-3}; S=${2:-5}
C=${C_S1:-}
EMU=${EMU:-target/release/loghose-emulator}
RUST=${RUST:-target/release/examples/s1}
RTTS=${RTTS:-0 10 50 150}
WORKLOADS=${WORKLOADS:-s1 s1r}
MODE=${MODE:-adaptive}
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; echo "out: $OUT"
bash "$(dirname "$0")/../machine.sh"
for f in "$EMU" "$RUST"; do [ -x "$f" ] || { echo "missing $f (see the comment at the top)" >&2; exit 1; }; done
if [ -n "$C" ]; then
  [ -x "$C" ] || { echo "C_S1=$C is not an executable" >&2; exit 1; }
  grep -q 'bench.sls.local' /etc/hosts || { echo "add '127.0.0.1 bench.sls.local sls.local' to /etc/hosts" >&2; exit 1; }
fi
"$RUST" --s1r-pool-out "$OUT/s1r-pool.tsv"

PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null' EXIT
declare -A URLS
if [ -n "$C" ]; then
  for rtt in $RTTS; do
    nice -n 10 "$EMU" --host 127.0.0.1 --port 0 --access-key-id bench-id --access-key-secret bench-secret \
      --retention-mib 64 --latency-ms "$rtt" --jitter-ms $((rtt / 10)) >"$OUT/emu_$rtt.out" 2>"$OUT/emu_$rtt.err" &
    PIDS+=($!)
    for _ in $(seq 50); do URL=$(grep -m1 -oE 'http://[0-9.:]+' "$OUT/emu_$rtt.out"); [ -n "$URL" ] && break; sleep 0.1; done
    URLS[$rtt]=$URL
  done
fi

for r in $(seq "$ROUNDS"); do
  for w in $WORKLOADS; do
    pool=; [ "$w" = s1r ] && pool="$OUT/s1r-pool.tsv"
    for rtt in $RTTS; do
      "$RUST" --workload "$w" --rates 200000 --seconds "$S" --unthrottled-seconds "$S" \
        --latency-ms "$rtt" --jitter-ms $((rtt / 10)) --concurrency-mode "$MODE" >"$OUT/rust_${w}_${rtt}_$r.txt" 2>/dev/null
      if [ -n "$C" ]; then
        port=${URLS[$rtt]##*:}
        C_S1_QUIET=1 C_S1_POOL=$pool "$C" "sls.local:$port" bench "cu-$w-$rtt-$r" bench-id bench-secret 1000000 "$S" unthrottled \
          >"$OUT/c_${w}_${rtt}_$r.txt" 2>&1
      fi
    done
  done
  echo "round $r done"
done
bash "$(dirname "$0")/../machine.sh"

PYTHONPATH="$(dirname "$0")/.." python3 - "$OUT" "$ROUNDS" "$RTTS" "$WORKLOADS" "$C" <<'PY'
import statistics, sys
from rows import kv, rust_rows
out, rounds, rtts, workloads, c = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]

def rust(w, rtt, r):
    """(delivered per s unthrottled, per CPU-second, p99 add-to-delivery ms at 200 000/s, lost)"""
    rows = rust_rows(f"{out}/rust_{w}_{rtt}_{r}.txt")
    t = next((x for x in rows if x.get("rate") == "200000"), None)
    u = next((x for x in rows if x.get("unthrottled") == "true"), None)
    if not t or not u:
        return None
    return (float(u["delivered_per_s"]), float(u["per_cpu_second"]), float(t["delivery_p99_ms"]),
            int(t["lost"]) + int(u["lost"]) + int(t["duplicates"]) + int(u["duplicates"]))

def c_run(w, rtt, r):
    """(delivered per s, per CPU-second)"""
    x = kv(f"{out}/c_{w}_{rtt}_{r}.txt")
    if not x or not x.get("cb_ok"):
        return None
    wall = x.get("load_s", 0) + x.get("destroy_s", 0)
    return (x["accepted"] / wall if wall else 0.0, x["accepted"] / x["cpu_total_s"])

def med(values):
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})" if values else "–"

def ratio(values):
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})" if values else "–"

print()
print("| workload | RTT ms | delivered/s | per CPU-second | p99 add→delivery ms @200k/s | vs own loopback | C delivered/s | vs C (delivered/s) | lost+dup |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for w in workloads:
    base = {r: x[0] for r in range(1, rounds + 1) if (x := rust(w, rtts[0], r))}
    for rtt in rtts:
        runs = {r: x for r in range(1, rounds + 1) if (x := rust(w, rtt, r))}
        cs = {r: x for r in range(1, rounds + 1) if c and (x := c_run(w, rtt, r))}
        vs_base = [x[0] / base[r] for r, x in runs.items() if r in base]
        vs_c = [x[0] / cs[r][0] for r, x in runs.items() if r in cs and cs[r][0] > 0]
        print(f"| {w} | {rtt} | {med([x[0] for x in runs.values()])} | {med([x[1] for x in runs.values()])} "
              f"| {med([x[2] for x in runs.values()])} | {ratio(vs_base)} | {med([x[0] for x in cs.values()])} "
              f"| {ratio(vs_c)} | {sum(x[3] for x in runs.values())} |")
PY
