#!/usr/bin/env bash
# The GPU checks in one command (tools/gpu/check.sh, which a GPU machine runs from the package of
# tools/gpu/pack.sh). On this machine as it is: no driver, so it stops after the GPU tests with
# exit 77, saying so. Under the tests' stand-in driver, which emulates each launch on the CPU from
# the kernel's source in the cache: every check passes. Its checkpoint comparison tells states
# apart that differ. The package script refuses a build it cannot carry.
bindir=$1
fake=$2
clangxx=$3
fake_cuda=$4
. "$(dirname "$0")/lib.sh"
tools=$(cd "$(dirname "$0")/../../tools/gpu" && pwd)
export PATH=$bindir:$PATH
unset UWJIT_FAKE_CUDA_DEVICES UWJIT_FAKE_CUDA_VERSION

if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  run bash "$tools/check.sh" --out "$sandbox/none" --quick --no-bench
  expect_code 77 "check.sh without a driver"
  expect_out '^SKIP  uwjit_gpu_tests: skipped: no CUDA device to run on: no NVIDIA driver' \
    "the missing driver is named"
  expect_out '^check.sh: no GPU here, so nothing else was run$' "nothing else is run"
fi

export LD_LIBRARY_PATH=$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UWJIT_FAKE_CUDA_EMULATE=$sandbox/check/cache UWJIT_FAKE_CUDA_CLANG=$clangxx
export UWJIT_CUDA_PATH=$fake_cuda
run bash "$tools/check.sh" --out "$sandbox/check" --quick --no-bench
expect_code 0 "check.sh under the stand-in driver"
for line in '^PASS  uwjit_gpu_tests' \
  '^PASS  uwjit run pipe-flow --device cuda \(run 2\): check passed  \(.*, 0 compiles,' \
  '^PASS  the second run compiles nothing$' \
  "^PASS  pipe-flow: the device's state is the CPU's bit for bit$" \
  '^PASS  two ranks, a cold cache: as many compiles as one rank \(3\)$' \
  "^PASS  heat: two ranks give one rank's state bit for bit$" \
  "^PASS  heat: the device's state is the CPU's bit for bit$" \
  '^PASS  uwjit ensemble heat --device cuda  \(batch 16, [0-9]+ member-steps/s\)$' \
  '^PASS  ensemble: every member on the device as on the CPU  \(CPU [0-9]+ member-steps/s\)$' \
  '^check.sh: 12 passed, 0 failed; outputs in '; do
  expect_out "$line" "check.sh reports /$line/"
done
[ -s "$sandbox/check/gpu_tests.txt" ] && [ -s "$sandbox/check/heat-np2.ckpt" ] && ok ||
  fail "the outputs are kept in --out"

# States that differ are told apart: heat after 9 steps and after 8.
unset LD_LIBRARY_PATH
run uwjit run heat --size 12 --steps 8 --output "$sandbox/out" --checkpoint "$sandbox/heat-8.ckpt"
expect_code 0 "heat, 8 steps"
run python3 "$tools/same_state.py" "$sandbox/check/heat-cpu.ckpt" "$sandbox/heat-8.ckpt"
expect_code 1 "same_state.py on states a step apart"
expect_out '^field heat\.u: [0-9]+ of 1728 values differ, the largest by ' "the field that differs is named"
run python3 "$tools/same_state.py" "$sandbox/check/heat-cpu.ckpt" "$sandbox/check/heat-cpu.ckpt"
expect_code 0 "same_state.py on one state"
expect_out '^same state$' "one state is the same state"
run python3 "$tools/same_state.py" "$sandbox/check/env.txt" "$sandbox/heat-8.ckpt"
expect_code 2 "same_state.py on a file that is no checkpoint"
expect_err 'not a uwjit checkpoint' "the file is named"

# The package is made of a static build only: a build linking the shared LLVM is refused.
run bash "$tools/pack.sh" --build "$bindir/.." --out "$sandbox/uwjit-gpu.tar.xz"
expect_code 1 "pack.sh on a build linking the shared LLVM"
expect_err 'links the shared LLVM or Clang library: pack a build made with -DUWJIT_STATIC_LLVM=ON' \
  "the refusal says which build to pack"
[ ! -e "$sandbox/uwjit-gpu.tar.xz" ] && ok || fail "no archive is written"
run bash "$tools/pack.sh" --bogus
expect_code 2 "pack.sh --bogus"
expect_err "unknown argument '--bogus'" "the unknown argument is named"
finish
