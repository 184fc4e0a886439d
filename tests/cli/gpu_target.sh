#!/usr/bin/env bash
# CLI suite: compiling for a GPU target (PTX, no GPU needed) and its entries in the cache.
uwjit=$1
. "$(dirname "$0")/lib.sh"
cache=$UWJIT_CACHE_DIR

# One kernel text for both targets: a loop on CPUs, one thread per element on GPUs.
cat >"$sandbox/scale.cpp" <<'KERNEL'
#ifdef __NVPTX__
extern "C" __attribute__((nvptx_kernel)) void kernel(uwjit_kernel_args args) {
  const long i = long(__nvvm_read_ptx_sreg_ctaid_x()) * __nvvm_read_ptx_sreg_ntid_x() +
                 __nvvm_read_ptx_sreg_tid_x();
  if (i < args.extents[0]) {
    static_cast<double*>(args.state_out[0])[i] =
        uwm::sqrt(static_cast<const double*>(args.state_in[0])[i]) * args.dt;
  }
}
#else
extern "C" int kernel(const uwjit_kernel_args* args) {
  for (long i = 0; i < args->extents[0]; ++i) {
    static_cast<double*>(args->state_out[0])[i] =
        uwm::sqrt(static_cast<const double*>(args->state_in[0])[i]) * args->dt;
  }
  return 0;
}
#endif
KERNEL
slots=(--state-in u --state-out u --extents n)

run "$uwjit" compile "$sandbox/scale.cpp" "${slots[@]}" --target cuda:sm_90 --json
expect_code 0 "compile --target cuda:sm_90"
gpu=$(python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["ok"] and d["target"] == "cuda:sm_90" and d["tier"] == "compiled", d
assert d["publication"] == "published" and "--target=nvptx64-nvidia-cuda" in d["flags"], d
print(d["key"])' <<<"$out") && ok || fail "compile --target cuda:sm_90 --json names the target and publishes"
[ -f "$cache/$gpu.ptx" ] && [ ! -e "$cache/$gpu.o" ] && ok || fail "the entry is KEY.ptx beside the manifest"
grep -q '^\.target sm_90$' "$cache/$gpu.ptx" && grep -q '^\.visible \.entry kernel(' "$cache/$gpu.ptx" \
  && ok || fail "the PTX targets sm_90 and has the kernel's entry"
if ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null); then
  run "$ptxas" -arch=sm_90 "$cache/$gpu.ptx" -o "$sandbox/scale.cubin"
  expect_code 0 "NVIDIA's ptxas accepts the PTX"
else
  echo "note: ptxas not found: the PTX was not assembled (not counted)"
fi

run "$uwjit" compile "$sandbox/scale.cpp" "${slots[@]}" --target cuda:sm_90
expect_code 0 "the same GPU compile again"
expect_out "^$sandbox/scale\\.cpp: disk \\(key $gpu\\)" "a fresh process finds the PTX on disk"
expect_out '^  target     cuda:sm_90$' "compile names the target"
expect_out '^  ptx        ' "compile reports the PTX size"

run "$uwjit" compile "$sandbox/scale.cpp" "${slots[@]}" --json
host=$(json 'd["key"]' <<<"$out")
[ "$code" -eq 0 ] && [ -f "$cache/$host.o" ] && [ "$host" != "$gpu" ] && ok \
  || fail "the host compile of the same text is another key, with an object"

run "$uwjit" cache list
expect_code 0 "cache list"
expect_out '^key +origin +target +object' "cache list has a target column"
expect_out "^$gpu +source +cuda:sm_90 " "cache list shows the GPU entry's target"
expect_out "^$host +source +host " "cache list shows the host entry's target"
run "$uwjit" cache list --json
python3 -c '
import json, sys
targets = {e["key"]: e["target"] for e in json.load(sys.stdin)}
assert targets == {sys.argv[1]: "cuda:sm_90", sys.argv[2]: "host"}, targets
' "$gpu" "$host" <<<"$out" && ok || fail "cache list --json has each entry's target"
run "$uwjit" cache inspect "$gpu"
expect_out '^target +cuda:sm_90$' "inspect names the target"
run "$uwjit" cache inspect "${gpu:0:8}" --asm
expect_code 0 "inspect --asm of a GPU entry"
cmp -s <(printf '%s\n' "$out") "$cache/$gpu.ptx" && ok || fail "inspect --asm prints the stored PTX"

