"""examples/throughput.ipynb runs headlessly from top to bottom (short durations), its scenarios'
checks hold (a cell asserts them), and it saves its three plots when asked."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(600)

NOTEBOOK = Path(__file__).parent.parent / "examples" / "throughput.ipynb"


def test_the_notebook_runs_and_saves_its_plots(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("LOGHOSE_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("LOGHOSE_PLOTS_DIR", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
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


def test_a_producer_reads_well_in_a_notebook_and_its_live_view_updates_in_place():
    # A real kernel (nbclient), as a user's notebook runs: the live view is one output that the
    # kernel updates by its display id while records are sent, the producer's repr names where
    # it sends, and stats and a report show as HTML tables.
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [
        "import time\nimport loghose\n"
        "emu = loghose.Emulator()\n"
        "producer = loghose.Producer(**emu.producer_options('demo', 'live'), linger_ms=50)\n"
        "view = producer.live_view(0.1)",
        "for i in range(5000):\n    producer.send({'i': str(i)})\n"
        "report = producer.send_future({'i': 'last'}).result(timeout=10)\n"
        "time.sleep(0.5)\nview.stop()\nproducer",
        "producer.stats()",
        "report",
        "producer.close(10)\nproducer",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = [cell.outputs for cell in notebook.cells]
    view = [o for o in outputs[0] if o["output_type"] == "display_data"]
    assert len(view) == 1, outputs[0]
    shown = view[0]["data"]["text/html"]
    # Updated in place: the one output shows the final count, not the first (0).
    assert "5,001" in shown and "delivered per second" in shown, shown
    endpoint_repr = outputs[1][-1]["data"]["text/plain"]
    assert endpoint_repr.startswith("<loghose.Producer demo/live at http://127.0.0.1:") and endpoint_repr.endswith(
        ", open>"), endpoint_repr
    stats_html = outputs[2][0]["data"]["text/html"]
    assert "loghose producer stats" in stats_html and "5,001" in stats_html, stats_html
    assert outputs[2][0]["data"]["text/plain"].startswith("Stats(accepted=5001, delivered=5001, failed=0")
    report_html = outputs[3][0]["data"]["text/html"]
    assert "delivered" in report_html and "demo/live" in report_html, report_html
    assert outputs[4][-1]["data"]["text/plain"].endswith(", closed>")
