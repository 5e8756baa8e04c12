"""A producer in a real notebook kernel: its repr, stats and reports as tables, and a live view
updated in place. (The lab's throughput notebook has its own test, in lab/python/tests.)"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(600)


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
