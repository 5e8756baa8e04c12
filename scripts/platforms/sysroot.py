#!/usr/bin/env python3
"""Unpacks Debian 13's (trixie's) ARM builds of Python 3.13 and Node.js into one directory, to
run under qemu-user as a Raspberry Pi would (Raspberry Pi OS is Debian 13 with a kernel of its
own): ``QEMU_LD_PREFIX=DIR qemu-arm DIR/usr/bin/python3.13``.

    python3 scripts/platforms/sysroot.py armhf|arm64 DIR

Resolves the packages' dependencies of that architecture with apt-cache, from trixie's package
lists kept in an apt directory of its own beside DIR (the machine's own apt sources and
architectures are left alone), downloads each with ``apt-get download`` and unpacks it with
``dpkg -x``: nothing is installed on this machine. A directory already complete (its
``.complete`` file names the same packages) is left as it is.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The Debian release a Raspberry Pi runs today.
SUITE = "trixie"
#: Its Python (what the ARM checks run; the wheel tested is built for it).
PYTHON = "3.13"
#: What the tests run: the interpreters and what Node's own modules need beside it.
ROOTS = [f"python{PYTHON}-minimal", f"libpython{PYTHON}-stdlib", "nodejs", "node-acorn", "node-cjs-module-lexer",
         "node-minimatch", "node-undici", "ca-certificates"]
#: Packages of the system itself that the interpreters never load.
SKIP = {"debconf", "dpkg", "perl-base", "install-info", "tzdata", "media-types", "mime-support", "openssl",
        "cdebconf", "libdebian-installer4", "sensible-utils", "readline-common", "libperl5.36", "libperl5.40", "perl",
        "perl-modules-5.36", "perl-modules-5.40", "libgdbm-compat4", "python3", "python3-minimal"}

DEPENDS = re.compile(r"^\s+\|?(?:Pre)?Depends: ([^<\s][^\s]*)$")


#: apt's options for the private directory of trixie's lists (set by ``main``).
APT: list[str] = []


def run(*args: str, **kwargs) -> str:
    if args[0] in ("apt-cache", "apt-get"):
        args = (args[0], *APT, *args[1:])
    return subprocess.run(args, check=True, capture_output=True, text=True, **kwargs).stdout


def apt_dir(arch: str, where: Path) -> list[str]:
    """apt options that read trixie's lists for ``arch`` (and amd64) from ``where``, updated
    once a day."""
    for sub in ("lists/partial", "archives/partial", "preferences.d"):
        (where / sub).mkdir(parents=True, exist_ok=True)
    sources = where / "sources.list"
    sources.write_text(f"deb [arch=amd64,{arch}] http://deb.debian.org/debian {SUITE} main\n")
    (where / "status").touch()
    options = [f"-o=Dir::Etc::sourcelist={sources}", "-o=Dir::Etc::sourceparts=-",
               f"-o=Dir::State::Lists={where / 'lists'}", f"-o=Dir::Cache={where}",
               f"-o=Dir::State::status={where / 'status'}",
               f"-o=Dir::Etc::preferencesparts={where / 'preferences.d'}",
               "-o=APT::Architecture=amd64", f"-o=APT::Architectures=amd64,{arch}"]
    stamp = where / ".updated"
    if not stamp.exists() or time.time() - stamp.stat().st_mtime > 86400:
        subprocess.run(["apt-get", *options, "update", "-qq"], check=True)
        stamp.touch()
    return options


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
    APT[:] = apt_dir(arch, target.resolve().parent / f".apt-{SUITE}-{arch}")
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
    # Debian 13 has merged /usr: its packages put the loader and libraries under usr/ only,
    # and the top-level links come from base-files, which is not unpacked.
    for top in ("bin", "lib", "sbin"):
        if not (target / top).exists():
            (target / top).symlink_to(f"usr/{top}")
    done.write_text("\n".join(packages))
    print(f"{target}: {len(debs)} packages unpacked")


if __name__ == "__main__":
    main()
