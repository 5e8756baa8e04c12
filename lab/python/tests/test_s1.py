"""Scenario S1 from Python (short durations): nothing lost, and the tables are produced."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(180)


def test_s1_from_python_loses_nothing_and_reports_every_rate():
    result = subprocess.run(
        [sys.executable, "-m", "loghose_lab", "--rates", "1000,20000,100000", "--seconds", "2",
         "--unthrottled-seconds", "2", "--compare", "20000", "--no-progress", "--json"],
        capture_output=True, text=True, timeout=170,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(result.stdout[:result.stdout.rindex("]") + 1])
    rated = [r for r in rows if not r.get("unthrottled")]
    assert [r["rate"] for r in rated] == [1000, 20000, 100000]
    for row in rated:
        assert (row["received"], row["lost"], row["duplicates"], row["pending"]) == (row["rate"] * 2, 0, 0, 0), row
        assert row["us_per_send"] > 0 and row["cpu_pct"] > 0 and row["rss_mb"] > 0
    [unthrottled] = [r for r in rows if r.get("unthrottled")]
    assert unthrottled["lost"] == 0 and unthrottled["received"] > 10_000, unthrottled
    assert unthrottled["per_cpu_second"] > 0


def test_s1_tables_in_markdown():
    result = subprocess.run(
        [sys.executable, "-m", "loghose_lab", "--rates", "2000", "--seconds", "1",
         "--unthrottled-seconds", "0", "--compare", "2000", "--no-progress"],
        capture_output=True, text=True, timeout=170,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("| preset | rate |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    [row] = [line for line in lines if line.startswith("| server | 2000 |")]
    values = dict(zip(cells, (c.strip() for c in row.strip("|").split("|")), strict=True))
    assert (values["received"], values["lost"]) == ("2000", "0"), result.stdout
    assert any(line.startswith("| dict |") for line in lines)
    # Every record of every compare round was read back.
    assert "36000 records received, 0 lost" in lines, result.stdout
