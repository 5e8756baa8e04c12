"""The Python examples (examples/python/) run as a user runs them, against the embedded emulator
(no LOGHOSE_ENDPOINT), and say what they did; the batch job's exit status says whether its
records were delivered, kept in its spool for the next run, or lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "python"


def run(name: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LOGHOSE_", "ALIBABA_CLOUD_"))}
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
                          timeout=150, env={**clean, **env})


def test_the_web_service_logs_each_request():
    done = run("web_service.py")
    assert done.returncode == 0, done.stderr
    assert "200 requests served, 200 access records delivered" in done.stdout, done.stdout
    assert "the emulator holds 200 records, one for each path requested: True" in done.stdout, done.stdout


def test_the_follower_sends_every_line_across_a_rotation():
    done = run("follow_file.py")
    assert done.returncode == 0, done.stderr
    assert "followed 1000 lines across one rotation; undelivered: 0" in done.stdout
    assert "the emulator holds 1000 of them" in done.stdout


def test_the_throughput_experiment_delivers_what_it_sends():
    done = run("throughput.py", "0.5")
    assert done.returncode == 0, done.stderr
    assert ", 0 failed" in done.stdout and "Stats(accepted=" in done.stdout, done.stdout


def test_the_batch_job_exits_0_75_or_1_as_its_records_fared(tmp_path):
    spool = str(tmp_path / "spool")
    done = run("batch_job.py", spool)
    assert done.returncode == 0, done.stderr
    assert "CloseResult(lost=0, undelivered=0, kept=0" in done.stdout
    # Nothing listens on port 9: the job's time runs out with every record kept in its spool.
    kept = run("batch_job.py", spool, "1", LOGHOSE_ENDPOINT="http://127.0.0.1:9", LOGHOSE_PROJECT="examples",
               ALIBABA_CLOUD_ACCESS_KEY_ID="id", ALIBABA_CLOUD_ACCESS_KEY_SECRET="secret")
    assert kept.returncode == 75, kept.stdout + kept.stderr
    assert "10000 records kept in" in kept.stderr
    # The next run on the spool delivers them (to the project and logstore they were sent to), and its own.
    again = run("batch_job.py", spool)
    assert again.returncode == 0, again.stderr
    assert "the emulator holds 20000 records" in again.stdout, again.stdout
