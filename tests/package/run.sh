#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, builds the consumer project against it with
# find_package(uwjit), and runs it.
set -euo pipefail
build=$1
consumer=$2
make_program=$3
prefix=$(mktemp -d "${TMPDIR:-/tmp}/uwjit-package.XXXXXX")
trap 'rm -rf "$prefix"' EXIT
export UWJIT_CACHE_DIR="$prefix/cache"
cmake --install "$build" --prefix "$prefix/install" >/dev/null
test -f "$prefix/install/lib/cmake/uwjit/uwjitConfig.cmake"
test -f "$prefix/install/include/uwjit/engine/engine.hpp"
test -f "$prefix/install/include/uwjit/runtime/simulation.hpp"
test -f "$prefix/install/include/uwjit/nodes/registry.hpp"
test -x "$prefix/install/bin/uwjit"
cmake -S "$consumer" -B "$prefix/build" -G Ninja -DCMAKE_MAKE_PROGRAM="$make_program" \
  -DCMAKE_PREFIX_PATH="$prefix/install" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$prefix/build" >/dev/null
"$prefix/build/consumer"
"$prefix/build/node_host"
"$prefix/install/bin/uwjit" --version
(cd "$prefix" && "$prefix/install/bin/uwjit" run heat --size 8 --steps 5 >/dev/null)
test -f "$prefix/heat.vti"
# The README's worked node, as a project of its own.
cmake -S "$consumer/../../examples/custom_node" -B "$prefix/build-advect" -G Ninja \
  -DCMAKE_MAKE_PROGRAM="$make_program" -DCMAKE_PREFIX_PATH="$prefix/install" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$prefix/build-advect" >/dev/null
"$prefix/build-advect/advect" --size 16 --steps 10 --output "$prefix/advect-out" | grep -qx 'check: PASS'
# A CXX-only project asking for the mpi component (when uwjit was built with MPI).
if [ -f "$prefix/install/lib/cmake/uwjit/uwjitMpiTargets.cmake" ]; then
  cmake -S "$consumer" -B "$prefix/build-mpi" -G Ninja -DCMAKE_MAKE_PROGRAM="$make_program" \
    -DCMAKE_PREFIX_PATH="$prefix/install" -DCMAKE_BUILD_TYPE=Release -DUWJIT_CONSUMER_MPI=ON >/dev/null
  cmake --build "$prefix/build-mpi" --target mpi_host >/dev/null
  out=$(timeout 120 mpiexec -np 2 "$prefix/build-mpi/mpi_host")
  grep -q '^mpi host: 2 ranks, 3 steps$' <<<"$out"
fi
# The Python package (when it was built): installed into the prefix's site-packages, importable
# from there (its RPATH finds the installed libuwjit), and able to compile a kernel.
if [ -n "${UWJIT_TEST_PYTHON:-}" ]; then
  site=$(echo "$prefix"/install/lib/python3*/site-packages)
  test -f "$site/uwjit/__init__.py"
  (cd "$prefix" && PYTHONPATH=$site "$UWJIT_TEST_PYTHON" -s -c '
import sys, uwjit
assert uwjit.__file__.startswith(sys.argv[1]), uwjit.__file__
k = uwjit.Engine().kernel("extern \"C\" int k(const uwjit_kernel_args*) { return 0; }", entry="k")
assert k() == {}
' "$site")
fi
echo "consumer package: 1 passed, 0 failed"
