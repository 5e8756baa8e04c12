#!/usr/bin/env bash
# Where the engine's cycles go on S1 and S1-R unthrottled: the S1 example under `perf record -e
# cpu-clock` (a software clock, sampled at 2 kHz: these VMs have no hardware counters), every
# sample of the producer's process sorted into the stage its function belongs to — the add (the
# workload building records and the engine encoding them), reading the clock, sealing and
# deadlines, compression, signing, the HTTP send (reqwest, hyper, sockets), delivery reports,
# the runtime's scheduling and wake-ups, allocation, and the kernel — per thread. The emulator
# child's samples are left out (its work is not the producer's). Prints one table per workload:
# each stage's share of the process's samples, and each thread's.
#
#   bash lab/scripts/cycles/s1.sh [SECONDS]        (default 5; needs perf: Debian's linux-perf)
#
# Builds the S1 example in release (line tables on: `[profile.release] debug = 1`). OUT=DIR
# keeps perf.data and the reports (default: a temporary directory, printed).
set -euo pipefail
S=${1:-5}
cd "$(git rev-parse --show-toplevel)"
command -v perf >/dev/null || { echo "perf is needed (apt-get install linux-perf)" >&2; exit 1; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
echo "out: $OUT"
cargo build --release --quiet -p loghose-lab --example s1
bin=target/release/examples/s1
bash lab/scripts/machine.sh
for workload in s1 s1r; do
  perf record -q -e cpu-clock -F 2000 -o "$OUT/$workload.data" -- \
    "$bin" --workload "$workload" --rates 2 --seconds 1 --unthrottled-seconds "$S" \
    >"$OUT/$workload.txt" 2>"$OUT/$workload.err"
  # The producer is the first process perf saw (the emulator child came later).
  pid=$(perf report -q -i "$OUT/$workload.data" --sort pid --stdio 2>/dev/null |
    awk '{print $2}' | sed -n 's/^\([0-9]*\):.*/\1/p' | sort -n | head -1)
  perf report -q -i "$OUT/$workload.data" --pid "$pid" --sort comm,sym --stdio --percent-limit 0 \
    >"$OUT/$workload.report" 2>/dev/null
  python3 - "$OUT/$workload.report" "$workload" "$OUT/$workload.txt" <<'PY'
import collections, re, sys

report, workload, table = sys.argv[1], sys.argv[2], sys.argv[3]
# A function's stage, by the first pattern its name matches (order matters).
STAGES = [
    ("compression", r"lz4|compress"),
    ("signing", r"hmac|sha1|sha2|md5|Md5|Sha1|sign|base64"),
    ("delivery reports", r"reporter|report::|DeliveryReport|tally|meters"),
    ("sealing, deadlines", r"seal|deadlines|Deadlines|pack_id|close_group"),
    # Each record's time: the system clock, or the engine's (its counter read, once inlined
    # into the add, is counted there).
    ("reading the clock", r"clock_gettime|producer::clock"),
    ("the add: encode, accumulate", r"encode|Encoder|accumulator|add_with|add_in_place|budget|routing|producer::add|varint|check_key|BatchBuf"),
    ("the workload's records", r"bench::|S1Workload|S1RWorkload|workload|itoa|fmt::"),
    ("HTTP send: reqwest, hyper, sockets", r"reqwest|hyper|http::|h2::|mio::|tokio::net|Tcp|socket|send_request|transport"),
    ("runtime: scheduling, wake-ups, timers", r"tokio::runtime|tokio::sync|tokio::time|park|Notify|notify|wake|futex|parking_lot|semaphore|Semaphore|concurrency::|epoll"),
    ("allocation, copies", r"malloc|free|realloc|alloc::|memcpy|memmove|memset|_int_|cfree"),
    ("kernel", r"^\[k\]"),
]
rows = []
for line in open(report):
    m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+(\[[.k]\])\s+(.*)", line)
    if m:
        pct, comm, kind, sym = float(m.group(1)), m.group(2), m.group(3), m.group(4).strip()
        rows.append((pct, comm, ("[k] " if kind == "[k]" else "") + sym))

def stage(sym):
    for name, pattern in STAGES:
        if re.search(pattern, sym):
            return name
    return "other"

by_stage = collections.Counter()
by_thread = collections.Counter()
cells = collections.Counter()
for pct, comm, sym in rows:
    s = stage(sym)
    by_stage[s] += pct
    by_thread[comm] += pct
    cells[(s, comm)] += pct
total = sum(by_stage.values()) or 1
threads = [t for t, _ in by_thread.most_common(4)]
per_cpu = next((l for l in open(table) if l.startswith("| server | true")), "").split("|")
print(f"\n{workload.upper().replace('S1R', 'S1-R')} unthrottled: share of the producer process's CPU samples, by stage and thread")
if len(per_cpu) > 5:
    print(f"(this run: {float(per_cpu[5]) / 1e6:.2f} M logs per CPU-second at {per_cpu[6].strip()} % CPU)")
print()
print("| stage | share | " + " | ".join(threads) + " |")
print("|---|---:|" + "---:|" * len(threads))
for s, pct in by_stage.most_common():
    print(f"| {s} | {100 * pct / total:.1f} % | " + " | ".join(f"{100 * cells[(s, t)] / total:.1f}" for t in threads) + " |")
print("| all | 100 % | " + " | ".join(f"{100 * by_thread[t] / total:.1f}" for t in threads) + " |")
other = collections.Counter()
for pct, comm, sym in rows:
    if stage(sym) == "other":
        other[sym[:70]] += pct
print("\nlargest functions left in 'other': " + "; ".join(f"{s} {100 * p / total:.1f} %" for s, p in other.most_common(6)))
PY
done
