#!/usr/bin/env bash
# A newcomer's first minutes, timed: from the built packages to a first delivered record, doing
# what the README says. For each front: a fresh folder (and a fresh virtualenv for Python), the
# README's install line with the registry swapped for this checkout's built packages
# (`pip install loghose` from dist/wheels, `npm install loghose` from dist/npm's tarballs), then
# the README's first quickstart block, pasted as it is into a file and run. Prints the seconds
# each part took and what the block printed; fails if a block does not report a delivery.
#
#   bash lab/scripts/first-record.sh [python] [node]      (default: both)
#
# Needs the packages built first: bash scripts/release/wheel.sh (dist/wheels) and
# bash scripts/release/pack-npm.sh (dist/npm). pip installs from those files alone (the wheel has no
# dependencies); npm asks its registry about the other platforms' optional packages, as a
# user's install does, and installs this platform's from the tarball.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
fronts=("$@")
[ ${#fronts[@]} -gt 0 ] || fronts=(python node)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The README's first block of a language, as a user would paste it.
block() {
  python3 - "$1" <<'PY'
import re, sys
text = open("README.md").read()
print(re.findall(r"^```" + sys.argv[1] + r"\n(.*?)^```", text, flags=re.S | re.M)[0], end="")
PY
}

seconds() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }

for front in "${fronts[@]}"; do
  case $front in
    python)
      ls dist/wheels/loghose-*.whl >/dev/null 2>&1 || { echo "no wheel in dist/wheels: bash scripts/release/wheel.sh" >&2; exit 1; }
      dir=$work/python
      mkdir -p "$dir"
      block python >"$dir/quickstart.py"
      t0=$(date +%s.%N)
      python3 -m venv "$dir/venv"
      t1=$(date +%s.%N)
      "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-index \
        --find-links "$root/dist/wheels" loghose
      t2=$(date +%s.%N)
      out=$(cd "$dir" && "$dir/venv/bin/python" quickstart.py)
      t3=$(date +%s.%N)
      echo "$out" | grep -q "delivered: True" || { echo "python: no delivery reported: $out" >&2; exit 1; }
      echo "python: venv $(seconds "$t0" "$t1") s, pip install loghose $(seconds "$t1" "$t2") s," \
        "README quickstart to its output $(seconds "$t2" "$t3") s; total $(seconds "$t0" "$t3") s"
      echo "$out" | sed 's/^/  | /'
      ;;
    node)
      ls dist/npm/loghose-[0-9]*.tgz >/dev/null 2>&1 || { echo "no npm tarballs in dist/npm: bash scripts/release/pack-npm.sh" >&2; exit 1; }
      dir=$work/node
      mkdir -p "$dir"
      block js >"$dir/quickstart.js"
      t0=$(date +%s.%N)
      (cd "$dir" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent \
        "$root"/dist/npm/loghose-[0-9]*.tgz "$root"/dist/npm/loghose-linux-*.tgz >/dev/null)
      t1=$(date +%s.%N)
      out=$(cd "$dir" && node quickstart.js)
      t2=$(date +%s.%N)
      echo "$out" | grep -q "delivered: true" || { echo "node: no delivery reported: $out" >&2; exit 1; }
      echo "node: npm install loghose $(seconds "$t0" "$t1") s, README quickstart to its output" \
        "$(seconds "$t1" "$t2") s; total $(seconds "$t0" "$t2") s"
      echo "$out" | sed 's/^/  | /'
      ;;
    *) echo "usage: bash lab/scripts/first-record.sh [python] [node]" >&2; exit 2 ;;
  esac
done
