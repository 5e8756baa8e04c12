#!/usr/bin/env bash
# Debian sid (unstable) in a chroot, with the CPython versions Debian ships there (3.13, 3.14,
# 3.15 today) and what building the native module needs (gcc, the -dev headers). Cached
# outside the checkout ($LOGHOSE_RUNTIMES, default /var/cache/loghose-runtimes/sid): made once
# (about a minute), then reused.
#
#   bash scripts/runtimes/sid-chroot.sh path              prints the chroot's root, making it first
#   bash scripts/runtimes/sid-chroot.sh install PKG...    installs Debian packages in it (once)
#   bash scripts/runtimes/sid-chroot.sh run CMD...        runs CMD in the chroot, in this checkout
#
# `run` binds /proc, /dev, /tmp, the checkout (at the same path) and the Rust toolchain
# ($CARGO_HOME, $RUSTUP_HOME, same paths) into the chroot, and unbinds them when CMD ends.
# Needs root (debootstrap, mount, chroot), which this project's machines have.
set -euo pipefail

cache=${LOGHOSE_RUNTIMES:-/var/cache/loghose-runtimes}
root=$cache/sid
checkout=$(cd "$(dirname "$0")/../.." && pwd)
packages=python3.13,python3.13-venv,python3.13-dev,python3.14,python3.14-venv,python3.14-dev
packages+=,python3.15,python3.15-venv,python3.15-dev,gcc,libc6-dev,ca-certificates,procps

make_root() {
  [ -f "$root/.loghose-ready" ] && return 0
  command -v debootstrap >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  }
  # A half-made root may still have binds of an interrupted `run` in it (the checkout, the
  # toolchain): unbind them, and never let the removal cross into another file system.
  awk -v root="$root/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r mounted; do umount -l "$mounted"; done
  rm -rf --one-file-system "$root" && mkdir -p "$cache"
  debootstrap --variant=minbase --include="$packages" sid "$root" http://deb.debian.org/debian \
    >"$cache/sid-debootstrap.log" 2>&1 || {
    tail -n 20 "$cache/sid-debootstrap.log" >&2
    exit 1
  }
  touch "$root/.loghose-ready"
}

case ${1:-} in
  path)
    make_root
    echo "$root"
    ;;
  install)
    # Packages some step needs beyond the list above (the Windows step's Wine 10), installed on
    # first use and kept with the root.
    shift
    make_root
    missing=()
    for package in "$@"; do
      chroot "$root" dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q '^install ok installed' ||
        missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && exit 0
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
    mount --bind /proc "$root/proc"
    trap 'umount -l "$root/proc"' EXIT
    # The archive the root was made from may be a snapshot past its Release file's Valid-Until.
    chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive bash -c \
      'apt-get -qq -o Acquire::Check-Valid-Until=false update &&
       apt-get -qq -o Acquire::Check-Valid-Until=false install -y --no-install-recommends "$@"' \
      _ "${missing[@]}" >"$cache/sid-install.log" 2>&1 || {
      tail -n 20 "$cache/sid-install.log" >&2
      exit 1
    }
    ;;
  run)
    shift
    make_root
    cargo_home=${CARGO_HOME:-$HOME/.cargo}
    rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
    mounted=()
    unbind() {
      local i
      for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
    }
    trap unbind EXIT
    bind() {
      mkdir -p "$root$1"
      mountpoint -q "$root$1" || { mount --bind "$1" "$root$1" && mounted+=("$root$1"); }
    }
    for dir in /proc /dev /tmp "$checkout" "$cargo_home" "$rustup_home"; do bind "$dir"; done
    # The machine's name servers and certificate authorities (a registry may be reached
    # through a proxy of its own), and its environment less what names the machine's own
    # Python or toolchain paths.
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
    cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
    [ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
    chroot "$root" /usr/bin/env -u VIRTUAL_ENV -u PYENV_ROOT -u PYENV_VERSION -u PYTHONPATH \
      -u PIP_FIND_LINKS -u LD_LIBRARY_PATH \
      HOME=/root PATH="$cargo_home/bin:/usr/local/bin:/usr/bin:/bin" \
      CARGO_HOME="$cargo_home" RUSTUP_HOME="$rustup_home" \
      bash -c 'cd "$0" && exec "$@"' "$checkout" "$@"
    ;;
  *)
    echo "usage: sid-chroot.sh path | install PKG... | run CMD..." >&2
    exit 2
    ;;
esac
