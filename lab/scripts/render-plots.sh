#!/usr/bin/env bash
# Renders the plots of lab/notebooks/throughput.ipynb to docs/img/*.png (the guides show them):
# executes the notebook headlessly with full durations (about 5 minutes), saving only the
# PNGs; the notebook in the repository stays without outputs.
# Needs the test environment (bash scripts/test.sh, or .venv with tests-py/requirements.txt and
# the package installed).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p docs/img
LOGHOSE_PLOTS_DIR="$PWD/docs/img" MPLBACKEND=Agg .venv/bin/python - <<'PY'
import nbclient
import nbformat

notebook = nbformat.read("lab/notebooks/throughput.ipynb", as_version=4)
nbclient.NotebookClient(notebook, timeout=1800, kernel_name="python3").execute()
PY
ls -l docs/img
