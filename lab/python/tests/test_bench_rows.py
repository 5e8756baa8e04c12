"""The benchmark scripts' readers (lab/scripts/rows.py): the s1 example's markdown rows and the C
driver's key=value summary, as the tabulating scripts read them."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from rows import kv, rust_rows  # noqa: E402

S1_OUTPUT = """\
loghose s1: 2 rows
| preset | rate | unthrottled | delivered_per_s | lost |
|---|---:|---|---:|---:|
| default | 200000 | false | 199870 | 0 |
| default | max | true | 1532000 | 0 |
"""


def test_rust_rows_reads_each_row_by_its_header(tmp_path):
    path = tmp_path / "rust.txt"
    path.write_text(S1_OUTPUT)
    rows = rust_rows(str(path))
    assert [r["rate"] for r in rows] == ["200000", "max"]
    assert rows[1] == {"preset": "default", "rate": "max", "unthrottled": "true",
                       "delivered_per_s": "1532000", "lost": "0"}


def test_missing_outputs_read_as_nothing(tmp_path):
    assert rust_rows(str(tmp_path / "absent.txt")) == []
    assert kv(str(tmp_path / "absent.txt")) == {}


def test_kv_reads_the_c_drivers_numbers(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("accepted=2000000 cb_ok=1\nload_s=10.5 cpu_total_s=4.25 name=c-s1\n")
    assert kv(str(path)) == {"accepted": 2e6, "cb_ok": 1.0, "load_s": 10.5, "cpu_total_s": 4.25}
