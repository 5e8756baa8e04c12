#!/usr/bin/env bash
# The main job: push S1 batches to the embedded emulator and read every log back.
# Usage: bash scripts/run.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --quiet --release -p loghose --example demo -- "${1:-3}"
