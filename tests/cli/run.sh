#!/usr/bin/env bash
# CLI suite: uwjit run on the real binary: reports, physics verdicts, VTK files, checkpoints and
# usage errors.
uwjit=$1
. "$(dirname "$0")/lib.sh"
out_dir="$sandbox/out"

run "$uwjit" run --help
expect_code 0 "run --help"
for word in '--size N\|NXxNYxNZ' '--steps N' '--output DIR' '--json' '--set NAME=VALUE' \
  '--checkpoint FILE' '--restore FILE' 'heat' 'pipe-flow' 'fvm' 'mlp' 'MLUPS' 'Exit codes'; do
  expect_out "$word" "run --help documents $word"
done

run "$uwjit" --help
expect_out '^  run ' "uwjit --help lists run"

# Usage errors exit 2 and say what is wrong.
run "$uwjit" run
expect_code 2 "run without a node"
expect_err 'missing argument NODE' "run without a node names NODE"
run "$uwjit" run lbm
expect_code 2 "an unknown node"
expect_err 'unknown node type "lbm" \(built-in: heat, pipe-flow, fvm, mlp\)' "an unknown node is named"
for size in 0 3x4 abc 4x4x0 -2; do
  run "$uwjit" run heat --size "$size"
  expect_code 2 "--size $size"
  expect_err '--size: expected N or NXxNYxNZ' "--size $size is explained"
done
run "$uwjit" run fvm --size 8x8x8
expect_code 2 "fvm with three sizes"
expect_err 'fvm: the size is one number' "fvm's size is explained"
run "$uwjit" run heat --steps -1
expect_code 2 "--steps -1"
expect_err '--steps: expected a whole number' "--steps -1 is explained"
run "$uwjit" run heat --set bogus=1
expect_code 2 "--set of an unknown param"
expect_err 'unknown param "bogus" \(known: amplitude, boundary' "--set lists the params"
run "$uwjit" run heat --set nx=big
expect_code 2 "--set with a bad value"
expect_err 'param "nx": expected an integer, got "big"' "--set names the param and type"
run "$uwjit" run heat --set boundary=sticky
expect_code 2 "a bad choice"
expect_err 'param "boundary" = "sticky" \(accepted: insulating, periodic, fixed\)' "a bad choice lists the choices"
# A message that quotes a value (here --set's; a checkpoint's params alike) sends no control
# byte to the terminal: it shows each as \xHH.
run "$uwjit" run heat --set boundary=$'\e]0;retitled\a'
expect_code 2 "a choice with escapes"
[[ "$err" != *$'\e'* && "$err" != *$'\a'* ]] && ok || fail "an error message sends no control byte to the terminal"
expect_err 'param "boundary" = "\\x1b\]0;retitled\\x07"' "an error message shows control bytes as text"
# heat between a hot and a cold wall (dirichlet faces): the linear steady profile, checked.
run "$uwjit" run heat --size 6x3x3 --steps 900 --set boundary=fixed --set u_low=2 --set u_high=-1 --set courant=0.16
expect_code 0 "run heat between fixed walls"
expect_out '^  pass  steady linear profile ' "fixed walls reach the linear profile"
run "$uwjit" run heat --set boundary=fixed --set u_low=nan
expect_code 2 "a wall value that is not a number"
expect_err 'param "u_low"' "the bad wall value is named"
run "$uwjit" run pipe-flow --set radius=50
expect_code 2 "a pipe wider than its lattice"
expect_err 'param "radius" = 50 is out of range' "the radius range is explained"
run "$uwjit" run heat --set help
expect_code 0 "--set help"
expect_out '^  courant = 0.1  \(accepted: \[1e-12, 1/6\]\)$' "--set help gives each param's default and range"
expect_out '^      dt = courant / \(kappa max\(1, contrast\)\); stable below 1/6$' "--set help says what a param means"
expect_out '^  kappa = 1.0  \(cells\^2 per unit time; accepted: \[1e-100, 1e12\]\)$' "--set help gives the unit"
for node in heat pipe-flow fvm mlp; do
  run "$uwjit" run $node --set help
  documented=$(grep -oE '^  [a-z_0-9]+ = ' <<<"$out" | sed -E 's/^  ([a-z_0-9]+) = /\1/' | sort | tr '\n' ' ')
  run "$uwjit" run $node --print-kernel --set zz=1
  known=$(sed -nE 's/.*\(known: ([^)]*)\).*/\1/p' <<<"$err" | tr -d ',' | tr ' ' '\n' | sort | tr '\n' ' ')
  [ -n "$known" ] && [ "$documented" = "$known" ] && ok || fail "--set help documents every $node param: [$documented] vs [$known]"
