"""The package's types as a type checker sees them: `mypy --strict` accepts the documented uses
and catches a misspelt or mistyped option; the typed options list exactly the engine's; the
small things a user prints (the version, a report)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import loghose
import pytest
from loghose import _native

pytestmark = pytest.mark.timeout(300)

HERE = Path(__file__).parent / "typing"


def mypy(*target: str) -> tuple[int, str]:
    from mypy import api

    out, err, status = api.run(["--strict", "--no-error-summary", "--python-executable", sys.executable,
                                "--cache-dir", str(Path(__file__).parent.parent / "target" / "mypy-cache"), *target])
    return status, out + err


def test_the_installed_package_passes_mypy_strict():
    status, out = mypy("-p", "loghose")
    assert status == 0, out


def test_mypy_strict_accepts_the_documented_uses():
    status, out = mypy(str(HERE / "usage_ok.py"))
    assert status == 0, out


def test_mypy_strict_catches_misspelt_and_mistyped_options():
    status, out = mypy(str(HERE / "usage_bad.py"))
    assert status == 1, out
    lines = (HERE / "usage_bad.py").read_text().splitlines()
    expected = {i + 1 for i, line in enumerate(lines) if "# error:" in line}
    flagged = {int(m.group(1)) for m in re.finditer(r"usage_bad\.py:(\d+): error", out)}
    assert flagged == expected, out
    assert '"lingr_ms"' in out


def test_the_typed_options_are_the_engines_options():
    assert set(loghose.ProducerOptions.__annotations__) == set(_native.option_names())


def test_version_and_a_readable_report():
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", loghose.__version__)
    assert loghose.__version__ == loghose.engine_version()
    with loghose.Emulator() as emu, loghose.Producer(**emu.producer_options(), linger_ms=10) as p:
        report = p.send_future({"a": "b"}).result(timeout=30)
        emu.inject("error", status=400, code="InvalidParameter", count=1)
        with pytest.raises(loghose.DeliveryError) as failed:
            p.send_future({"a": "c"}).result(timeout=30)
    text = repr(report)
    assert text.startswith("DeliveryReport(delivered, records=1, attempts=1, request_id=")
    assert "Some(" not in text
    assert repr(failed.value.report).startswith("DeliveryReport(failed InvalidParameter, records=1, attempts=1, ")
