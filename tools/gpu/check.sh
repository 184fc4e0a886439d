#!/usr/bin/env bash
# The GPU checks, in one command, for a machine with an NVIDIA GPU: the GPU tests, a node run on
# the device twice (the second compiles nothing) and equal to the CPU's run, heat sharded over two
# MPI ranks on the device equal to one rank, and the benchmark's gpu section. It runs the uwjit
# programs on PATH: in the package (tools/gpu/pack.sh) after `. env.sh`, or a build's bin/.
set -uo pipefail

usage() {
  cat <<'EOF'
usage: check.sh [--out DIR] [--quick] [--no-bench]

Runs on device 0, with a cache directory of its own (DIR/cache, emptied first), and writes every
program's output to DIR (default: uwjit-gpu-check): env.txt, gpu_tests.txt, run-*.json,
*.ckpt, bench/bench.md and bench/bench.json. Prints one line per check and a summary; exits 0
when every check passed, 1 when one failed, 77 when there is no GPU (nothing else is run).

  uwjit env                        the driver and the devices
  uwjit_gpu_tests                  every node's GPU kernel and simulations on the device
  uwjit run pipe-flow --device cuda (twice) and on the CPU: the check passes, the second run
                                   compiles nothing, the states are equal bit for bit
  mpiexec -np 1|2 uwjit run heat --device cuda --shard x, and heat on the CPU: equal states,
                                   and two ranks compile what one rank compiles
  uwjit ensemble heat --device cuda, and on the CPU: every member alike, member-steps/s
  uwjit-bench --sections gpu       MLUPS, fraction of the copy, compile and load times, Clang
                                   against NVIDIA's compiler (NVRTC) where it is installed

options:
  --out DIR     where the outputs go (default: uwjit-gpu-check)
  --quick       small grids and a quick benchmark: to check this script, not the GPU
  --no-bench    leave the benchmark out
  --help        show this help
EOF
}

out=uwjit-gpu-check
quick=0
bench=1
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-bench) bench=0; shift ;;
    --help) usage; exit 0 ;;
    *) echo "check.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