done
run "$uwjit" run pipe-flow --size 40 --set help
expect_out '^  radius = 14.0  \(lattice units; accepted: ' "--set help shows the defaults for the --size given"

# heat: the report, the verdict, and a .vti file that is valid VTK XML image data.
run "$uwjit" run heat --size 12 --steps 60 --output "$out_dir"
expect_code 0 "run heat"
expect_out '^kernels$' "the report lists the kernels"
expect_out '^  heat  compiled  [0-9.]+ ms  \(frontend [0-9.]+, optimise [0-9.]+, codegen [0-9.]+, load [0-9.]+ ms\)  key [0-9a-f]{16}$' \
  "the kernel line gives tier and timings"
expect_out '^  60 steps in [0-9.]+ s: [0-9.]+ MLUPS \(1728 cell updates per step\); 1 compile; [0-9]+ threads?$' \
  "the throughput is reported"
expect_out '^  heat +1728' "the integral is reported"
expect_out '^check: PASS$' "the check passes"
expect_out 'pass  heat conservation' "heat conservation is checked"
expect_out 'pass  mode decay rate \(continuum\)' "the mode decay is checked"
expect_out "^  $out_dir/heat.vti$" "the output file is named"
expect_out '^  dt       0.1 per step$' "the report gives dt"
expect_out '^  simulated time 6 \(step 60, dt 0.1\)$' "the report gives the simulated time"
[ -z "$err" ] && ok || fail "no progress bar when stderr is not a terminal"

python3 - "$out_dir/heat.vti" <<'EOF' && ok || fail "heat.vti is VTK XML ImageData with the field"
import base64, struct, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "VTKFile" and root.get("type") == "ImageData", root.attrib
assert root.get("header_type") == "UInt64" and root.get("byte_order") == "LittleEndian"
image = root.find("ImageData")
assert image.get("WholeExtent") == "0 12 0 12 0 12"
arrays = {a.get("Name"): a for a in image.find("Piece").find("CellData").findall("DataArray")}
assert set(arrays) == {"u", "kappa"}, arrays.keys()
raw = base64.b64decode(arrays["u"].text.strip())
(size,) = struct.unpack("<Q", raw[:8])
assert size == 12 ** 3 * 8 == len(raw) - 8
u = struct.unpack("<%dd" % 12 ** 3, raw[8:])
assert abs(sum(u) - 12 ** 3) < 1e-9, sum(u)          # heat is conserved
assert u[0] != u[1] and u[0] == u[12]                # the mode varies along x (fastest) only
# FieldData: what the file is of, as VTK's readers see it (a string as character codes, 0-ended).
fields = {}
for a in image.find("FieldData").findall("DataArray"):
    assert a.get("NumberOfTuples") == "1" and a.get("format") == "ascii", a.attrib
    words = a.text.split()
    if a.get("type") == "String":
        assert words[-1] == "0"
        fields[a.get("Name")] = "".join(chr(int(w)) for w in words[:-1])
    else:
        fields[a.get("Name")] = (int if a.get("type") == "Int64" else float)(words[0])
assert fields["step"] == 60 and fields["dt"] == 0.1 and abs(fields["time"] - 6) < 1e-12, fields
assert fields["node_type"] == "heat" and len(fields["kernel_key"]) == 16, fields
assert fields["param_nx"] == 12 and fields["param_courant"] == 0.1, fields
assert fields["param_boundary"] == "insulating", fields
EOF