# A damaged PTX entry: verify finds it, a compile replaces it.
sed -i 's/sm_90/sm_80/' "$cache/$gpu.ptx"
run "$uwjit" cache verify
expect_code 1 "verify finds the damaged PTX"
expect_out "$gpu" "verify names the damaged entry"
run "$uwjit" compile "$sandbox/scale.cpp" "${slots[@]}" --target cuda:sm_90 --json
[ "$(json 'd["tier"]' <<<"$out")" = compiled ] && grep -q '^\.target sm_90$' "$cache/$gpu.ptx" \
  && ok || fail "a damaged PTX entry is compiled again"
run "$uwjit" cache verify
expect_code 0 "the cache is sound again"

run "$uwjit" compile "$sandbox/scale.cpp" --target cuda:sm_9
expect_code 2 "a bad target"
expect_err 'compile: --target: target "cuda:sm_9": expected host or cuda:sm_XX \(accepted: host, .*cuda:sm_90' \
  "a bad target names the accepted forms"
run "$uwjit" compile "$sandbox/scale.cpp" --target gpu --json
expect_code 2 "a bad target with --json"
[ "$(json 'd["error"]["kind"]' <<<"$out")" = usage ] && ok || fail "a bad target is a usage error in JSON"

cat >"$sandbox/decay.cpp" <<'KERNEL'
extern "C" __attribute__((nvptx_kernel)) void kernel(uwjit_kernel_args args) {
  double* u = static_cast<double*>(args.state_out[0]);
  u[__nvvm_read_ptx_sreg_tid_x()] = uwm::exp(-args.dt);
}
KERNEL
mkdir -p "$sandbox/no-cuda"
UWJIT_CUDA_PATH="$sandbox/no-cuda" run "$uwjit" compile "$sandbox/decay.cpp" --state-out u --target cuda:sm_90
expect_code 1 "exp on a GPU without libdevice"
expect_err "error: $sandbox/decay\\.cpp: exp on cuda:sm_90 needs CUDA's libdevice, which was not found \\(looked at: $sandbox/no-cuda/nvvm/libdevice/libdevice\\.10\\.bc \\(UWJIT_CUDA_PATH\\)\\)" \
  "the error names the function and the path looked at"

# A node's GPU kernels, compiled into the cache on a machine without a GPU.
run "$uwjit" warm heat --size 12 --target cuda:sm_90 --json
expect_code 0 "warm heat --target cuda:sm_90"
heat=$(python3 -c '
import json, sys
d = json.load(sys.stdin)
# the node kernel, then the halo kernel a run on a device launches
assert d["ok"] and d["target"] == "cuda:sm_90" and len(d["kernels"]) == 2, d
for k in d["kernels"]:
    assert k["tier"] == "compiled" and k["publication"] == "published", k
print(d["kernels"][0]["key"])' <<<"$out") && ok || fail "warm --json names the target and publishes the kernels"
[ -f "$cache/$heat.ptx" ] && grep -q '^\.target sm_90$' "$cache/$heat.ptx" \
  && grep -q 'shfl\.sync\.down\.b32' "$cache/$heat.ptx" && ok \
  || fail "the heat kernel is PTX for sm_90 with its integral's warp sum"
if ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null); then
  run "$ptxas" -arch=sm_90 "$cache/$heat.ptx" -o "$sandbox/heat.cubin"
  expect_code 0 "NVIDIA's ptxas accepts the heat kernel's PTX"
else
  echo "note: ptxas not found: the node's PTX was not assembled (not counted)"
fi
run "$uwjit" warm heat --size 12 --target cuda:sm_90
expect_code 0 "warm the same node again"
expect_out "^heat +$heat +disk +already in " "a second warm finds the PTX on disk"
run "$uwjit" warm heat --size 12 --json
[ "$code" -eq 0 ] && [ "$(json 'd["target"]' <<<"$out")" = host ] \
  && [ "$(json 'd["kernels"][0]["key"]' <<<"$out")" != "$heat" ] && ok \
  || fail "the host's kernel of the same node is another key"
run "$uwjit" warm fvm --size 12 --target cuda:sm_90 --json
[ "$code" -eq 0 ] && [ "$(json 'd["kernels"][0]["publication"]' <<<"$out")" = published ] && ok \
  || fail "fvm's gather over each cell's faces compiles for a GPU too"
run "$uwjit" warm heat --target cuda:sm_9
expect_code 2 "warm with a bad target"
expect_err 'warm: --target: target "cuda:sm_9": expected host or cuda:sm_XX' "warm names the bad target"

finish
