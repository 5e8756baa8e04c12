"""ARCHITECTURE.md stays true: every path it names exists, and it stays short enough to read;
and no Rust file imports a file that imports it back.

The tree is read by its indentation (two spaces a level, a directory ends with "/"); the text's
backquoted paths are checked too.
"""

import re
from pathlib import Path

import pytest

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
    found = re.findall(r"`((?:core|lab|python|node|scripts|tests-py|tests-js|docs)/[^`\s]+)`", text)
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


# Import circles: no Rust file imports a file that imports it back (through `use` or a
# `crate::`/`super::` path outside comments and test modules). A module's file is the longest
# module path a reference names; `mod` declarations are not imports.
CRATES = ("core/src", "lab/src", "python/src", "node/src")


def module_files(root: Path) -> dict[tuple[str, ...], Path]:
    mods = {}
    for path in root.rglob("*.rs"):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] in ("mod", "lib", "main"):
            parts = parts[:-1]
        mods[("crate", *parts)] = path
    return mods


def referenced_files(path: Path, root: Path, mods: dict[tuple[str, ...], Path]) -> set[Path]:
    text = re.split(r"#\[cfg\(test\)\]\s*mod tests", path.read_text())[0]
    text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))
    # `pub(in crate::a)` names where an item is visible, not what it uses.
    text = re.sub(r"\bpub\(in [^)]*\)", "pub", text)
    here = ("crate", *path.relative_to(root).with_suffix("").parts)
    if here[-1] in ("mod", "lib", "main"):
        here = here[:-1]

    def resolve(segments: list[str]) -> Path | None:
        if segments[0] == "crate":
            base, rest = ["crate"], segments[1:]
        elif segments[0] in ("super", "self"):
            base, rest = list(here), segments
            while rest and rest[0] in ("super", "self"):
                if rest[0] == "super":
                    base = base[:-1]
                rest = rest[1:]
        elif (*here, segments[0]) in mods:
            # A child module named without `self::` (`use store::Spool;` in its parent).
            base, rest = list(here), segments
        else:
            return None
        full = base + rest
        for n in range(len(full), 0, -1):
            if tuple(full[:n]) in mods:
                return mods[tuple(full[:n])]
        return None

    found = set()
    for use in re.finditer(r"\buse\s+([^;]+);", text):
        body = use.group(1)
        if "{" in body:
            prefix = body[: body.index("{")].rstrip(":").split("::")
            names = re.findall(r"[A-Za-z_][A-Za-z_0-9:]*", body[body.index("{"):])
            candidates = [prefix + name.split("::") for name in names] or [prefix]
        else:
            candidates = [body.split("::")]
        for segments in candidates:
            target = resolve([s.strip() for s in segments if s.strip()])
            if target is not None:
                found.add(target)
    for path_ref in re.finditer(r"\b((?:crate|super)(?:::[A-Za-z_][A-Za-z_0-9]*)+)", text):
        target = resolve(path_ref.group(1).split("::"))
        if target is not None:
            found.add(target)
    found.discard(path)
    return found


def import_circles() -> set[tuple[str, str]]:
    circles = set()
    for crate in CRATES:
        root = ROOT / crate
        mods = module_files(root)
        edges = {path: referenced_files(path, root, mods) for path in mods.values()}
        for a, targets in edges.items():
            for b in targets:
                if a in edges.get(b, ()):
                    pair = tuple(sorted((str(a.relative_to(ROOT)), str(b.relative_to(ROOT)))))
                    circles.add(pair)
    return circles


def test_no_file_imports_a_file_that_imports_it_back():
    assert import_circles() == set(), "import circles (a file imports a file that imports it back)"


def test_the_circle_finder_sees_a_parent_and_its_child(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "mod.rs").write_text("mod b;\npub use b::B;\npub struct A;\n")
    (tmp_path / "a" / "b.rs").write_text("pub(in crate::a) struct C;\nuse super::A;\n")
    (tmp_path / "c.rs").write_text("pub(in crate::a) fn f() {}\n")
    mods = module_files(tmp_path)
    assert referenced_files(tmp_path / "a" / "mod.rs", tmp_path, mods) == {tmp_path / "a" / "b.rs"}
    assert referenced_files(tmp_path / "a" / "b.rs", tmp_path, mods) == {tmp_path / "a" / "mod.rs"}
    # A visibility names where an item is seen, not what the file uses.
    assert referenced_files(tmp_path / "c.rs", tmp_path, mods) == set()


