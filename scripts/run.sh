#!/usr/bin/env bash
# The main job: scenario S1 (the C producer's server benchmark) against the embedded emulator,
# every log read back and checked; prints the S1 table.
# Usage: bash scripts/run.sh [--rates 1000,200000] [--seconds N] [--unthrottled-seconds N] [--preset server|pi]
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --quiet --release -p loghose --example s1 -- "$@"
