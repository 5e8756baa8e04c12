"""The OTLP receiver's measurement (lab/python/otlp_receiver.py) in a short run: it counts every
record it sent at the emulator (a loss fails it) and prints each figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

SCRIPT = Path(__file__).resolve().parents[1] / "otlp_receiver.py"


def test_the_receiver_measurement_runs_and_prints_its_figures():
    if not (SCRIPT.parents[2] / "target" / "otlp-exporters").is_dir():
        pytest.skip("the OTLP exporters' packages are installed by bash scripts/test.sh python-env")
    result = subprocess.run([sys.executable, str(SCRIPT), "--seconds", "0.5", "--rounds", "1"],
                            capture_output=True, text=True, timeout=170)
    assert result.returncode == 0, result.stdout + result.stderr
    for figure in ("records_per_cpu_s", "p99_ms", "rss_rest_mb", "in-process processor"):
        assert figure in result.stdout, result.stdout
