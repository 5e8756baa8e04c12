#!/usr/bin/env bash
# Resident memory of an idle `loghose pipe --preset pi`, the way a Pi runs it for hours:
# - waiting: its standard input open and empty (nothing sent yet);
# - after a line: one line delivered to the emulator, then idle again (the HTTP stack loaded).
# Prints VmRSS and its anonymous part (the process's own memory; the rest is code paged in) for
# each, RUNS times. Usage: bash lab/scripts/pipe-rss.sh [BINARY] [RUNS]
# (default: target/small/loghose, the build for small machines; 3 runs).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-target/small/loghose}
RUNS=${2:-3}
[ -x "$BIN" ] || cargo build --profile small -p loghose --features cli --bin loghose
work=$(mktemp -d)
"$BIN" emulator --port 0 > "$work/endpoint" &
emulator=$!
trap 'kill $emulator 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$work/endpoint" ] && break; sleep 0.1; done
export LOGHOSE_ENDPOINT=$(head -1 "$work/endpoint") LOGHOSE_PROJECT=rss LOGHOSE_LOGSTORE=pipe \
  ALIBABA_CLOUD_ACCESS_KEY_ID=loghose-emulator ALIBABA_CLOUD_ACCESS_KEY_SECRET=loghose-emulator-secret
rss() { awk '/^VmRSS:/ {r=$2} /^RssAnon:/ {a=$2} END {printf "%.2f MB (anonymous %.2f)", r/1024, a/1024}' "/proc/$1/status"; }
measure() { # $1: label, $2: the first line to send, or empty
  mkfifo "$work/in"
  { if [ -n "$2" ]; then echo "$2"; fi; exec sleep 30; } > "$work/in" &
  local feeder=$!
  "$BIN" pipe --preset pi --option linger_ms=100 < "$work/in" &
  local pipe=$!
  sleep 3
  echo "$1: $(rss $pipe)"
  kill $pipe $feeder 2>/dev/null || true
  wait $pipe 2>/dev/null || true
  rm -f "$work/in"
}
for _ in $(seq "$RUNS"); do
  measure "waiting" ""
  measure "after a line" "one line"
done
