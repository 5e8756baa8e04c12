"""The Python API reference: every public name of the package — its classes, functions, methods
and properties, the native DeliveryReport's fields included — has a docstring, and pdoc renders
the reference of every public module without a warning."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

MODULES = ["loghose", "loghose.logging", "loghose.structlog", "loghose.loguru", "loghose.otel",
           "loghose.prometheus", "loghose.errors"]


def public_names() -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")]):
            obj = getattr(module, attr)
            if inspect.ismodule(obj) or not getattr(obj, "__module__", "").startswith("loghose"):
                continue
            found.append((f"{name}.{attr}", obj))
            if inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if not member.startswith("_") and (callable(value) or inspect.isdatadescriptor(value)):
                        found.append((f"{name}.{attr}.{member}", value))
    return found


def test_every_public_name_has_a_docstring():
    names = public_names()
    assert len(names) > 100, len(names)
    missing = [name for name, obj in names if not (inspect.getdoc(obj) or "").strip()]
    assert not missing, f"public names without a docstring: {missing}"


def test_pdoc_renders_the_reference_without_a_warning(tmp_path):
    pytest.importorskip("pdoc")
    done = subprocess.run([sys.executable, "-m", "pdoc", "-o", str(tmp_path), *MODULES],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Warn" not in done.stderr, done.stderr
    pages = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.html")}
    assert {"loghose.html", "loghose/logging.html", "loghose/otel.html"} <= pages, pages
    producer_page = (tmp_path / "loghose.html").read_text()
    assert "live_view" in producer_page and "CloseResult" in producer_page
