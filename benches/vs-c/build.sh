#!/usr/bin/env bash
# Builds the vendor's C producer (aliyun-log-c-sdk, Apache-2.0) from a checkout and links the
# S1 / S1-R driver (c_s1.c) against it, for side_by_side.sh.
#
#   bash benches/vs-c/build.sh SRC_DIR [OUT_DIR]
#
# SRC_DIR  a checkout or export of github.com/aliyun/aliyun-log-c-sdk (the figures in
#          BENCHMARKS.md: commit f493278; `git clone https://github.com/aliyun/aliyun-log-c-sdk
#          && git -C aliyun-log-c-sdk checkout f493278`)
# OUT_DIR  default target/vs-c. Produces OUT/c_s1 (the driver, linked against the library as
#          built by its own CMake, Release, its defaults: lz4) and OUT/c-sdk-src (a copy of
#          SRC_DIR whose CMakeLists.txt has -Werror turned into -Wno-error, as gcc 12 warns
#          in the library's sources; no source file is changed).
# Installs the Debian packages it needs when missing (gcc cmake libcurl4-openssl-dev libssl-dev
# liblz4-dev zlib1g-dev).
set -euo pipefail
SRC=${1:?usage: build.sh SRC_DIR [OUT_DIR]}
OUT=${2:-target/vs-c}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$(cd "$SRC" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

missing=()
for p in gcc cmake libcurl4-openssl-dev libssl-dev liblz4-dev zlib1g-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}" >/dev/null
fi

test -f "$SRC/CMakeLists.txt" && test -f "$SRC/src/log_producer_client.h" || {
  echo "$SRC is not an aliyun-log-c-sdk tree" >&2; exit 1; }
if git -C "$SRC" rev-parse HEAD >/dev/null 2>&1; then echo "source commit: $(git -C "$SRC" rev-parse HEAD)"; fi

rm -rf "$OUT/c-sdk-src" "$OUT/build"
cp -a "$SRC" "$OUT/c-sdk-src"
sed -i 's/-Werror/-Wno-error/g' "$OUT/c-sdk-src/CMakeLists.txt"
cmake -S "$OUT/c-sdk-src" -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$OUT/build" --target log_c_sdk_static -j "${JOBS:-2}" >/dev/null
LIB=$(find "$OUT/build" -name liblog_c_sdk_static.a | head -1)
gcc -O2 -Wall -pthread -I"$OUT/c-sdk-src/src" -o "$OUT/c_s1" "$HERE/c_s1.c" "$LIB" \
  -lcurl -lssl -lcrypto -lz -lpthread -lm -ldl
echo "built: $OUT/c_s1"
