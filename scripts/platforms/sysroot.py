#!/usr/bin/env python3
"""Unpacks Debian's ARM builds of Python 3.11 and Node.js into one directory, to run under
qemu-user as a Raspberry Pi would (``QEMU_LD_PREFIX=DIR qemu-arm DIR/usr/bin/python3.11``).

    python3 scripts/platforms/sysroot.py armhf|arm64 DIR

Adds the architecture to dpkg (once), resolves the packages' dependencies of that
architecture with apt-cache, downloads each with ``apt-get download`` and unpacks it with
``dpkg -x``: nothing is installed on this machine. A directory already complete (its
``.complete`` file names the same packages) is left as it is.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

#: What the tests run: the interpreters and what Node's own modules need beside it.
ROOTS = ["python3.11-minimal", "libpython3.11-stdlib", "nodejs", "node-acorn", "node-cjs-module-lexer",
         "node-undici", "ca-certificates"]
#: Packages of the system itself that the interpreters never load.
SKIP = {"debconf", "dpkg", "perl-base", "install-info", "tzdata", "media-types", "mime-support", "openssl",
        "cdebconf", "libdebian-installer4", "sensible-utils", "readline-common", "libperl5.36", "perl",
        "perl-modules-5.36", "libgdbm-compat4", "python3", "python3-minimal"}

DEPENDS = re.compile(r"^\s+\|?(?:Pre)?Depends: ([^<\s][^\s]*)$")


def run(*args: str, **kwargs) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs).stdout


def resolve(arch: str) -> list[str]:
    """Every package the roots need: NAME:ARCH, or NAME for an architecture-independent one
    (whose own dependencies are the target's)."""
    independent = {name for name in ROOTS if name.startswith("node-") or name == "ca-certificates"}
    todo = {name if name in independent else f"{name}:{arch}" for name in ROOTS}
    seen: set[str] = set()
    while todo:
        # One apt-cache call per level of the tree.
        level = sorted(p for p in todo if p not in seen and p.split(":")[0] not in SKIP)
        todo = set()
        if not level:
            break
        seen.update(level)
        out = run("apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
                  "--no-replaces", "--no-enhances", *level)
        unqualified = sorted({d for d in _deps(out) if ":" not in d})
        shown = run("apt-cache", "show", "--no-all-versions", *unqualified) if unqualified else ""
        all_arch = set()
        for stanza in shown.split("\n\n"):
            fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " ")
            if fields.get("Architecture") == "all":
                all_arch.add(fields.get("Package", ""))
        for dep in _deps(out):
            if ":" in dep or dep in all_arch:
                todo.add(dep)
            else:
                todo.add(f"{dep}:{arch}")
    return sorted(seen)


def _deps(out: str) -> list[str]:
    return [m.group(1) for line in out.splitlines() if (m := DEPENDS.match(line))]


def main() -> None:
    arch, target = sys.argv[1], Path(sys.argv[2])
    if arch not in ("armhf", "arm64"):
        raise SystemExit(f"sysroot.py: architecture {arch!r}: armhf or arm64")
    if arch not in run("dpkg", "--print-foreign-architectures").split():
        subprocess.run(["dpkg", "--add-architecture", arch], check=True)
        subprocess.run(["apt-get", "update", "-qq"], check=True)
    packages = resolve(arch)
    done = target / ".complete"
    if done.exists() and done.read_text() == "\n".join(packages):
        print(f"{target}: complete ({len(packages)} packages)")
        return
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as downloads:
        run("apt-get", "download", *packages, cwd=downloads)
        debs = sorted(Path(downloads).glob("*.deb"))
        for deb in debs:
            subprocess.run(["dpkg", "-x", str(deb), str(target)], check=True)
    done.write_text("\n".join(packages))
    print(f"{target}: {len(debs)} packages unpacked")


if __name__ == "__main__":
    main()