# --json: the same report, machine-readable.
run "$uwjit" run heat --size 8x6x4 --steps 10 --output "$out_dir" --json
expect_code 0 "run heat --json"
printf '%s' "$out" >"$sandbox/report.json"
python3 - "$sandbox/report.json" <<'EOF' && ok || fail "--json has kernels, integrals, the check and outputs"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["node"] == "heat" and d["steps"] == 10 and d["steps_total"] == 10
assert d["params"]["nx"] == 8 and d["params"]["nz"] == 4
assert d["compiles"] == 1 and d["kernels"][0]["tier"] == "compiled"
assert len(d["kernels"][0]["key"]) == 16 and d["kernels"][0]["request_ms"] > 0
assert d["updates_per_step"] == 192 and d["mlups"] > 0
assert abs(d["integrals"]["heat"] - 192) < 1e-9
assert d["check"]["passed"] is True
assert {m["name"] for m in d["check"]["measurements"]} >= {"heat conservation", "mode decay rate (continuum)"}
assert d["outputs"][0].endswith("heat.vti")
assert d["dt"] == 0.1 and abs(d["time"] - 1.0) < 1e-12 and d["interrupted"] is None
assert d["plots"] == [] and d["series"]["files"] == [] and d["errors"] == []
EOF

# pipe-flow: a small pipe (radius 6.5) to its steady state; velocity as a vector in the .vti.
run "$uwjit" run pipe-flow --size 20 --output "$out_dir" --json
expect_code 0 "run pipe-flow"
printf '%s' "$out" >"$sandbox/report.json"
python3 - "$sandbox/report.json" "$out_dir/pipe-flow.vti" <<'EOF' && ok || fail "pipe-flow passes and writes density, velocity, wall"
import base64, json, struct, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
assert d["check"]["passed"], d["check"]
names = [m["name"] for m in d["check"]["measurements"]]
assert "Poiseuille profile" in names and "drag balances body force" in names
root = ET.parse(sys.argv[2]).getroot()
assert root.get("type") == "ImageData"
arrays = {a.get("Name"): a for a in root.iter("DataArray")}
assert arrays["velocity"].get("NumberOfComponents") == "3"
assert arrays["pipe_wall"].get("type") == "UInt8"
cells = 20 * 15 * 15
raw = base64.b64decode(arrays["velocity"].text.strip())
assert struct.unpack("<Q", raw[:8])[0] == cells * 3 * 8
v = struct.unpack("<%dd" % (3 * cells), raw[8:])
assert max(v[0::3]) > 0.01 and abs(max(v[1::3])) < 1e-3   # flow along x only
EOF

# A run too short for the check to judge is not failed: exit 0, and the report says how many
# steps the check needs.
run "$uwjit" run pipe-flow --size 20 --steps 20 --output "$out_dir"
expect_code 0 "a pipe-flow run too short to judge"
expect_out '^check: not judged: needs >= [0-9]+ steps \(this run has 20; run with --steps [0-9]+ or more, or without --steps\)$' \
  "the check says what it needs"
run "$uwjit" run fvm --steps 5 --output "$out_dir" --json
expect_code 0 "an fvm run too short to judge"
[ "$(json 'd["check"]["judged"], d["check"]["needs_steps"] > 5, d["check"]["passed"]' <<<"$out")" = "(False, True, True)" ] \
  && ok || fail "--json says the check was not judged and what it needs"

# A grid too coarse for the mode: the continuum comparison is not judged (exit 0), the rest is.
for boundary in insulating periodic fixed; do
  run "$uwjit" run heat --size 3 --steps 10 --set boundary=$boundary --output "$out_dir"
  expect_code 0 "heat at its smallest size ($boundary)"
  expect_out '^check: PASS$' "heat at its smallest size ($boundary) is not failed"
done
run "$uwjit" run heat --size 3 --steps 10 --output "$out_dir"
expect_out '^  note  mode decay rate \(continuum\): not judged, mode 1 on 3 cells along x decays [0-9.]+ % off the continuum rate in the exact discrete solution \(the check allows 1 %\); judged from nx = [0-9]+$' \
  "the report says why the continuum rate is not judged and from which nx it is"
expect_out '^  pass  mode amplitude \(discrete\)' "the exact discrete solution is still checked"

# Checked mode's kernels cannot be vectorised as the cell loops ask; that is not the user's
# concern and is not printed.
run "$uwjit" run pipe-flow --checked --size 12 --steps 2 --output "$out_dir"
expect_code 0 "pipe-flow --checked"
! grep -q 'vectoriz' <<<"$err" && ok || fail "no optimisation remarks on stderr"
[ -z "$err" ] && ok || fail "nothing at all on stderr"

