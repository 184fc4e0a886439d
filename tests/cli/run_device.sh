#!/usr/bin/env bash
# CLI suite: `uwjit run --device cuda`. On this machine as it is, a missing driver is one clear
# error. Under the tests' stand-in libcuda.so.1 (tests/jit/fake_libcuda.c), which emulates each
# launch on the CPU from the kernel's source in the cache, a run on the device passes its check,
# a second run compiles nothing, and the state equals the CPU run's bit for bit, also sharded
# over two ranks (when mpiexec is given).
uwjit=$1
fake=$2
clangxx=$3
mpiexec=${4:-}
. "$(dirname "$0")/lib.sh"
unset UWJIT_FAKE_CUDA_DEVICES UWJIT_FAKE_CUDA_VERSION
export UWJIT_LOG_LEVEL=off

# same_state A B: the two checkpoints hold the same fields, byte for byte, and integrals within
# 1e-12 (the device sums them in another order).
same_state() {
  python3 "$(dirname "$0")/../../tools/gpu/same_state.py" "$1" "$2"
}

# The machine as it is: without a driver, one error naming what is missing.
if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  run "$uwjit" run heat --size 8 --device cuda --output "$sandbox/out"
  expect_code 2 "run --device cuda without a driver"
  expect_err '^uwjit: error: no NVIDIA driver: libcuda\.so\.1 could not be loaded \(.*\); a CUDA device needs the NVIDIA driver$' \
    "the missing driver is named"
fi
run "$uwjit" run heat --size 8 --device gpu --output "$sandbox/out"
expect_code 2 "run --device gpu"
expect_err 'device "gpu": expected "cpu", "cuda" .* or "cuda:N"' "a bad device names the forms"

# The stand-in driver, emulating each launch from the kernel's source in the cache.
export LD_LIBRARY_PATH=$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UWJIT_FAKE_CUDA_EMULATE=$UWJIT_CACHE_DIR UWJIT_FAKE_CUDA_CLANG=$clangxx
run "$uwjit" run heat --size 8 --device cuda:1 --output "$sandbox/out"
expect_code 2 "run --device cuda:1 with one device"
expect_err 'device cuda:1 was asked for, but the NVIDIA driver lists 1 CUDA device ' \
  "an ordinal the driver lacks is named with the count"
run "$uwjit" run heat --size 8 --device cuda --checked --output "$sandbox/out"
expect_code 2 "run --device cuda --checked"
expect_err 'checked mode runs on CPUs only' "checked mode is refused on a device"

for node in pipe-flow heat; do
  args=(run "$node" --size 12 --steps 9 --output "$sandbox/out")
  [ "$node" = heat ] && args+=(--set boundary=fixed)
  run "$uwjit" "${args[@]}" --device cuda --json --checkpoint "$sandbox/$node-gpu.ckpt"
  expect_code 0 "$node on the device"
  [ "$(json 'd["device"]' <<<"$out")" = "cuda:0 (uwjit fake GPU, sm_90)" ] && ok ||
    fail "$node: the report names the device"
  [ "$(json 'd["compiles"] >= 1' <<<"$out")" = True ] && ok || fail "$node: a cold run compiles"
  run "$uwjit" "${args[@]}" --device cuda
  expect_code 0 "$node on the device again"
  expect_out '; 0 compiles; on cuda:0 \(uwjit fake GPU, sm_90\)$' "$node: a second run compiles nothing"
  run "$uwjit" "${args[@]}" --checkpoint "$sandbox/$node-cpu.ckpt"
  expect_code 0 "$node on the CPU"
  same_state "$sandbox/$node-gpu.ckpt" "$sandbox/$node-cpu.ckpt" && ok ||
    fail "$node: the device's state is the CPU's bit for bit"
done

