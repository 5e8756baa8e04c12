"""Every Python code block of README.md and of the guides (docs/guides/*.md) runs as pasted, in a
fresh interpreter, and ends well. The blocks that send to the service read their endpoint and
keys from the environment (`LOGHOSE_ENDPOINT`, `ALIBABA_CLOUD_ACCESS_KEY_ID`, ...), as a user's
deployment would: here the environment names an emulator."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import loghose
import pytest

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))]
BLOCKS = [(page, i, code) for page in PAGES
          for i, code in enumerate(re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M))]


@pytest.fixture(scope="module")
def service() -> Iterator[dict[str, str]]:
    """An emulator standing in for the service, named by the environment the blocks read."""
    with loghose.Emulator() as emu:
        yield {"LOGHOSE_ENDPOINT": emu.endpoint, "ALIBABA_CLOUD_ACCESS_KEY_ID": emu.access_key_id,
               "ALIBABA_CLOUD_ACCESS_KEY_SECRET": emu.access_key_secret}


def test_the_readme_and_the_python_guide_have_blocks():
    pages = {page.name for page, _, _ in BLOCKS}
    assert {"README.md", "python.md", "durability.md", "monitoring.md", "jupyter.md"} <= pages
    assert sum(page.name == "README.md" for page, _, _ in BLOCKS) >= 2


@pytest.mark.parametrize(("page", "index", "code"), BLOCKS,
                         ids=[f"{page.stem}-{i}" for page, i, _ in BLOCKS])
def test_a_python_block_runs_as_pasted(page, index, code, tmp_path, service):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ALIBABA_CLOUD_", "LOGHOSE_"))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={**env, **service})
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