# A grid that cannot fit in memory is refused before anything is allocated, with the figures.
for node in heat pipe-flow mlp; do
  run "$uwjit" run "$node" --size 16384 --output "$out_dir"
  expect_code 2 "$node --size 16384"
  expect_err "^uwjit: error: run needs about [0-9.]+ [kMGTPE]?B of memory \(state [0-9.]+ [kMGTPE]?B: two buffers per state field, halos included; static data [0-9.]+ [kMGTPE]?B\) and (this machine has [0-9.]+ [kMGTPE]?B \((MemAvailable|physical memory|cgroup memory limit)\)|this process may map [0-9.]+ [kMGTPE]?B \(RLIMIT_AS, less what is mapped already\)); use a smaller grid, or shard the run over more machines$" \
    "$node --size 16384 is refused with what it needs and what there is"
  ! grep -q 'bad_alloc' <<<"$err" && ok || fail "$node --size 16384: no bare std::bad_alloc"
done
# An address-space limit counts as what this process may map. AddressSanitizer reserves terabytes of
# address space for itself and cannot start under such a limit: its builds skip these checks.
if ldd "$uwjit" | grep -q 'libasan'; then
  echo "skipped (not counted): address-space limits, under AddressSanitizer"
else
  run prlimit --as=$((3 * 1024 * 1024 * 1024)) "$uwjit" run heat --size 1024 --output "$out_dir"
  expect_code 2 "heat --size 1024 under a 3 GiB address-space limit"
  expect_err 'and this process may map [0-9.]+ [kMGT]?B \(RLIMIT_AS, less what is mapped already\)' \
    "the address-space limit is named"

  # warm builds only what the kernels' keys depend on: neither the state nor the static arrays'
  # contents, so a grid far larger than the memory it may use warms in full.
  run prlimit --as=$((3 * 1024 * 1024 * 1024)) "$uwjit" warm heat --size 2048
  expect_code 0 "warm heat --size 2048 (a 69 GB state, 34 GB of static data) under a 3 GiB limit"
  run prlimit --as=$((3 * 1024 * 1024 * 1024)) "$uwjit" warm pipe-flow --size 2048
  expect_code 0 "warm pipe-flow --size 2048 under a 3 GiB limit"
fi

# A cache whose size limit holds none of the node's kernels: each publication is evicted again,
# and warm says so and exits 1 instead of reporting a warm cache.
run env UWJIT_CACHE_DIR="$sandbox/small-cache" UWJIT_CACHE_MAX_SIZE=1000 "$uwjit" warm fvm --size 8
expect_code 1 "warm into a cache too small for the node's kernels"
expect_out 'evicted again by the cache.s size limit \(1000 bytes, UWJIT_CACHE_MAX_SIZE\)' \
  "the evicted kernel is named"

# --plot: a PNG per field (a mid-plane slice) and one of the checked profile against Poiseuille.
run "$uwjit" run pipe-flow --size 20 --output "$out_dir/plots" --plot
expect_code 0 "run pipe-flow --plot"
for name in velocity_x velocity_x-section density profile; do
  expect_out "^  $out_dir/plots/pipe-flow_$name.png \(picture\)$" "the report names pipe-flow_$name.png"
done
python3 - "$out_dir/plots" <<'EOF' && ok || fail "--plot writes valid 900 x 700 PNGs"
import glob, struct, sys, zlib
files = sorted(glob.glob(sys.argv[1] + "/*.png"))
assert len(files) == 4, files
for name in files:
    data = open(name, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", name
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13, name
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (900, 700), (name, width, height)
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0], name
    assert data.endswith(b"IEND\xaeB`\x82"), name
EOF
for node in heat fvm mlp; do
  run "$uwjit" run $node --size 6 --steps 3 --output "$out_dir/plots-$node" --plot --json
  printf '%s' "$out" >"$sandbox/report.json"
  python3 -c "
import json, os, sys
d = json.load(open(sys.argv[1]))
assert len(d['plots']) >= 1 and all(os.path.getsize(p) > 1000 for p in d['plots']), d['plots']
" "$sandbox/report.json" && ok || fail "$node --plot draws and names its pictures in --json"
done