for program in uwjit uwjit_gpu_tests uwjit-bench mpiexec python3; do
  command -v "$program" >/dev/null || { echo "check.sh: $program is not on PATH" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
export UWJIT_CACHE_DIR=$out/cache
rm -rf "$UWJIT_CACHE_DIR"
if [ "$(id -u)" = 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

passed=0
failed=0
verdict() { # verdict OK|FAIL WHAT [DETAIL]
  if [ "$1" = OK ]; then
    passed=$((passed + 1))
    echo "PASS  $2${3:+  ($3)}"
  else
    failed=$((failed + 1))
    echo "FAIL  $2${3:+  ($3)}"
  fi
}
# json FILE EXPRESSION: EXPRESSION over the JSON document d in FILE, printed by Python.
json() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }
same_state() { python3 "$here/same_state.py" "$1" "$2" >"$out/same-$3.txt" 2>&1; }

uwjit env >"$out/env.txt" 2>&1
grep -iE 'cuda|driver|sm_' "$out/env.txt"

uwjit_gpu_tests >"$out/gpu_tests.txt" 2>&1
code=$?
if [ "$code" = 77 ]; then
  echo "SKIP  uwjit_gpu_tests: $(tail -1 "$out/gpu_tests.txt")"
  echo "check.sh: no GPU here, so nothing else was run"
  exit 77
fi
[ "$code" = 0 ] && verdict OK "uwjit_gpu_tests" "$(tail -1 "$out/gpu_tests.txt")" ||
  verdict FAIL "uwjit_gpu_tests (exit $code; see $out/gpu_tests.txt)"
grep -E 'first load' "$out/gpu_tests.txt" | head -8

# pipe-flow on the device, twice, and on the CPU.
pipe=(run pipe-flow --output "$out/vtk")
heat=(run heat --output "$out/vtk")
if [ "$quick" = 1 ]; then
  pipe+=(--size 12 --steps 9)
  heat+=(--size 12 --steps 9)
fi
for n in 1 2; do
  uwjit "${pipe[@]}" --device cuda --json --checkpoint "$out/pipe-gpu.ckpt" \
    >"$out/run-pipe-gpu-$n.json" 2>"$out/run-pipe-gpu-$n.err"
  code=$?
  [ "$code" = 0 ] && verdict OK "uwjit run pipe-flow --device cuda (run $n): check passed" \
    "$(json "$out/run-pipe-gpu-$n.json" '"%.1f MLUPS, %d compiles, load %.3f ms" % (d["mlups"], d["compiles"], max(k["load_ms"] for k in d["kernels"]))')" ||
    verdict FAIL "uwjit run pipe-flow --device cuda (run $n) exit $code: $(tail -1 "$out/run-pipe-gpu-$n.err")"
done
[ "$(json "$out/run-pipe-gpu-2.json" 'd["compiles"]' 2>/dev/null)" = 0 ] &&
  verdict OK "the second run compiles nothing" ||
  verdict FAIL "the second run compiles nothing"
uwjit "${pipe[@]}" --checkpoint "$out/pipe-cpu.ckpt" >"$out/run-pipe-cpu.txt" 2>&1
same_state "$out/pipe-gpu.ckpt" "$out/pipe-cpu.ckpt" pipe &&
  verdict OK "pipe-flow: the device's state is the CPU's bit for bit" ||
  verdict FAIL "pipe-flow: the device's state is the CPU's bit for bit" "$(head -3 "$out/same-pipe.txt")"

# heat sharded over one rank on the device and over two, each with a cold cache: the job of two
# compiles as much as the job of one (each kernel once, not once per rank).
for np in 1 2; do
  rm -rf "$UWJIT_CACHE_DIR"
  timeout 600 mpiexec -np "$np" uwjit "${heat[@]}" --device cuda --shard x --json \
    --checkpoint "$out/heat-np$np.ckpt" >"$out/run-heat-np$np.json" 2>"$out/run-heat-np$np.err"
  code=$?
  [ "$code" = 0 ] && verdict OK "mpiexec -np $np uwjit run heat --device cuda --shard x: check passed" \
    "$(json "$out/run-heat-np$np.json" '"%.1f MLUPS, %d compiles" % (d["mlups"], d["compiles"])')" ||
    verdict FAIL "mpiexec -np $np uwjit run heat --device cuda --shard x exit $code: $(tail -1 "$out/run-heat-np$np.err")"
done
compiles=$(json "$out/run-heat-np1.json" 'd["compiles"]' 2>/dev/null)
[ "${compiles:-0}" -gt 0 ] && [ "$(json "$out/run-heat-np2.json" 'd["compiles"]' 2>/dev/null)" = "$compiles" ] &&
  verdict OK "two ranks, a cold cache: as many compiles as one rank ($compiles)" ||
  verdict FAIL "two ranks, a cold cache: as many compiles as one rank"
same_state "$out/heat-np2.ckpt" "$out/heat-np1.ckpt" heat-np &&
  verdict OK "heat: two ranks give one rank's state bit for bit" ||
  verdict FAIL "heat: two ranks give one rank's state bit for bit" "$(head -3 "$out/same-heat-np.txt")"
uwjit "${heat[@]}" --checkpoint "$out/heat-cpu.ckpt" >"$out/run-heat-cpu.txt" 2>&1
same_state "$out/heat-np1.ckpt" "$out/heat-cpu.ckpt" heat-cpu &&
  verdict OK "heat: the device's state is the CPU's bit for bit" ||
  verdict FAIL "heat: the device's state is the CPU's bit for bit" "$(head -3 "$out/same-heat-cpu.txt")"

# An ensemble on the device: one launch a stage for every member, each member as on the CPU
# (steps, status; integrals within 1e-12, summed there by atomics), and its member-steps/s.
sweep=(ensemble heat --size 16 --vary contrast=1:4:256 --until steps:40 --json)
[ "$quick" = 1 ] && sweep=(ensemble heat --size 8 --vary contrast=1:4:16 --until steps:9 --json)
uwjit "${sweep[@]}" --device cuda >"$out/ensemble-gpu.json" 2>"$out/ensemble-gpu.err"
code=$?
[ "$code" = 0 ] && verdict OK "uwjit ensemble heat --device cuda" \
  "$(json "$out/ensemble-gpu.json" '"batch %d, %.0f member-steps/s" % (d["batch"], d["member_steps_per_second"])')" ||
  verdict FAIL "uwjit ensemble heat --device cuda exit $code: $(tail -1 "$out/ensemble-gpu.err")"
uwjit "${sweep[@]}" >"$out/ensemble-cpu.json" 2>"$out/ensemble-cpu.err"
python3 - "$out/ensemble-gpu.json" "$out/ensemble-cpu.json" >"$out/same-ensemble.txt" 2>&1 <<'PY'
import json, math, sys
gpu, cpu = ({m["id"]: m for m in json.load(open(p))["members"]} for p in sys.argv[1:3])
assert gpu.keys() == cpu.keys(), "other members"
for i, m in gpu.items():
    c = cpu[i]
    assert (m["steps"], m["status"]) == (c["steps"], c["status"]), f"member {i}"
    for name, value in m["integrals"].items():
        assert math.isclose(value, c["integrals"][name], rel_tol=1e-12), f"member {i} {name}"
print(len(gpu), "members alike")
PY
[ $? = 0 ] && verdict OK "ensemble: every member on the device as on the CPU" \
  "$(json "$out/ensemble-cpu.json" '"CPU %.0f member-steps/s" % d["member_steps_per_second"]')" ||
  verdict FAIL "ensemble: every member on the device as on the CPU" "$(tail -1 "$out/same-ensemble.txt")"

if [ "$bench" = 1 ]; then
  args=(--sections gpu --out "$out/bench")
  [ "$quick" = 1 ] && args+=(--quick)
  uwjit-bench "${args[@]}" >"$out/bench.txt" 2>&1
  code=$?
  [ "$code" = 0 ] && verdict OK "uwjit-bench ${args[*]}" ||
    verdict FAIL "uwjit-bench ${args[*]} exit $code: $(tail -1 "$out/bench.txt")"
  [ -f "$out/bench/bench.md" ] && grep -E '^\| *gpu' "$out/bench/bench.md"
fi

echo "check.sh: $passed passed, $failed failed; outputs in $out"
[ "$failed" = 0 ]
