#!/usr/bin/env bash
# The Python wheel as published: built with the `dist` profile, stripped, for manylinux2014
# (zig, from PyPI's ziglang, links against that glibc baseline), checked for its tag and size,
# then installed into a clean virtualenv with no Rust toolchain on PATH for a round trip
# against the emulator it carries, from the library and from the `loghose` command. Leaves the
# wheel in dist/wheels/ (scripts/test.sh installs it into .venv for the test suite).
# Usage: bash scripts/release/wheel.sh   (needs .venv with maturin and ziglang: tests-py/requirements.txt)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
rm -rf dist/wheels
PATH="$root/.venv/bin:$PATH" .venv/bin/maturin build --quiet --profile dist --strip --zig \
  --compatibility manylinux2014 --interpreter .venv/bin/python --out dist/wheels
wheel=$(ls dist/wheels/loghose-*.whl)
echo "built $(basename "$wheel"): $(du -k "$wheel" | cut -f1) KB"
case $wheel in
  *manylinux2014_x86_64*|*manylinux_2_17_x86_64*) ;;
  *) echo "not a manylinux2014 wheel: $wheel" >&2; exit 1 ;;
esac
so_kb=$(python3 -c 'import sys, zipfile
print(max(i.file_size // 1024 for i in zipfile.ZipFile(sys.argv[1]).infolist() if i.filename.endswith(".so")))' "$wheel")
echo "native module: $so_kb KB"
# A guard against bloat, not a target (the wheel's size is: ≤ 4 MB). Raised from 6 MB when the
# default credential chain (STS, the metadata service, the profile files) and the emulator's
# STS and metadata service came in: about 300 KB; from 6.5 MB when the emulator's management
# and query APIs, its term index and Producer.sender came in: about 100 KB; from 6.75 MB when
# adaptive send concurrency and the emulator's network and quotas came in: about 120 KB; from
# 7 MB when the command's OTLP receiver came in (the OTLP messages' protobuf and JSON codecs,
# gzip: 7 338 KB); from 7.5 MB when it took OTLP/gRPC (HTTP/2 and gRPC's framing: 7 807 KB,
# the wheel 3.8 MB).
[ "$so_kb" -le 8192 ] || { echo "the native module is over 8 MB" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
# PATH without cargo or rustc: nothing may build.
export PATH="$work/venv/bin:/usr/bin:/bin"
! command -v cargo >/dev/null || { echo "cargo is still on PATH" >&2; exit 1; }
started=$(date +%s%N)
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index "$wheel"
echo "pip install of the wheel: $(( ($(date +%s%N) - started) / 1000000 )) ms"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import loghose

with loghose.Emulator() as emu:
    with loghose.Producer(**emu.producer_options(logstore="packaged"), linger_ms=10) as producer:
        producer.send({"from": "the installed wheel"})
        assert producer.flush(10) == 0
    stored = emu.logs("loghose", "packaged")
    assert [dict(log["contents"]) for log in stored] == [{"from": "the installed wheel"}], stored
print("round trip: 1 record delivered")
PY
"$work/venv/bin/loghose" --version
cd "$root"
