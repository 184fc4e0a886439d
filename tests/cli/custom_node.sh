#!/usr/bin/env bash
# CLI suite: a node of one's own run by the driver (examples/custom_node: advect, whose main is
# uwjit::driver::run_main): the options `uwjit run` gives the built-in nodes, on the example's
# binary. With mpiexec: the sharded run, written by one rank.
advect=$(realpath "$1")
mpiexec=${2:-}
. "$(dirname "$0")/lib.sh"
out_dir="$sandbox/out"

run "$advect" --help
expect_code 0 "advect --help"
for word in '^usage: advect \[--size N\|NXxNYxNZ\]' '--set NAME=VALUE' '--output-every N' \
  '--checkpoint FILE' '--restore FILE' '--shard x\[,y\[,z\]\]' '--json' \
  '^  advect      2-D advection-diffusion by a shear flow, with a source$' \
  '^              --shard: x, alone or with y \(the source mask is cut along x\)$' 'Exit codes'; do
  expect_out "$word" "advect --help documents $word"
done

run "$advect" --set help
expect_code 0 "--set help"
expect_out '^  diffusion = 0.1  \(cells\^2 per unit time; accepted: \[0, 1\]\)$' "--set help gives default, unit and range"
expect_out '^      diffusion coefficient D$' "--set help says what a param means"
expect_out '^  source = 0.01$' "a param without a range is listed with its default"
run "$advect" --size 16 --set help
expect_out '^  nx = 16' "--set help shows the defaults of the --size given"

# Misuse: exit 2, the message, the usage line.
run "$advect" --set difusion=1
expect_code 2 "an unknown param"
expect_err '^advect: error: --set difusion=1: .*unknown param "difusion".* \(did you mean diffusion\?\)$' "an unknown param is named, with a suggestion"
run "$advect" --set difusion=$'\e[2J'
[[ "$err" != *$'\e'* ]] && grep -qF -- '--set difusion=\x1b[2J:' <<<"$err" && ok ||
  fail "a program's error message shows control bytes as text: $err"
expect_err "^\(run 'advect --help' for details\)$" "misuse points at --help"
run "$advect" --set nx=2
expect_code 2 "a param the node refuses"
expect_err 'advect: param "nx" must be in \[4, 4096\]' "the node's own refusal is shown"
run "$advect" --steps x
expect_code 2 "--steps x"
expect_err '^advect: error: --steps: expected a whole number >= 0, got "x"$' "--steps x is explained"
run "$advect" --shard y
expect_code 2 "--shard along an axis the kind refuses"
if [ -n "$mpiexec" ]; then
  expect_err 'advect is sharded along x, alone or with y' "the kind says which axes it takes"
else
  expect_err '--shard needs MPI, and advect was built without it' "a build without MPI says so"
fi
run "$advect" heat
expect_code 2 "another node type"
expect_err 'unknown node type "heat" \(known: advect\)' "the node types are named"

# A run: the report, the check, the output.
run "$advect" --size 16 --steps 20 --set diffusion=0.05 --output "$out_dir"
expect_code 0 "a run"
expect_out '^advect: 2-D advection-diffusion by a shear flow, with a source$' "the report names the node"
expect_out '^  params   diffusion=0.05 nx=16 ny=8 source=0.01$' "the report gives the node params"
expect_out '^  advect  compiled  ' "the report gives the kernel and its tier"
expect_out '^  20 steps in [0-9.]+ s: [0-9.]+ MLUPS \(128 cell updates per step\)' "the throughput is reported"
expect_out '^check: PASS$' "the kind's check passes"
expect_out '^  pass  mass balance ' "the mass balance is measured"
expect_out "^  $out_dir/advect.vti$" "the output file is named"
[ -s "$out_dir/advect.vti" ] && ok || fail "advect.vti is written"

# --json, and a series with its .pvd.
run "$advect" --size 16 --steps 7 --output-every 3 --output "$out_dir/series" --json
expect_code 0 "--json --output-every"
printf '%s' "$out" >"$sandbox/report.json"
python3 - "$sandbox/report.json" "$out_dir/series" <<'PY' && ok || fail "--json reports the run and its series, the .pvd lists it"
import json, os, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
assert d["node"] == "advect" and d["steps"] == 7 and d["params"]["nx"] == 16, d
assert d["check"]["passed"] and d["check"]["judged"], d["check"]
names = ["advect_%06d.vti" % s for s in (0, 3, 6, 7)]
assert [os.path.basename(f) for f in d["series"]["files"]] == names, d["series"]
root = ET.parse(os.path.join(sys.argv[2], "advect.pvd")).getroot()
assert [s.get("file") for s in root.find("Collection").findall("DataSet")] == names
image = ET.parse(os.path.join(sys.argv[2], "advect_000003.vti")).getroot().find("ImageData")
fields = {a.get("Name"): a.text.split() for a in image.find("FieldData")}
assert int(fields["step"][0]) == 3 and "kernel_key" in fields and "param_diffusion" in fields
PY

# Checkpoint and restore: 9 + 14 steps give the checkpoint 23 steps give, byte for byte.
run "$advect" --size 16 --steps 23 --output "$out_dir/whole" --checkpoint "$sandbox/whole.ckpt"
expect_code 0 "the uninterrupted run"
run "$advect" --size 16 --steps 9 --output "$out_dir/first" --checkpoint "$sandbox/first.ckpt"
expect_code 0 "the first part"
run "$advect" --restore "$sandbox/first.ckpt" --steps 14 --output "$out_dir/second" --checkpoint "$sandbox/second.ckpt"
expect_code 0 "the restored part"
expect_out "^  restored $sandbox/first.ckpt at step 9$" "the report says where it resumed"
cmp -s "$sandbox/whole.ckpt" "$sandbox/second.ckpt" && ok || fail "the resumed run's checkpoint equals the uninterrupted run's, byte for byte"
cmp -s "$out_dir/whole/advect.vti" "$out_dir/second/advect.vti" && ok || fail "and so does its .vti"
run "$advect" --restore "$sandbox/first.ckpt" --set nx=8
expect_code 2 "--restore with --set"

