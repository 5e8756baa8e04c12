"""Every Python code block of README.md runs as pasted, in a fresh interpreter, and ends well."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_a_readme_python_block_runs_as_pasted(code, tmp_path):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip(), "every block prints what it shows"
    if "LoggingHandler" in code and sys.version_info[:3] in ((3, 12, 0), (3, 12, 1)):
        # CPython 3.12.0 and 3.12.1 refuse to start a thread from an atexit callback (allowed
        # again from 3.12.2), and OpenTelemetry's LoggingHandler.flush, which logging.shutdown
        # calls at exit, starts one: a message on stderr after the block has done its work.
        assert done.stderr.startswith("Exception ignored in atexit callback"), done.stderr
        assert done.stderr.count("Traceback") == 1, done.stderr
        refused = "RuntimeError: can't create new thread at interpreter shutdown"
        assert done.stderr.rstrip().endswith(refused), done.stderr
        return
    assert "Traceback" not in done.stderr, done.stderr
