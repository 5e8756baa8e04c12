#!/usr/bin/env bash
# The whole Python suite on one interpreter: a virtualenv of its own (cached beside the
# interpreter's other runtimes), the native module built for it from this checkout (`pip
# install .`, the source install a user gets; or the wheel LOGHOSE_WHEEL names), then pytest. Run on the machine itself or in the
# Debian chroot (scripts/runtimes/sid-chroot.sh run ...); scripts/runtimes/test.sh calls it.
#
#   bash scripts/runtimes/python-suite.sh PYTHON [PYTEST ARGS...]
#
# LOGHOSE_EMULATOR_BIN names the emulator the tests start (built by the caller).
set -euo pipefail
cd "$(dirname "$0")/../.."

python=${1:?usage: python-suite.sh PYTHON [PYTEST ARGS...]}
shift
tag=$("$python" -c 'import sys, sysconfig; print("%d.%d%s" % (*sys.version_info[:2], "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""))')
venv=${LOGHOSE_VENVS:-/var/cache/loghose-venvs}/$tag
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
# The test dependencies less the tools only the main run uses (ruff, ziglang, pdoc; mypy runs there).
grep -vE '^(ruff|ziglang|pdoc)' tests-py/requirements.txt >"$venv/requirements.txt"
"${pip[@]}" -r "$venv/requirements.txt"
# The source install, as `pip install .` does it. A target directory per system: build scripts
# linked in the Debian chroot need its C library, newer than the machine's.
system=$(. /etc/os-release && echo "${ID}-${VERSION_CODENAME:-${VERSION_ID:-unknown}}")
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/runtimes-$system}
if [ -n "${LOGHOSE_WHEEL:-}" ]; then
  # The wheel as published (scripts/runtimes/test.sh wheel3.X builds it), instead.
  "${pip[@]}" --force-reinstall --no-deps "$LOGHOSE_WHEEL"
else
  "${pip[@]}" --force-reinstall --no-deps .
fi
"$venv/bin/python" -c 'import loghose, sys; print("loghose on", sys.version.split()[0], loghose.__file__)'
exec "$venv/bin/python" -m pytest tests-py -q "$@"