# Ctrl-C: stops after the current step, reports, writes, exits 130. The signal is sent once the
# kernel line shows the run is about to step (stdout through a fifo, so no timing is guessed).
mkfifo "$sandbox/report.fifo"
"$advect" --size 16 --steps 100000000 --output "$out_dir/stopped" \
  --checkpoint "$sandbox/stopped.ckpt" >"$sandbox/report.fifo" 2>"$sandbox/stopped.err" &
pid=$!
exec 3<"$sandbox/report.fifo"
report=""
while IFS= read -r line <&3; do
  report+="$line"$'\n'
  [[ $line == "  advect  "* ]] && break
done
kill -INT "$pid"
report+=$(cat <&3)
exec 3<&-
wait "$pid" && code=0 || code=$?
out=$report
err=$(cat "$sandbox/stopped.err")
expect_code 130 "a run stopped by SIGINT"
expect_out '^interrupted by SIGINT after step [0-9]+: the report, output and checkpoint are of that step$' "the report says where it stopped"
[ -s "$out_dir/stopped/advect.vti" ] && [ -s "$sandbox/stopped.ckpt" ] && ok || fail "the stopped run wrote its files"
stopped_at=$(sed -nE 's/^interrupted by SIGINT after step ([0-9]+).*/\1/p' <<<"$out")
run "$advect" --restore "$sandbox/stopped.ckpt" --steps 2 --output "$out_dir/stopped" --json
[ -n "$stopped_at" ] && [ "$(json 'd["steps_total"]' <<<"$out")" = $((stopped_at + 2)) ] && ok ||
  fail "the stopped run's checkpoint resumes from step $stopped_at"

# Under MPI: two ranks, sharded along x, each in a directory of its own. The output and the
# checkpoint are written by every rank, each its slab (nothing gathered), so they go where both
# ranks see them: each rank writes its piece of the fields and rank 0 the index (.pvti) and the
# series (.pvd), and the sharded state equals the serial one. A relative name that is another
# directory or file on each rank is refused on both, naming what is wrong.
if [ -n "$mpiexec" ]; then
  mkdir -p "$sandbox/rank0" "$sandbox/rank1"
  run "$mpiexec" --oversubscribe -np 1 --wdir "$sandbox/rank0" "$advect" --size 16 --steps 12 --shard x --output "$sandbox/shared" --checkpoint "$sandbox/sharded.ckpt" --output-every 4 --json : \
    -np 1 --wdir "$sandbox/rank1" "$advect" --size 16 --steps 12 --shard x --output "$sandbox/shared" --checkpoint "$sandbox/sharded.ckpt" --output-every 4 --json
  expect_code 0 "mpiexec -np 2 advect --shard x"
  [ "$(json 'd["ranks"], d["shard"], d["check"]["passed"]' <<<"$out")" = "(2, 'x', True)" ] && ok || fail "one report, of two ranks, checked"
  [ -s "$sandbox/shared/advect.pvti" ] && [ -s "$sandbox/shared/advect/advect_0001.vti" ] && [ -s "$sandbox/shared/advect.pvd" ] && [ -s "$sandbox/sharded.ckpt" ] && ok || fail "the ranks wrote their pieces, rank 0 the index and the series, the ranks the checkpoint"
  grep -q 'file="advect_000012.pvti"' "$sandbox/shared/advect.pvd" && ok || fail "the series lists each step's index"
  run "$mpiexec" --oversubscribe -np 1 --wdir "$sandbox/rank0" "$advect" --size 16 --steps 2 --shard x --output out : \
    -np 1 --wdir "$sandbox/rank1" "$advect" --size 16 --steps 2 --shard x --output out
  expect_code 1 "an output directory that is another directory on each rank"
  expect_err 'rank 1 wrote its piece ".*out/advect/advect_0001.vti", which rank 0 does not see there \(do the ranks share the directory "out"\?\)' \
    "the ranks that do not share the output directory are told so"
  run "$mpiexec" --oversubscribe -np 1 --wdir "$sandbox/rank0" "$advect" --size 16 --steps 2 --shard x --output apart --checkpoint apart.ckpt : \
    -np 1 --wdir "$sandbox/rank1" "$advect" --size 16 --steps 2 --shard x --output apart --checkpoint apart.ckpt
  expect_code 1 "a checkpoint name that is another file on each rank"
  expect_err 'checkpoint apart.ckpt: cannot open the temporary of "apart.ckpt" that another rank made \(do the ranks share its file system\?\)' \
    "the ranks that do not share the checkpoint's directory are told so"
  [ ! -e "$sandbox/rank0/apart.ckpt" ] && [ -z "$(ls -A "$sandbox/rank0" | grep uwjit-tmp)" ] && ok || fail "nothing is left of the refused checkpoint"
  run "$advect" --size 16 --steps 12 --output "$out_dir/serial" --checkpoint "$sandbox/serial.ckpt"
  cmp -s <(python3 "$(dirname "$0")/vtk_arrays.py" "$sandbox/shared/advect.pvti") \
         <(python3 "$(dirname "$0")/vtk_arrays.py" "$out_dir/serial/advect.vti") &&
    ok || fail "the sharded run's field equals the serial run's, bit for bit"
fi

finish