# --output-every: a time series, every file with its step and time, and a ParaView collection.
run "$uwjit" run heat --size 8 --steps 25 --output-every 10 --output "$out_dir/series" --json
expect_code 0 "run heat --output-every 10"
printf '%s' "$out" >"$sandbox/report.json"
python3 - "$sandbox/report.json" "$out_dir/series" <<'EOF' && ok || fail "--output-every writes the series and its .pvd"
import json, os, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
directory = sys.argv[2]
names = ["heat_%06d.vti" % s for s in (0, 10, 20, 25)]
assert [os.path.basename(f) for f in d["series"]["files"]] == names, d["series"]
assert d["series"]["collection"] == directory + "/heat.pvd"
root = ET.parse(directory + "/heat.pvd").getroot()
assert root.get("type") == "Collection"
sets = root.find("Collection").findall("DataSet")
assert [s.get("file") for s in sets] == names
assert [float(s.get("timestep")) for s in sets] == [0.0, 1.0, 2.0, 2.5]
for s, step in zip(sets, (0, 10, 20, 25)):
    image = ET.parse(os.path.join(directory, s.get("file"))).getroot().find("ImageData")
    fields = {a.get("Name"): a.text.split() for a in image.find("FieldData")}
    assert int(fields["step"][0]) == step and float(fields["time"][0]) == float(s.get("timestep"))
EOF
run "$uwjit" run heat --size 8 --steps 5 --output-every 0
expect_code 2 "--output-every 0"
expect_err '--output-every: expected a whole number >= 1, got "0"' "--output-every 0 is explained"

# Paths are checked before any work: the message names the path and why; nothing is compiled.
echo "a file" >"$sandbox/file"
for option in --output --checkpoint; do
  run env UWJIT_CACHE_DIR="$sandbox/early-cache" "$uwjit" run heat --size 6 --steps 2 $option "$sandbox/file/sub/x"
  expect_code 1 "$option under a regular file"
  expect_err "^uwjit: error: run: $option $sandbox/file/sub/x: cannot create the directory $sandbox/file/sub.*: Not a directory$" \
    "$option under a regular file names the path and the reason"
  [ -z "$out" ] && ok || fail "$option under a regular file: nothing runs"
done
[ ! -e "$sandbox/early-cache" ] && ok || fail "a bad path is found before any kernel is compiled"
run "$uwjit" run heat --size 6 --steps 2 --output "$sandbox/file"
expect_err "run: --output $sandbox/file: $sandbox/file exists and is not a directory" "--output naming a file"
run "$uwjit" run heat --size 6 --steps 2 --checkpoint "$out_dir"
expect_code 1 "--checkpoint naming a directory"
expect_err "run: --checkpoint $out_dir: is a directory" "--checkpoint naming a directory is explained"
run "$uwjit" run heat --restore "$sandbox/missing.ckpt"
expect_code 1 "--restore of a missing file"
expect_err "run: --restore $sandbox/missing.ckpt: cannot open: No such file" "--restore of a missing file is explained"

# Ctrl-C: the run stops after the current step, reports, writes its output and checkpoint, exits
# 130; the checkpoint resumes. The signal is sent once the report's kernel line shows that the
# run is about to step (stdout goes through a fifo, so no timing is guessed).
mkfifo "$sandbox/report.fifo"
"$uwjit" run heat --size 16 --steps 100000000 --output "$out_dir/stopped" \
  --checkpoint "$sandbox/stopped.ckpt" >"$sandbox/report.fifo" 2>"$sandbox/stopped.err" &
pid=$!
exec 3<"$sandbox/report.fifo"
report=""
while IFS= read -r line <&3; do
  report+="$line"$'\n'
  [[ $line == "  heat  "* ]] && break
done
kill -INT "$pid"
report+=$(cat <&3)
exec 3<&-
wait "$pid" && code=0 || code=$?
out=$report
err=$(cat "$sandbox/stopped.err")
expect_code 130 "a run stopped by SIGINT"
expect_out '^interrupted by SIGINT after step [0-9]+: the report, output and checkpoint are of that step$' \
  "the report says where the run stopped"
expect_out '^  [0-9]+ of 100000000 steps in' "the steps taken are reported"
expect_out '^check: ' "the check is reported"
expect_out "^  $out_dir/stopped/heat.vti$" "the output of the stopped run is named"
expect_out "^  $sandbox/stopped.ckpt \(checkpoint\)$" "the checkpoint of the stopped run is named"
[ -s "$out_dir/stopped/heat.vti" ] && [ -s "$sandbox/stopped.ckpt" ] && ok || fail "the stopped run wrote its files"
stopped_at=$(sed -nE 's/^interrupted by SIGINT after step ([0-9]+).*/\1/p' <<<"$out")
run "$uwjit" run heat --restore "$sandbox/stopped.ckpt" --steps 3 --output "$out_dir/stopped" --json
expect_code 0 "the checkpoint of a stopped run resumes"
resumed=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["steps_total"])' <<<"$out")
[ -n "$stopped_at" ] && [ "$resumed" = $((stopped_at + 3)) ] && ok ||
  fail "the resumed run continues from step $stopped_at (steps_total $resumed)"

