#!/usr/bin/env bash
# Installs the Debian packages uwjit needs (idempotent), then configures and builds.
#
#   tools/setup.sh            install + configure + build (preset "release")
#   tools/setup.sh --deps     install only
#   UWJIT_PRESET=ci tools/setup.sh   another CMake preset
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  llvm-19-dev libclang-19-dev libclang-cpp19-dev clang-19 libzstd-dev
  libclang-rt-19-dev
  libssl-dev
  libopenmpi-dev openmpi-bin
  libboost-dev
  libspdlog-dev libfmt-dev
  doctest-dev
  nlohmann-json3-dev
  clang-format-19
  gdb linux-perf   # the debugger and profiler tests (label debug)
  python3 util-linux
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

[ "${1:-}" = "--deps" ] && exit 0

cd "$(dirname "$0")/.."
preset=${UWJIT_PRESET:-release}
cmake --preset "$preset"
cmake --build --preset "$preset"
