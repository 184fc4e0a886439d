#!/usr/bin/env bash
# Installs the Debian packages uwjit needs (idempotent), then configures and builds: the uwjit
# command first, then the library and the Python module (preset "release"), or everything the
# preset has (tests, benchmarks, examples: "ci" and the others). Quiet: apt's and CMake's output go
# to a log file, named at the start; a failure shows the log's last lines and keeps the exit status.
#
#   tools/setup.sh                    install + configure + build (preset "release")
#   tools/setup.sh --verbose          the same, showing apt's and CMake's output as well
#   tools/setup.sh --deps             install only
#   UWJIT_PRESET=ci tools/setup.sh    another CMake preset
set -euo pipefail

usage() { echo "usage: tools/setup.sh [--deps] [--verbose]"; }
verbose=0
deps_only=0
for arg in "$@"; do
  case $arg in
  --verbose | -v) verbose=1 ;;
  --deps) deps_only=1 ;;
  --help | -h) usage; exit 0 ;;
  *) echo "setup: unknown option $arg" >&2; usage >&2; exit 2 ;;
  esac
done

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
  libcairo2-dev fonts-dejavu-core   # uwjit run --plot
  libhdf5-dev python3-h5py   # ensemble output files (HDF5), and h5py to read them
  clang-format-19
  gdb linux-perf   # the debugger and profiler tests (label debug)
  python3 util-linux
  pybind11-dev python3-dev python3-numpy python3-mpi4py python3-pytest python3-sympy   # uwjit for Python
  python3-sphinx python3-myst-parser python3-breathe doxygen   # the manual (tools/docs.sh)
  python3-markdown-it   # its code blocks' test (tests/docs)
)

invoked_from=$PWD
cd "$(dirname "$0")/.."
root=$PWD
preset=${UWJIT_PRESET:-release}
mkdir -p build
log=$root/build/setup.log
: >"$log"
echo "setup: log in $log$([ $verbose = 1 ] || echo ' (--verbose shows it here)')"

# step DESCRIPTION COMMAND...: runs COMMAND with its output in the log (and here with
# --verbose); on failure, shows the log's tail and exits with COMMAND's status.
step() {
  local what=$1 start status=0
  shift
  start=$(date +%s)
  echo "== $what: $*" >>"$log"
  if [ $verbose = 1 ]; then
    echo "setup: $what"
    "$@" 2>&1 | tee -a "$log" || status=${PIPESTATUS[0]}
  else
    printf 'setup: %s ... ' "$what"
    "$@" >>"$log" 2>&1 || status=$?
  fi
  if [ "$status" -ne 0 ]; then
    [ $verbose = 1 ] || echo "failed"
    echo "setup: $what failed (exit $status): $*" >&2
    echo "setup: the last 40 lines of $log:" >&2
    tail -n 40 "$log" | sed 's/^/  | /' >&2
    exit "$status"
  fi
  if [ $verbose = 1 ]; then
    echo "setup: $what: done in $(($(date +%s) - start)) s"
  else
    echo "done in $(($(date +%s) - start)) s"
  fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  echo "setup: installing ${missing[*]}"
  step "apt-get update" "${sudo_cmd[@]}" apt-get update
  step "apt-get install (${#missing[@]} packages)" "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

[ $deps_only = 1 ] && exit 0

bin=$root/build/$preset/bin
shown=$bin # how the next steps name it: relative where the script was run from the checkout
[ "$invoked_from" = "$root" ] && shown=build/$preset/bin
step "configuring (preset $preset)" cmake --preset "$preset"
step "building uwjit" cmake --build --preset "$preset" --target uwjit_cli
echo "setup: $bin/uwjit is ready"
if [ "$preset" = release ]; then
  # The main job needs the command, the library (with its MPI part) and the Python module; the
  # benchmarks and examples are built by the commands that use them (tools/bench/run.sh, the
  # "ci" preset of tools/test.sh).
  targets=()
  available=$(cmake --build --preset "$preset" --target help 2>/dev/null || true)
  for target in uwjit uwjit_mpi uwjit_python; do
    grep -q "^$target:" <<<"$available" && targets+=("$target")
  done
  step "building the library and the Python module" cmake --build --preset "$preset" \
    --target "${targets[@]}"
else
  step "building the rest (library tests, benchmarks)" cmake --build --preset "$preset"
fi

# The Python module, importable from the build tree without PYTHONPATH: a uwjit.pth in the user
# site directory of the interpreter it was built for (that of any python of the same version,
# e.g. python3 on the PATH, too), else in its site directory.
python_line=""
pydir=$root/build/$preset/python
python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "build/$preset/CMakeCache.txt" 2>/dev/null || true)
if [ -n "$python" ] && [ -f "$pydir/uwjit/__init__.py" ]; then
  pth=$("$python" - "$pydir" <<'PY'
import os, site, sys
dirs = ([site.getusersitepackages()] if site.ENABLE_USER_SITE else []) + site.getsitepackages()
for d in dirs:
    try:
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "uwjit.pth"), "w") as f:
            f.write(sys.argv[1] + "\n")
        print(os.path.join(d, "uwjit.pth"))
        break
    except OSError:
        continue
PY
)
  if [ -n "$pth" ]; then
    echo "setup: the Python module uwjit is importable by $python (wrote $pth; rm it to undo)"
    python_line="  $python -c 'import uwjit; print(uwjit.__version__)'   # the Python module"
  fi
fi

cat <<EOF

Next steps:
  $shown/uwjit run pipe-flow          # the D3Q19 pipe flow: compiled, checked, written for ParaView
  $shown/uwjit run pipe-flow --plot   # ... and drawn as PNG pictures
  $shown/uwjit --help                 # every command; 'uwjit help run' for one
$python_line

uwjit on the PATH, for this shell (add the line to ~/.bashrc to keep it):
  export PATH="$bin:\$PATH"
or installed (the uwjit command, the library and its CMake package for find_package(uwjit)):
  cmake --install build/$preset --prefix ~/.local     # then ~/.local/bin on the PATH
EOF
