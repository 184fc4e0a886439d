#!/usr/bin/env bash
# CLI suite: `uwjit env` reports the CUDA driver and never fails because of it: the machine as it
# is, then a stand-in libcuda.so.1 (tests/jit/fake_libcuda.c) first on the loader's path.
uwjit=$1
fake=$2
fake_old=$3
. "$(dirname "$0")/lib.sh"
unset UWJIT_FAKE_CUDA_DEVICES UWJIT_FAKE_CUDA_VERSION

# The machine as it is: what the loader finds for libcuda.so.1 decides what env must say.
run "$uwjit" env
expect_code 0 "env on this machine"
if python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  expect_out '^CUDA            (driver [0-9]+\.[0-9]+ \(libcuda\.so\.1\), [0-9]+ devices?|the NVIDIA driver )' \
    "env names the machine's driver"
else
  expect_out '^CUDA            no NVIDIA driver: libcuda\.so\.1 could not be loaded \(libcuda\.so\.1: cannot open shared object file' \
    "env says there is no NVIDIA driver, with the loader's reason"
  run "$uwjit" env --json
  expect_code 0 "env --json on this machine"
  python3 -c '
import json, sys
c = json.load(sys.stdin)["cuda"]
assert c["library"] == "libcuda.so.1" and not c["loaded"] and not c["usable"], c
assert c["driver_version"] is None and c["devices"] == [] and "no NVIDIA driver" in c["problem"], c
' <<<"$out" && ok || fail "env --json: cuda not loaded, with the problem"
fi

# One device.
export LD_LIBRARY_PATH=$fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
run env UWJIT_FAKE_CUDA_VERSION=12040 "$uwjit" env
expect_code 0 "env with a driver and one device"
expect_out '^CUDA            driver 12\.4 \(libcuda\.so\.1\), 1 device$' "env names the driver and counts the devices"
expect_out '^  device 0      uwjit fake GPU, sm_90, 80\.0 GiB$' "env lists the device: name, sm_XX, memory"
run env UWJIT_FAKE_CUDA_VERSION=13000 UWJIT_FAKE_CUDA_DEVICES=2 "$uwjit" env --json
expect_code 0 "env --json with two devices"
python3 -c '
import json, sys
c = json.load(sys.stdin)["cuda"]
assert c["loaded"] and c["usable"] and c["problem"] is None, c
assert c["driver_version"] == "13.0" and c["driver_version_number"] == 13000, c
assert [d["ordinal"] for d in c["devices"]] == [0, 1], c
d = c["devices"][1]
assert d["name"] == "uwjit fake GPU" and d["arch"] == "sm_90" and d["compute_capability"] == "9.0", d
assert d["total_memory"] == 80 << 30, d
' <<<"$out" && ok || fail "env --json lists both devices"

# No device: cuInit's error, and still exit 0.
run env UWJIT_FAKE_CUDA_DEVICES=0 "$uwjit" env
expect_code 0 "env with a driver but no device"
expect_out '^CUDA            the NVIDIA driver 12\.4 could not initialise CUDA: cuInit: CUDA_ERROR_NO_DEVICE \(no CUDA-capable device is detected\)' \
  "env names cuInit's error"

# A driver too old, and a bad variable beside it: the variable still decides the exit.
export LD_LIBRARY_PATH=$fake_old:$LD_LIBRARY_PATH
run env UWJIT_FAKE_CUDA_VERSION=11020 UWJIT_LOG_LEVEL=loud "$uwjit" env
expect_code 2 "env with a bad variable and an old driver"
expect_out '^CUDA            the NVIDIA driver 11\.2 \(libcuda\.so\.1\) lacks cuLinkCreate_v2, cuLinkAddData_v2, cuLinkComplete, cuLinkDestroy: it is too old' \
  "env names the entry points an old driver lacks"
expect_err '^uwjit: error: UWJIT_LOG_LEVEL' "env still names the bad variable"
finish