# The cubins: each kernel's, linked by the driver at its first load and kept beside its entry; a
# second process loads them; another driver version never does, and links the PTX again.
cache=$UWJIT_CACHE_DIR
cubins=("$cache"/*.cubin)
[ "${#cubins[@]}" -eq 3 ] && ok || fail "pipe-flow's, heat's and the halo kernel's cubins are kept"
grep -aq '^loader cuda driver 12040 sm_90$' "${cubins[0]}" && ok ||
  fail "a cubin names the driver version and sm that made it"
heat=(run heat --size 12 --steps 9 --set boundary=fixed --output "$sandbox/out" --device cuda)
run env UWJIT_LOG_LEVEL=info "$uwjit" "${heat[@]}"
expect_code 0 "heat from its cubins"
expect_err 'kernel [0-9a-f]{16}: loaded its cubin, from the disk cache in [0-9.e-]+ ms$' \
  "a second process loads the cubin from disk"
! grep -q 'linked now' <<<"$err" && ok || fail "a second process links nothing"
run env UWJIT_FAKE_CUDA_VERSION=12050 UWJIT_LOG_LEVEL=info "$uwjit" "${heat[@]}" --json \
  --checkpoint "$sandbox/heat-12050.ckpt"
expect_code 0 "heat after a driver upgrade"
expect_err 'the cubin on disk was made by cuda driver 12040 sm_90, not cuda driver 12050 sm_90: linking the PTX again' \
  "a driver upgrade links the PTX again, never loading the old cubin"
same_state "$sandbox/heat-12050.ckpt" "$sandbox/heat-cpu.ckpt" && ok ||
  fail "heat after the driver upgrade still equals the CPU run"
[ "$(grep -al '^loader cuda driver 12050 sm_90$' "$cache"/*.cubin | wc -l)" -eq 2 ] && ok ||
  fail "heat's cubins are replaced by the new driver's"
damaged=$(grep -al '^loader cuda driver 12050 sm_90$' "$cache"/*.cubin | head -1) # one of heat's
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[-9] ^= 1; open(p, "wb").write(b)' \
  "$damaged"
run "$uwjit" cache verify
expect_code 1 "cache verify with a damaged cubin"
expect_out 'BAD  checksum_mismatch: [0-9a-f]{16}\.cubin: its [0-9]+ bytes do not have the SHA-256 of its header' \
  "verify names the damaged cubin"
run env UWJIT_LOG_LEVEL=warn "$uwjit" "${heat[@]}"
expect_code 0 "a run beside a damaged cubin"
expect_err 'rejected the binary of key=[0-9a-f]{16}: its [0-9]+ bytes do not have the SHA-256 of its header; removed, made again from the PTX' \
  "the damaged cubin is rejected, never loaded"
run "$uwjit" cache verify
expect_code 0 "the damaged cubin was removed or replaced by the runs"

if [ -n "$mpiexec" ]; then
  run timeout 300 "$mpiexec" -np 2 "$uwjit" run heat --size 12 --steps 9 --set boundary=fixed \
    --device cuda --shard x --output "$sandbox/out" --checkpoint "$sandbox/heat-np2.ckpt"
  expect_code 0 "mpiexec -np 2 uwjit run heat --device cuda --shard x"
  # Two compiles for the job, not two per rank: the shard's kernel and the kernel packing the
  # face layers (the halo-filling kernel is on disk from the serial runs).
  expect_out '; 2 compiles for the job; rank 0 on cuda:0 \(uwjit fake GPU, sm_90\)$' \
    "the sharded run names rank 0's device and compiles each kernel once for the job"
  same_state "$sandbox/heat-np2.ckpt" "$sandbox/heat-cpu.ckpt" && ok ||
    fail "np 2 on the device gives the serial CPU run's state bit for bit"
  # Two sharded axes over four ranks, 19 populations per cell, periodic along x.
  run timeout 300 "$mpiexec" -np 4 "$uwjit" run pipe-flow --size 12 --steps 9 --device cuda \
    --shard x,z --exchange overlap --output "$sandbox/out" --checkpoint "$sandbox/pipe-np4.ckpt"
  expect_code 0 "mpiexec -np 4 uwjit run pipe-flow --device cuda --shard x,z --exchange overlap"
  same_state "$sandbox/pipe-np4.ckpt" "$sandbox/pipe-flow-cpu.ckpt" && ok ||
    fail "np 4 over two axes on the device gives the serial CPU run's state bit for bit"
fi
finish
