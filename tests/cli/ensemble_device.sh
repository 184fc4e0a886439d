#!/usr/bin/env bash
# CLI suite: `uwjit ensemble --device cuda`. On this machine as it is, a missing driver is one
# clear error. Under the tests' stand-in libcuda.so.1 (tests/jit/fake_libcuda.c), which emulates
# each launch on the CPU from the kernel's source in the cache, a sweep on the device gives every
# member the fields of the same sweep on the CPU bit for bit (heat and pipe-flow, with slots
# refilled), its default batch is sized from the device's free memory (cuMemGetInfo), a batch
# beyond it is refused, and an interrupted sweep resumed from its checkpoint ends as an
# uninterrupted one; with the Python module, a Python node's members on the device equal the
# CPU's too.
# Over two MPI ranks (with --mpiexec), members spread over the ranks and a pipeline of two
# stages on the device give the serial CPU's members too.
# Usage: ensemble_device.sh PATH/TO/uwjit FAKE_LIBCUDA_DIR CLANGXX [--python MODULE_DIR]
#        [--mpiexec MPIEXEC]
uwjit=$1
fake=$2
clangxx=$3
shift 3
module=
mpiexec=
while [ $# -gt 0 ]; do
  case $1 in
    --python) module=$2; shift 2 ;;
    --mpiexec) mpiexec=$2; shift 2 ;;
    *) echo "ensemble_device.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
. "$(dirname "$0")/lib.sh"
unset UWJIT_FAKE_CUDA_DEVICES UWJIT_FAKE_CUDA_VERSION UWJIT_FAKE_CUDA_FREE_MIB
export UWJIT_LOG_LEVEL=off
py=/usr/bin/python3
[ -x "$py" ] || py=python3

# same_members A.h5 B.h5: the files hold the same members (ids, params, steps, status), each
# member's fields byte for byte, and integrals within 1e-12 (the device sums them in another
# order); prints what differs.
same_members() {
  "$py" - "$1" "$2" <<'PY'
import sys
import h5py
import numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
order_a, order_b = np.argsort(a["id"][:]), np.argsort(b["id"][:])
problems = []
if a["id"][:][order_a].tolist() != b["id"][:][order_b].tolist():
    problems.append(f"ids {sorted(a['id'][:])} and {sorted(b['id'][:])}")
else:
    for name in ("steps", "status"):
        if a[name][:][order_a].tolist() != b[name][:][order_b].tolist():
            problems.append(name)
    for group in ("params", "fields"):
        for name in a[group]:
            x, y = a[group][name][:][order_a], b[group][name][:][order_b]
            if x.shape != y.shape or x.tobytes() != y.tobytes():
                problems.append(f"{group}/{name}")
    for name in a["integrals"]:
        x, y = a["integrals"][name][:][order_a], b["integrals"][name][:][order_b]
        if not np.allclose(x, y, rtol=1e-12, atol=0):
            problems.append(f"integrals/{name}: {x} and {y}")
if problems:
    print("differ:", ", ".join(problems))
    sys.exit(1)
PY
}
have_h5py() { "$py" -c "import h5py" 2>/dev/null; }

run "$uwjit" ensemble heat --size 6 --vary contrast=1:2:2 --until steps:2 --device gpu
expect_code 2 "ensemble --device gpu"
expect_err 'ensemble: device "gpu": expected "cpu", "cuda" .* or "cuda:N"' "a bad device names the forms"
# The machine as it is: without a driver, one error naming what is missing.
if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  run "$uwjit" ensemble heat --size 6 --vary contrast=1:2:2 --until steps:2 --device cuda
  expect_code 2 "ensemble --device cuda without a driver"
  expect_err 'no NVIDIA driver: libcuda\.so\.1 could not be loaded' "the missing driver is named"
fi

# The stand-in driver, emulating each launch from the kernel's source in the cache.
export LD_LIBRARY_PATH=$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export UWJIT_FAKE_CUDA_EMULATE=$UWJIT_CACHE_DIR UWJIT_FAKE_CUDA_CLANG=$clangxx

sweep=(ensemble heat --size 8 --set boundary=fixed --vary contrast=1:4:4 --until steps:9)
run "$uwjit" "${sweep[@]}" --device cuda --json --output "$sandbox/heat-gpu.h5"
expect_code 0 "heat on the device"
[ "$(json 'd["device"]' <<<"$out")" = "cuda:0 (uwjit fake GPU, sm_90)" ] && ok ||
  fail "the report names the device"
