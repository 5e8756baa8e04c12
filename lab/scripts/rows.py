"""Reading the benchmark drivers' outputs, for the scripts that tabulate them (lab/scripts/network/rtt.sh,
lab/vs-c/side_by_side.sh): the C driver's `key=value` lines and the s1 example's markdown rows."""

import os
import re


def kv(path: str) -> dict[str, float]:
    """Every `key=number` in the file (the C driver's summary); empty when the file is missing."""
    text = open(path).read() if os.path.exists(path) else ""
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", text)}


def rust_rows(path: str) -> list[dict[str, str]]:
    """The s1 example's table rows, each a dict by its header (`| preset | ...`)."""
    rows: list[dict[str, str]] = []
    header = None
    for line in open(path).read().splitlines() if os.path.exists(path) else []:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| preset"):
            header = cells
        elif header and line.startswith("| ") and not line.startswith("|---"):
            rows.append(dict(zip(header, cells, strict=False)))
    return rows
