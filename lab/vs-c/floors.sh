#!/usr/bin/env bash
# The floors under the fronts' per-log cost on S1 and S1-R: what the harnesses' own record making
# costs before any producer is called, beside the C producer's whole log, so that a goal of
# "the front's `send` at parity with the C producer" can be checked against what the language
# itself spends.
#
#   bash lab/scripts/vs-c/floors.sh [instructions] [time]     (default both)
#
# instructions  callgrind, whole process (every thread; the emulator runs in a process of its
#               own, outside the count), a run of 60 000 logs less one of 20 000, over 40 000:
#               the C producer (c_s1, throttled, one burst, then delivery); Python with the
#               harness's records (loghose.bench) passed to `id` (the interpreter's part alone),
#               to `send` and through `sender`.
# time          CPU nanoseconds per log (process time, 5 runs of 300 000 logs, median and
#               range): Python's harness making its records and passing them to `id`; Node's
#               making S1's records and writing their values out of V8 as UTF-8 (the
#               concatenation a `send` crosses with, written by Buffer#utf8Write and by
#               TextEncoder#encodeInto: the same V8 routine the addon's read uses), no producer.
# Needs what side_by_side.sh needs (C_S1 naming the C driver built outside this checkout, see
# docs/vs-c.md; the release emulator and examples/s1,
# the Python .venv with loghose; valgrind for `instructions`).
set -euo pipefail
cd "$(dirname "$0")/../.."
MODES=("$@"); [ ${#MODES[@]} -gt 0 ] || MODES=(instructions time)
C=${C_S1:-}
EMU=${EMU:-target/release/loghose-emulator}
RUST=${RUST:-target/release/examples/s1}
work=$(mktemp -d)
EPID=
trap '[ -n "$EPID" ] && kill $EPID 2>/dev/null; rm -rf "$work"' EXIT

# One Python program for every Python measure: MODE (s1|s1r)-(id|send|sender) N [OPTIONS_JSON].
cat >"$work/py_logs.py" <<'PY'
import json, sys, time
import loghose
from loghose import bench
mode, n = sys.argv[1], int(sys.argv[2])
scenario, how = mode.split("-")
bench._S1R.load()
if how == "id":
    pair = bench.add_s1r_pair if scenario == "s1r" else bench.add_s1_pair
    if len(sys.argv) == 3:  # time: CPU ns per log, 5 runs
        runs = []
        for _ in range(5):
            t = time.process_time()
            for i in range(n // 2):
                pair(id, i)
            runs.append((time.process_time() - t) / n * 1e9)
        runs.sort()
        print(f"{runs[2]:.0f} ({runs[0]:.0f}–{runs[-1]:.0f})")
        sys.exit(0)
producer = loghose.Producer.from_preset("server", **json.loads(sys.argv[3]), project="bench",
                                        logstore=f"floors-{mode}", topic=bench.TOPIC, tags=bench.TAGS,
                                        max_block_ms=60_000)
add = (lambda i: pair(id, i)) if how == "id" else bench._pair_adder(producer, scenario, how)
for i in range(n // 2):
    add(i)
sys.exit(1 if producer.close(120) else 0)
PY

per_log() {  # LABEL COMMAND... (the command takes the log count where N stands)
  local label=$1; shift
  local counts=()
  for n in 20000 60000; do
    local out="$work/cg.out" args=("${@//__N__/$n}")
    valgrind --tool=callgrind --callgrind-out-file="$out" "${args[@]}" >/dev/null 2>&1 ||
      { echo "failed: ${args[*]}" >&2; exit 1; }
    counts+=("$(awk '/^summary:/ {print $2}' "$out")")
  done
  printf '| %s | %d |\n' "$label" $(( (counts[1] - counts[0]) / 40000 ))
}

for mode in "${MODES[@]}"; do
  case $mode in
    instructions)
      for f in "$C" "$EMU" "$RUST"; do [ -x "$f" ] || { echo "missing ${f:-C_S1} (C_S1 names the C driver: docs/vs-c.md; the rest: side_by_side.sh)" >&2; exit 1; }; done
      command -v valgrind >/dev/null || { echo "valgrind is needed" >&2; exit 1; }
      grep -q 'bench.sls.local' /etc/hosts || { echo "add '127.0.0.1 bench.sls.local sls.local' to /etc/hosts" >&2; exit 1; }
      "$RUST" --s1r-pool-out "$work/s1r-pool.tsv"
      nice -n 10 "$EMU" --host 127.0.0.1 --port 0 --access-key-id bench-id --access-key-secret bench-secret \
        --retention-mib 64 >"$work/emu.out" 2>/dev/null &
      EPID=$!
      URL=
      for _ in $(seq 50); do URL=$(grep -m1 -oE 'http://[0-9.:]+' "$work/emu.out" || true); [ -n "$URL" ] && break; sleep 0.1; done
      [ -n "$URL" ] || { echo "the emulator did not start" >&2; exit 1; }
      PORT=${URL##*:}
      opts="{\"endpoint\": \"$URL\", \"access_key_id\": \"bench-id\", \"access_key_secret\": \"bench-secret\"}"
      echo "| instructions per log, whole process | count |"
      echo "|---|---:|"
      for w in s1 s1r; do
        pool=; [ "$w" = s1r ] && pool="$work/s1r-pool.tsv"
        C_S1_QUIET=1 C_S1_DESTROY_WAIT=30 C_S1_POOL=$pool per_log "$w: C producer" \
          "$C" "sls.local:$PORT" bench "floors-c-$w-__N__" bench-id bench-secret __N__ 1 throttled
        for how in id send sender; do
          per_log "$w: Python, records to $how" .venv/bin/python "$work/py_logs.py" "$w-$how" __N__ "$opts"
        done
      done
      kill $EPID 2>/dev/null; EPID= ;;
    time)
      echo "| CPU ns per log, no producer | median (range) |"
      echo "|---|---:|"
      for w in s1 s1r; do
        echo "| $w: Python, the harness's records to \`id\` | $(.venv/bin/python "$work/py_logs.py" "$w-id" 300000) |"
      done
      node - <<'JS'
const { recordA, recordB } = require('./node/s1-records.js')
const encoder = new TextEncoder()
const bytes = new Uint8Array(1 << 16)
const buffer = Buffer.from(bytes.buffer)
const valuesA = (r) => r.content_key_1 + r.content_key_2 + r.content_key_3 + r.content_key_4 + r.content_key_5 +
  r.content_key_6 + r.content_key_7 + r.content_key_8 + r.content_key_9 + r.index
const valuesB = (r) => r.LogHub + r['Search/Analytics'] + r.Visualized + r.Interconnection
let sink = 0
const ways = {
  "records, values concatenated": (i) => { sink += valuesA(recordA(i)).length + valuesB(recordB()).length },
  'records, values written by Buffer#utf8Write': (i) => { sink += buffer.utf8Write(valuesA(recordA(i)), 0) + buffer.utf8Write(valuesB(recordB()), 0) },
  'records, values written by TextEncoder#encodeInto': (i) => { sink += encoder.encodeInto(valuesA(recordA(i)), bytes).written + encoder.encodeInto(valuesB(recordB()), bytes).written },
}
const N = 300000
const runs = Object.fromEntries(Object.keys(ways).map((k) => [k, []]))
for (let round = 0; round < 6; round += 1) {
  for (const [name, f] of Object.entries(ways)) {
    const c0 = process.cpuUsage()
    for (let i = 0; i < N / 2; i += 1) f(i)
    const c = process.cpuUsage(c0)
    if (round > 0) runs[name].push(((c.user + c.system) * 1000) / N) // the first round warms the JIT
  }
}
for (const [name, r] of Object.entries(runs)) {
  r.sort((a, b) => a - b)
  console.log(`| s1: Node, ${name} | ${r[2].toFixed(0)} (${r[0].toFixed(0)}–${r[r.length - 1].toFixed(0)}) |`)
}
if (sink === 0) console.log('(nothing written)')
JS
      ;;
    *) echo "unknown mode $mode (instructions, time)" >&2; exit 2 ;;
  esac
done
