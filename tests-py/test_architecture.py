"""ARCHITECTURE.md stays true: every path it names exists, and it stays short enough to read.

The tree is read by its indentation (two spaces a level, a directory ends with "/"); the text's
backquoted paths are checked too.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAP = ROOT / "ARCHITECTURE.md"


def tree_paths(text: str) -> list[str]:
    block = re.search(r"^## The tree\n+```text\n(.*?)^```", text, flags=re.S | re.M)
    assert block, "ARCHITECTURE.md has a tree"
    paths, stack = [], []
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        assert indent % 2 == 0, f"odd indentation: {line!r}"
        name = line.split()[0]
        level = indent // 2
        stack = stack[:level]
        assert len(stack) == level, f"a level skipped at {line!r}"
        path = "".join(stack) + name
        paths.append(path)
        if name.endswith("/"):
            stack.append(name)
    return paths


def text_paths(text: str) -> list[str]:
    found = re.findall(r"`((?:core|python|node|scripts|tests-py|tests-js|docs|benches)/[^`\s]+)`", text)
    found += re.findall(r"\]\(((?:docs)/[^)\s]+)\)", text)
    return found


def test_every_path_in_the_map_exists():
    text = MAP.read_text()
    paths = tree_paths(text) + text_paths(text)
    assert len(paths) > 150
    missing = [p for p in paths if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_the_map_reads_in_one_sitting():
    lines = MAP.read_text().count("\n")
    assert lines <= 300, f"ARCHITECTURE.md is {lines} lines; keep it at 300 at most"


def test_the_tree_reader_finds_a_missing_path():
    text = "## The tree\n\n```text\ncore/\n  src/\n    nowhere.rs  no such file\n```\n"
    assert tree_paths(text) == ["core/", "core/src/", "core/src/nowhere.rs"]
    assert not (ROOT / "core/src/nowhere.rs").exists()
