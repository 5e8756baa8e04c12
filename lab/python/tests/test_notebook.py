"""lab/notebooks/throughput.ipynb runs headlessly from top to bottom (short durations), its
scenarios' checks hold (a cell asserts them), and it saves its three plots when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(600)

LAB = Path(__file__).resolve().parent.parent.parent
NOTEBOOK = LAB / "notebooks" / "throughput.ipynb"


def test_the_notebook_runs_and_saves_its_plots(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("LOGHOSE_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("LOGHOSE_PLOTS_DIR", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("PYTHONPATH", str(LAB / "python"))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # Any cell's error fails the run (CellExecutionError names the cell and the traceback).
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    for name in ("s1-rates.png", "s6-latency.png", "s5-backlog.png"):
        png = tmp_path / name
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    # The S1 table is in the notebook's output, with a row per rate.
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    tables = [o["data"]["text/plain"] for o in outputs if "data" in o and "text/plain" in o["data"]]
    assert any("us_per_send" in table and "100000" in table for table in tables), tables
    # The live view's one output, updated in place, ends showing every record delivered.
    shown = [o["data"]["text/html"] for o in outputs if o.get("output_type") == "display_data"
             and "text/html" in o.get("data", {}) and "delivered per second" in o["data"]["text/html"]]
    assert len(shown) == 1 and "200,000" in shown[0], shown