json 'd["batch_reason"]' <<<"$out" | grep -q 'free of 85.9 GB on cuda:0 (uwjit fake GPU, sm_90) (cuMemGetInfo)' &&
  ok || fail "the batch is sized from the device's free memory: $(json 'd["batch_reason"]' <<<"$out")"
[ "$(json 'sorted(m["id"] for m in d["members"])' <<<"$out")" = "[0, 1, 2, 3]" ] && ok ||
  fail "each member once"
run "$uwjit" "${sweep[@]}" --json --output "$sandbox/heat-cpu.h5"
expect_code 0 "heat on the CPU"
[ "$(json 'd["device"]' <<<"$out")" = cpu ] && ok || fail "the CPU report says cpu"
if have_h5py; then
  same_members "$sandbox/heat-gpu.h5" "$sandbox/heat-cpu.h5" && ok ||
    fail "heat: every member on the device equals the CPU's"
fi

# pipe-flow, with a batch of 2 for 3 members: a slot is refilled on the device.
sweep=(ensemble pipe-flow --size 12 --vary tau=0.6:1.2:3 --until steps:7)
run "$uwjit" "${sweep[@]}" --device cuda --batch 2 --output "$sandbox/pipe-gpu.h5"
expect_code 0 "pipe-flow on the device, a slot refilled"
expect_out 'batch 2 as set' "the batch as set"
expect_out 'on cuda:0 \(uwjit fake GPU, sm_90\):' "the text report names the device"
run "$uwjit" "${sweep[@]}" --output "$sandbox/pipe-cpu.h5"
expect_code 0 "pipe-flow on the CPU"
if have_h5py; then
  same_members "$sandbox/pipe-gpu.h5" "$sandbox/pipe-cpu.h5" && ok ||
    fail "pipe-flow: every member on the device equals the CPU's"
fi

# A Python node in the cell form: its members on the device are the CPU's, bit for bit.
if [ -n "$module" ]; then
  run env PYTHONPATH="$module" "$py" - <<'PY'
import numpy as np
import uwjit

class Relax(uwjit.Node):
    """u relaxes towards a per-member target (static data) at a run-time rate."""

    def __init__(self, params):
        super().__init__("relax", "relax", params)

    def layout(self):
        p = self.params
        return uwjit.Layout(uwjit.grid([p["nx"], p["ny"]]), [uwjit.StateField("u")],
                            integrals=["total"], dt=0.1)

    def build_static_data(self):
        p = self.params
        target = np.fromfunction(lambda i, j: np.sin(i + p["phase"] * j), (p["nx"], p["ny"]))
        return {"target": uwjit.StaticArray(target)}

    def initial_state(self, state):
        nx, ny = state["u"].shape
        state["u"][...] = np.arange(nx * ny).reshape(nx, ny) / 7.0

    def emit_update(self, writer):
        writer.state_out("u")
        writer.param("rate", self.params["rate"])
        writer.static_array("target", writer.provided_dtype("target"),
                            [writer.domain(0), writer.domain(1)])
        writer.integral("total")
        writer.for_each_cell(["i", "j"], """
      u_out(i, j) = u(i, j) + rate * args->dt * (target(i, j) - u(i, j));
      total += u_out(i, j);
""")

engine = uwjit.Engine()
base = {"nx": 7, "ny": 45, "rate": 0.5, "phase": 0.3}

def sweep(device):
    ensemble = uwjit.Ensemble(engine, Relax, base, vary={"rate": (0.2, 1.0, 3), "phase": (0, 1, 2)},
                              until=["steps:6"], batch=4, device=device)
    ensemble.run()
    return ensemble.device, sorted(ensemble.take(), key=lambda m: m["id"])

device, on_gpu = sweep("cuda")
_, on_cpu = sweep("cpu")
assert device == "cuda:0 (uwjit fake GPU, sm_90)", device
assert [m["id"] for m in on_gpu] == list(range(6))
for g, c in zip(on_gpu, on_cpu):
    assert g["steps"] == c["steps"] == 6 and g["params"] == c["params"]
    assert np.array_equal(g["fields"]["u"], c["fields"]["u"]), g["id"]
    assert abs(g["integrals"]["total"] - c["integrals"]["total"]) <= 1e-12 * abs(c["integrals"]["total"])
