"""Scenario S1 from Python (short durations): nothing lost, and the table is produced."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(180)


def test_s1_from_python_loses_nothing_and_prints_the_table():
    result = subprocess.run(
        [sys.executable, "-m", "loghose", "bench", "--rates", "1000,20000,100000", "--seconds", "2",
         "--unthrottled-seconds", "2", "--compare", "20000", "--no-progress"],
        capture_output=True, text=True, timeout=170,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    rows = [line for line in lines if line.startswith("| 1000 |") or line.startswith("| 20000 |")
            or line.startswith("| 100000 |")]
    assert len(rows) == 3, result.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        sent = int(cells[0]) * 2
        assert (int(cells[5]), int(cells[6])) == (sent, 0), row
    assert any(line.startswith("| dict |") for line in lines)
    assert any(line.startswith("| send_many |") for line in lines)
    # Every record of every compare round was read back.
    assert "360000 records received, 0 lost" in lines, result.stdout