def test_the_circle_finder_finds_one(tmp_path):
    (tmp_path / "a.rs").write_text("use crate::b::B;\n")
    (tmp_path / "b.rs").write_text("// use crate::a::A; is a comment\npub fn f() { super::a::g() }\n")
    mods = module_files(tmp_path)
    assert referenced_files(tmp_path / "a.rs", tmp_path, mods) == {tmp_path / "b.rs"}
    assert referenced_files(tmp_path / "b.rs", tmp_path, mods) == {tmp_path / "a.rs"}


# Module docs: a design note longer than about a screen's paragraph is read by its headings.
LONG_MODULE_DOC = 20


def module_doc(path: Path) -> list[str]:
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("//!"):
            break
        lines.append(line)
    return lines


def test_every_module_opens_with_a_design_note_and_long_ones_have_headings():
    unheaded, undocumented = [], []
    for crate in CRATES:
        for path in sorted((ROOT / crate).rglob("*.rs")):
            doc = module_doc(path)
            name = str(path.relative_to(ROOT))
            if not doc:
                undocumented.append(name)
            elif len(doc) > LONG_MODULE_DOC and not any(line.startswith("//! #") for line in doc):
                unheaded.append(f"{name} ({len(doc)} lines)")
    assert not undocumented, f"modules without a design note: {undocumented}"
    assert not unheaded, f"module docs over {LONG_MODULE_DOC} lines without headings: {unheaded}"


# The lab is a wing of its own: the product never reaches into it, the packages ship none of
# it, and the engine's default features are what an application wants.
def test_the_product_does_not_reach_into_the_lab():
    product = [*(ROOT / "core").rglob("*.rs"), *(ROOT / "core").glob("Cargo.toml"),
               *(ROOT / "python" / "loghose").rglob("*.py"), *(ROOT / "node" / "lib").glob("*.js"),
               *(ROOT / "node" / "lib").glob("*.d.ts")]
    assert len(product) > 50
    reaching = [str(p.relative_to(ROOT)) for p in product
                if re.search(r"loghose[_-]lab|require\([^)]*lab/", p.read_text())]
    assert not reaching, f"product files that name the lab: {reaching}"


def test_the_packages_ship_no_lab_and_export_no_benchmarks():
    import json

    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    package = json.loads((ROOT / "package.json").read_text())
    assert not [f for f in package["files"] if "bench" in f or f.startswith("lab")], package["files"]
    assert not [e for e in package["exports"] if "bench" in e], package["exports"]
    assert not list((ROOT / "python" / "loghose").glob("bench*")), "the Python package has a bench module"
    features = tomllib.loads((ROOT / "core" / "Cargo.toml").read_text())["features"]
    assert set(features["default"]) <= {"log", "tracing"}, features["default"]
    assert "bench" not in features


# The engine's rooms stand apart: the producer imports neither the metrics (their snapshot reads
# the producer) nor the emulator, and the emulator does not import the producer; the one file
# that names both is the bridge (core/src/emulator_bridge.rs). Test-only files are exempt.
def code_of(path: Path) -> str:
    text = re.split(r"#\[cfg\(test\)\]\s*mod tests", path.read_text())[0]
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))


def test_the_producer_and_the_emulator_do_not_import_each_other_or_the_metrics():
    ties = []
    for room, forbidden in (("core/src/producer", r"crate::(metrics|emulator)\b"),
                            ("core/src/emulator", r"crate::producer\b")):
        for path in sorted((ROOT / room).rglob("*.rs")):
            if path.stem.endswith("_tests"):
                continue
            for match in re.finditer(forbidden, code_of(path)):
                ties.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    assert not ties, f"imports across the engine's rooms: {ties}"
    bridge = (ROOT / "core/src/emulator_bridge.rs").read_text()
    assert "crate::emulator" in bridge and "crate::producer" in bridge
