#!/usr/bin/env bash
# The Python logging benchmarks: the cost of one logger.info call by handler
# (lab/python/logging_handlers.py) and scenario S3 from Python, an ASGI service under wrk
# (lab/python/s3_asgi.py). Installs what they need (the package into .venv, starlette, uvicorn,
# the official SDK, and Debian's wrk). Arguments go to s3_asgi.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r lab/python/requirements.txt .
if ! command -v wrk >/dev/null; then
  apt-get update -qq && apt-get install -y -qq wrk >/dev/null
fi
.venv/bin/python lab/python/logging_handlers.py --rounds 5 --records 20000
echo
.venv/bin/python lab/python/s3_asgi.py "$@"
