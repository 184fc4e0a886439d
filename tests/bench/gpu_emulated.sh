#!/usr/bin/env bash
# The benchmark's gpu section end to end under the tests' stand-in driver (tests/jit/fake_libcuda.c),
# so that it cannot rot on machines without a GPU: the copy, each node's kernel launched and
# timed, Simulation::step on the device, an ensemble stepped as one batch there, the warm cubin
# load of a second engine and, where NVRTC
# is installed, the same cells compiled by it (both must write the same bits), else the reason it
# was not measured. The stand-in emulates a kernel from its source in the cache named by
# UWJIT_FAKE_CUDA_EMULATE, and the section compiles with the disk cache off, so `uwjit warm`
# puts the kernels of the quick sizes (heat 64^3, pipe-flow 48^3) there first, and a sweep of
# the quick ensemble (heat 8^3) its batch and halo kernels. The numbers
# measure the emulation, not a GPU, and are not asserted.
#   gpu_emulated.sh UWJIT UWJIT_BENCH FAKE_LIBCUDA_DIR CLANGXX
set -euo pipefail
uwjit=$1
bench=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/uwjit-bench-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH=$3${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UWJIT_FAKE_CUDA_DEVICES=1 UWJIT_FAKE_CUDA_EMULATE=$work/cache UWJIT_FAKE_CUDA_CLANG=$4
export UWJIT_CACHE_DIR=$work/cache UWJIT_LOG_LEVEL=error
"$uwjit" warm heat --size 64 --target cuda:sm_90 > /dev/null
"$uwjit" warm pipe-flow --size 48x48x48 --target cuda:sm_90 > /dev/null
"$uwjit" ensemble heat --size 8 --vary contrast=1:4:16 --until steps:1 --device cuda > /dev/null
"$bench" --sections gpu --quick --rounds 1 --out "$work/out" > /dev/null
"$bench" --check "$work/out/bench.json"
python3 - "$work/out/bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
gpu = d["sections"]["gpu"]
assert gpu["status"] == "measured", gpu
assert gpu["device"]["name"] == "uwjit fake GPU" and gpu["device"]["arch"] == "sm_90", gpu
figures = {r["figure"]: r for r in d["rows"] if r["section"] == "gpu"}
for node in ("heat 64×64×64", "pipe-flow 48×48×48"):
    for what in ("MLUPS on the GPU", "MLUPS of Simulation::step on the GPU",
                 "fraction of the copy bandwidth", "cold PTX compile, in process",
                 "first load of its PTX (the driver's JIT)",
                 "warm load of its cubin in a second process"):
        row = figures[f"{node}: {what}"]
        assert row["value"]["n"] == 1 and row["value"]["median"] > 0, row
    assert "the cubin the first process's driver linked" in \
        figures[f"{node}: warm load of its cubin in a second process"]["note"]
    nvrtc = figures.get(f"{node}: Clang's kernel speed relative to NVIDIA's compiler's")
    if "nvrtc" in gpu:
        assert nvrtc is not None and nvrtc["note"].endswith("both write the same bits"), nvrtc
    else:
        assert nvrtc is None and "NVRTC" in gpu["not_measured"]["clang_vs_nvrtc"], gpu
for what in ("member-steps per second on the GPU", "fraction of the copy bandwidth"):
    row = figures[f"heat 8^3, 16 members as one batch: {what}"]
    assert row["value"]["n"] == 1 and row["value"]["median"] > 0, row
print("bench gpu emulated: the section measured"
      + (" (with NVRTC)" if "nvrtc" in gpu else " (NVRTC not installed: " +
         gpu["not_measured"]["clang_vs_nvrtc"][:60] + "...)"))
PY