# fvm: an unstructured grid.
run "$uwjit" run fvm --size 10 --output "$out_dir"
expect_code 0 "run fvm"
expect_out 'pass  analytic steady state' "fvm reaches the analytic steady state"
python3 - "$out_dir/fvm.vtu" <<'EOF' && ok || fail "fvm.vtu is VTK XML UnstructuredGrid with polygons"
import base64, struct, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "VTKFile" and root.get("type") == "UnstructuredGrid"
piece = root.find("UnstructuredGrid").find("Piece")
cells, points = int(piece.get("NumberOfCells")), int(piece.get("NumberOfPoints"))
arrays = {a.get("Name"): a for a in piece.iter("DataArray")}
def values(name, fmt, size):
    raw = base64.b64decode(arrays[name].text.strip())
    (n,) = struct.unpack("<Q", raw[:8])
    assert n == len(raw) - 8 and n % size == 0
    return struct.unpack("<%d%s" % (n // size, fmt), raw[8:])
types, offsets = values("types", "B", 1), values("offsets", "q", 8)
connectivity = values("connectivity", "q", 8)
assert len(types) == cells and set(types) == {7} and offsets[-1] == len(connectivity)
assert min(connectivity) >= 0 and max(connectivity) < points
assert len(values("Points", "d", 8)) == 3 * points
t, exact = values("T", "d", 8), values("T_exact", "d", 8)
assert len(t) == cells and max(abs(a - b) for a, b in zip(t, exact)) < 0.02
EOF

run "$uwjit" run mlp --size 5 --steps 8 --output "$out_dir"
expect_code 0 "run mlp"
expect_out 'pass  matches the C\+\+ reference' "mlp matches its reference"
[ -f "$out_dir/mlp.vti" ] && ok || fail "mlp writes mlp.vti"

# Checkpoint and restore: 25 + 15 steps give exactly what 40 steps give.
run "$uwjit" run heat --size 8 --steps 40 --output "$out_dir" --json
whole=$out
run "$uwjit" run heat --size 8 --steps 25 --output "$out_dir" --checkpoint "$sandbox/heat.ckpt"
expect_code 0 "a run that writes a checkpoint"
expect_out "$sandbox/heat.ckpt \(checkpoint\)" "the checkpoint is reported"
run "$uwjit" run heat --restore "$sandbox/heat.ckpt" --steps 15 --output "$out_dir" --json
expect_code 0 "a restored run"
printf '%s' "$whole" >"$sandbox/whole.json"
printf '%s' "$out" >"$sandbox/resumed.json"
python3 - "$sandbox/whole.json" "$sandbox/resumed.json" <<'EOF' && ok || fail "a resumed run matches the uninterrupted one"
import json, sys
whole = json.load(open(sys.argv[1]))
resumed = json.load(open(sys.argv[2]))
assert resumed["steps_total"] == 40 and resumed["steps"] == 15
assert resumed["integrals"] == whole["integrals"], (resumed["integrals"], whole["integrals"])
assert resumed["params"] == whole["params"]
EOF
run "$uwjit" run heat --restore "$sandbox/heat.ckpt" --size 8
expect_code 2 "--restore with --size"
expect_err '--restore takes the params from the checkpoint' "--restore with --size is explained"
run "$uwjit" run fvm --restore "$sandbox/heat.ckpt"
expect_code 2 "--restore of another node's checkpoint"
expect_err 'does not hold a single fvm node' "the mismatch is explained"
head -c 100 "$sandbox/heat.ckpt" >"$sandbox/cut.ckpt"
run "$uwjit" run heat --restore "$sandbox/cut.ckpt"
expect_code 1 "a truncated checkpoint"
expect_err 'cut.ckpt: truncated or corrupt' "a truncated checkpoint is named"

# Symlinks planted by another user in a shared output directory, at the final names and at the
# temporary names writers used to derive from the PID (exec keeps the shell's PID), are replaced
# or left alone, never followed: the file they point at stays intact.
shared="$sandbox/shared"
mkdir -p "$shared"
printf 'root-owned\n' >"$sandbox/victim"
chmod 644 "$sandbox/victim"
run bash -c 'for name in heat.vti heat.ckpt heat.vti.tmp.$$ heat.ckpt.tmp.$$; do ln -s "$1" "$2/$name"; done
  exec "$3" run heat --size 8 --steps 5 --output "$2" --checkpoint "$2/heat.ckpt"' _ "$sandbox/victim" "$shared" "$uwjit"
expect_code 0 "a run writing into a directory with planted symlinks"
[ "$(cat "$sandbox/victim")" = root-owned ] && ok || fail "no planted symlink is followed"
[ -f "$shared/heat.vti" ] && [ ! -L "$shared/heat.vti" ] && [ -f "$shared/heat.ckpt" ] && [ ! -L "$shared/heat.ckpt" ] && ok || fail "the outputs replace the symlinks at their names"
run "$uwjit" run heat --restore "$shared/heat.ckpt" --steps 1 --output "$out_dir"
expect_code 0 "the checkpoint written over a symlink restores"

# The progress bar is drawn when stderr is a terminal (script(1) provides one, where installed).
if command -v script >/dev/null; then
  bar=$(script -qec "stty cols 100; $uwjit run heat --size 6 --steps 30 --output $out_dir >/dev/null" /dev/null | tr '\r' '\n')
  grep -qE '^  \[#+\] 100% 30/30 steps  [0-9]+:[0-9]{2} elapsed  [0-9.]+ MLUPS  ETA 0:00' <<<"$bar" &&
    ok || fail "a progress bar with elapsed time, rate and ETA on a terminal: $bar"
  # A narrow terminal: every line of the bar fits, so none wraps.
  bar=$(script -qec "stty cols 44; $uwjit run heat --size 6 --steps 30 --output $out_dir >/dev/null" /dev/null |
    tr '\r' '\n' | sed 's/\x1b\[K//g')
  grep -q '100%' <<<"$bar" && awk 'length > 43 { exit 1 }' <<<"$bar" &&
    ok || fail "the bar fits a 44-column terminal: $bar"
fi

run "$uwjit" run heat --size 6 --print-kernel
expect_code 0 "--print-kernel"
expect_out 'extern "C" int __UWJIT_ENTRY__' "--print-kernel prints the kernel"
expect_out '^// static_data_hash [0-9a-f]{64}$' "the kernel carries the static_data_hash"
# The printed kernel is C++ for other compilers too (g++ builds the benchmark's anchors from it):
# the Clang-only no-alias hints sit under __has_builtin.
run "$uwjit" run pipe-flow --size 8 --print-kernel
expect_code 0 "--print-kernel pipe-flow"
printf '%s\n' "$out" >"$sandbox/pipe-flow.cpp"
abi="$(dirname "$0")/../../codegen/include/uwjit/codegen/kernel_abi.h"
g++ -std=c++20 -fsyntax-only -include "$abi" -x c++ "$sandbox/pipe-flow.cpp" 2>"$sandbox/gxx.err" &&
  ok || fail "g++ compiles the printed pipe-flow kernel: $(head -3 "$sandbox/gxx.err")"

# Threads: the same fields and integrals bit for bit whatever their number. 45x90x90 cells are
# cut into 22 slabs of 2 or 3 planes (about 16384 cells each), whose integrals are added in slab
# order, not in the order the threads finish them.
run "$uwjit" run heat --size 45x90x90 --steps 10 --threads 1 --output "$sandbox/t1" --json
expect_code 0 "--threads 1"
[ "$(json 'd["threads"]' <<<"$out")" = 1 ] && ok || fail "--json reports the thread count"
integrals=$(json 'repr(d["integrals"])' <<<"$out") # repr: the shortest text that reads back
for threads in 3 7; do
  run "$uwjit" run heat --size 45x90x90 --steps 10 --threads $threads --output "$sandbox/t$threads" --json
  expect_code 0 "--threads $threads"
  [ "$(json 'd["threads"]' <<<"$out")" = $threads ] && ok || fail "--threads $threads runs on $threads threads"
  cmp -s "$sandbox/t1/heat.vti" "$sandbox/t$threads/heat.vti" && ok ||
    fail "--threads $threads writes what --threads 1 writes"
  [ "$(json 'repr(d["integrals"])' <<<"$out")" = "$integrals" ] && ok ||
    fail "--threads $threads gives the integrals of --threads 1 bit for bit ($integrals)"
done

# Checked mode: another kernel (its own key), the same physics verdict; UWJIT_CHECK=1 alike.
run "$uwjit" run heat --size 48 --steps 10 --threads 1 --output "$sandbox/c1" --json --checked
expect_code 0 "--checked"
[ "$(json 'd["checked"]' <<<"$out")" = True ] && ok || fail "--json says the run was checked"
[ "$(json 'd["check"]["passed"]' <<<"$out")" = True ] && ok || fail "a checked heat run passes its check"
checked_key=$(json 'd["kernels"][0]["key"]' <<<"$out")
run "$uwjit" run heat --size 48 --steps 10 --threads 1 --output "$sandbox/c0" --json
[ "$(json 'd["checked"]' <<<"$out")" = False ] && ok || fail "--json says an unchecked run was not checked"
[ "$checked_key" != "$(json 'd["kernels"][0]["key"]' <<<"$out")" ] && ok || fail "a checked kernel has its own key"
[ "$(json 'd["kernels"][0]["first_step_check"]' <<<"$out")" = None ] && ok ||
  fail "heat's kernel gets no first-step check"
UWJIT_CHECK=1 run "$uwjit" run heat --size 48 --steps 10 --output "$sandbox/c2" --json
[ "$(json 'd["kernels"][0]["key"]' <<<"$out")" = "$checked_key" ] && ok || fail "UWJIT_CHECK=1 runs the checked kernel"
run "$uwjit" run heat --size 8 --steps 1 --checked --output "$sandbox/c3"
expect_out 'checked mode$' "the text report says checked mode"
# fvm writes its own loops, whose reach its text does not show: its first step runs a checked copy
# (its own key, compiled beside it); heat's cell text shows its reach, and gets none.
run "$uwjit" run fvm --size 16 --steps 2 --output "$sandbox/f1" --json
expect_code 0 "run fvm"
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
k = d["kernels"][0]
assert d["compiles"] == 2 and k["first_step_check"]["tier"] == "compiled", d
assert len(k["first_step_check"]["key"]) == 16 and k["first_step_check"]["key"] != k["key"], d
' "$out" && ok || fail "fvm's first step runs its checked copy, compiled once beside it"
run "$uwjit" run fvm --size 16 --steps 2 --output "$sandbox/f1"
expect_out '^    first step checked by disk .* key [0-9a-f]{16}$' "the report names the first-step check"
run "$uwjit" run heat --print-kernel --checked
expect_out '^// checked: every accessor index is tested' "--print-kernel --checked prints the checked kernel"
for bad in 0 -2 two 1e3; do
  run "$uwjit" run heat --size 8 --steps 1 --threads "$bad"
  expect_code 2 "--threads $bad"
  expect_err '--threads: expected a whole number from 1 to 4096' "--threads $bad is explained"
done

# sweep_compiles_once WHAT VALUE... -- RUN ARGS with {} for the value: the first run compiles one
# kernel, every later value is the same kernel (0 compiles).
sweep_compiles_once() {
  local what=$1 first="" value compiles
  shift
  local values=()
  while [ "$1" != "--" ]; do values+=("$1"); shift; done
  shift
  for value in "${values[@]}"; do
    run "$uwjit" "${@//\{\}/$value}" --output "$sandbox/sweep" --json
    expect_code 0 "$what $value"
    compiles="$(json 'd["compiles"]' <<<"$out")"
    if [ -z "$first" ]; then
      first=$value
      [ "$compiles" = 1 ] && ok || fail "$what $value: the first value compiles (got $compiles)"
    else
      [ "$compiles" = 0 ] && ok || fail "$what $value is the same kernel (got $compiles compiles)"
    fi
  done
}
# Run-time params: a sweep over pipe-flow's tau (a run-time param of its kernel) compiles once.
sweep_compiles_once "pipe-flow tau" 0.6 0.8 1.1 -- run pipe-flow --size 12 --steps 1 --set 'tau={}'
# Run-time extents: heat's conductivity follows the domain, so another nx is the same kernel.
sweep_compiles_once "heat run-time extents, size" 10 14 -- \
  run heat --size '{}' --steps 1 --set extents=runtime

finish
