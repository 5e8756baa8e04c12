# The platforms scripts/platforms/build.sh builds and scripts/platforms/test.sh runs: for a
# target's short name, its Rust target (ZIG_TARGET: with the glibc baseline zig links
# against), wheel compatibility and tag, npm platform, Debian architecture and qemu-user
# program. Sourced, not run.
# shellcheck shell=bash

ALL_TARGETS=(armv7 aarch64 x64-musl arm64-musl)

target_vars() { # NAME
  case $1 in
    armv7)
      RUST_TARGET=armv7-unknown-linux-gnueabihf ZIG_TARGET=armv7-unknown-linux-gnueabihf.2.17
      WHEEL_COMPAT=manylinux2014 WHEEL_ARCH=armv7l NPM_PLATFORM=linux-arm-gnueabihf
      DEB_ARCH=armhf QEMU=qemu-arm GNU_PREFIX=arm-linux-gnueabihf ;;
    aarch64)
      RUST_TARGET=aarch64-unknown-linux-gnu ZIG_TARGET=aarch64-unknown-linux-gnu.2.17
      WHEEL_COMPAT=manylinux2014 WHEEL_ARCH=aarch64 NPM_PLATFORM=linux-arm64-gnu
      DEB_ARCH=arm64 QEMU=qemu-aarch64 GNU_PREFIX=aarch64-linux-gnu ;;
    x64-musl)
      RUST_TARGET=x86_64-unknown-linux-musl ZIG_TARGET=x86_64-unknown-linux-musl
      WHEEL_COMPAT=musllinux_1_2 WHEEL_ARCH=musllinux_1_2_x86_64 NPM_PLATFORM=linux-x64-musl
      DEB_ARCH="" QEMU="" GNU_PREFIX="" ;;
    arm64-musl)
      RUST_TARGET=aarch64-unknown-linux-musl ZIG_TARGET=aarch64-unknown-linux-musl
      WHEEL_COMPAT=musllinux_1_2 WHEEL_ARCH=musllinux_1_2_aarch64 NPM_PLATFORM=linux-arm64-musl
      DEB_ARCH="" QEMU=qemu-aarch64 GNU_PREFIX="" ;;
    *)
      echo "unknown target $1 (one of: ${ALL_TARGETS[*]})" >&2
      return 1 ;;
  esac
}