print("python members alike")
PY
  expect_code 0 "a Python node's ensemble on the device"
  expect_out '^python members alike$' "a Python node's members on the device equal the CPU's"
fi

# Over two ranks: members spread over them (a batch of 2 each), and a pipeline whose second
# stage goes on 4 steps from the first's 9: every member as on the CPU alone.
if [ -n "$mpiexec" ] && have_h5py; then
  sweep=(ensemble heat --size 8 --vary contrast=1:4:6)
  run timeout 300 "$mpiexec" -np 2 "$uwjit" "${sweep[@]}" --until steps:9 --device cuda --batch 2 \
    --output "$sandbox/np2-gpu.h5"
  expect_code 0 "mpiexec -np 2 uwjit ensemble --device cuda"
  run "$uwjit" "${sweep[@]}" --until steps:9 --output "$sandbox/np2-cpu.h5"
  same_members "$sandbox/np2-gpu.h5" "$sandbox/np2-cpu.h5" && ok ||
    fail "members over two ranks on the device equal the serial CPU's"
  run timeout 300 "$mpiexec" -np 2 "$uwjit" "${sweep[@]}" --until steps:9 --stage 'until=steps:4' \
    --device cuda --output "$sandbox/pipe2-gpu.h5"
  expect_code 0 "mpiexec -np 2 uwjit ensemble --stage ... --device cuda"
  run "$uwjit" "${sweep[@]}" --until steps:13 --output "$sandbox/pipe2-cpu.h5"
  same_members "$sandbox/pipe2-gpu.h5" "$sandbox/pipe2-cpu.h5" && ok ||
    fail "a pipeline's members on the device equal the CPU's run alone for both stages' steps"
fi

# The batch from the device's memory: 1 MiB free holds few heat members of 8^3.
run env UWJIT_FAKE_CUDA_FREE_MIB=1 "$uwjit" ensemble heat --size 8 --vary contrast=1:4:40 \
  --until steps:2 --device cuda --json
expect_code 0 "a sweep on a device with 1 MiB free"
reason=$(json 'd["batch_reason"]' <<<"$out")
batch=$(json 'd["batch"]' <<<"$out")
grep -q "^$batch from memory: 25% of the 1.05 MB free" <<<"$reason" && [ "$batch" -lt 40 ] && ok ||
  fail "a small device's free memory bounds the batch: $batch, $reason"
[ "$(json 'len(d["members"])' <<<"$out")" = 40 ] && ok || fail "every member of the 40 leaves"
run env UWJIT_FAKE_CUDA_FREE_MIB=1 "$uwjit" ensemble heat --size 8 --vary contrast=1:4:40 \
  --until steps:2 --device cuda --batch 40
expect_code 2 "a batch beyond the device's memory"
expect_err 'a batch of 40 members needs about .* free of .* \(cuMemGetInfo\) fits [0-9]+; .*: a batch of at most [0-9]+' \
  "the refusal names the device's memory"

# Interrupted (Ctrl-C) with --checkpoint, then resumed: every member as uninterrupted.
slow=(ensemble heat --size 6 --set boundary=fixed --vary courant=0.00001:0.16:4
  --until 'change:heat<1e-10' --until steps:30000 --batch 2 --device cuda --json)
if have_h5py; then
  "$uwjit" "${slow[@]}" --output "$sandbox/cut.h5" --checkpoint "$sandbox/cut.ckpt" \
    --checkpoint-every 1000 >/dev/null 2>&1 &
  pid=$!
  "$py" - "$sandbox/cut.h5" <<'PY'
import sys, time
import h5py
for _ in range(1200):
    try:
        with h5py.File(sys.argv[1], "r", locking=False) as f:
            if len(f["id"]) > 0:
                break
    except (OSError, KeyError):
        pass
    time.sleep(0.1)
PY
  kill -INT "$pid"
  wait "$pid" && code=0 || code=$?
  [ "$code" = 130 ] && ok || fail "the interrupted sweep exits 130 ($code)"
  run "$uwjit" "${slow[@]}" --output "$sandbox/cut.h5" --resume "$sandbox/cut.ckpt"
  expect_code 0 "the interrupted sweep resumed on the device"
  run "$uwjit" "${slow[@]}" --output "$sandbox/whole.h5"
  expect_code 0 "the same sweep uninterrupted"
  same_members "$sandbox/cut.h5" "$sandbox/whole.h5" && ok ||
    fail "resumed, every member as uninterrupted"
fi
finish
