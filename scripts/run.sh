#!/usr/bin/env bash
# The main job: scenario S1 (the C producer's server benchmark) from Python against the
# embedded emulator, every log counted; prints the S1 table. The harness is the lab's
# (lab/python/loghose_lab), driving the package installed from this checkout.
# Usage: bash scripts/run.sh [--rates 1000,200000] [--seconds N] [--unthrottled-seconds N]
#                            [--preset server|pi] [--compare N] [--json]
#        bash scripts/run.sh --scenario s2|s4|s5|s6 [...]   (the other scenarios)
# (The same scenario from Rust, with every log read back: cargo run --release -p loghose-lab --example s1)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check "maturin>=1.7,<2"
.venv/bin/python -m pip install --quiet --disable-pip-version-check .
export PYTHONPATH="$PWD/lab/python"
exec .venv/bin/python -m loghose_lab "$@"
