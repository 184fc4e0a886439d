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
expect_err 'param "boundary" = "sticky" \(accepted: insulating, periodic\)' "a bad choice lists the choices"
run "$uwjit" run pipe-flow --set radius=50
expect_code 2 "a pipe wider than its lattice"
expect_err 'param "radius" = 50 is out of range' "the radius range is explained"
run "$uwjit" run heat --set help
expect_code 0 "--set help"
expect_out '^  courant = 0.1$' "--set help lists params with defaults"

# heat: the report, the verdict, and a .vti file that is valid VTK XML image data.
run "$uwjit" run heat --size 12 --steps 60 --output "$out_dir"
expect_code 0 "run heat"
expect_out '^kernels$' "the report lists the kernels"
expect_out '^  heat  compiled  [0-9.]+ ms  \(frontend [0-9.]+, optimise [0-9.]+, codegen [0-9.]+, load [0-9.]+ ms\)  key [0-9a-f]{16}$' \
  "the kernel line gives tier and timings"
expect_out '^  60 steps in [0-9.]+ s: [0-9.]+ MLUPS \(1728 cell updates per step\); 1 compile$' \
  "the throughput is reported"
expect_out '^  heat +1728' "the integral is reported"
expect_out '^check: PASS$' "the check passes"
expect_out 'pass  heat conservation' "heat conservation is checked"
expect_out 'pass  mode decay rate \(continuum\)' "the mode decay is checked"
expect_out "^  $out_dir/heat.vti$" "the output file is named"
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

# A run that stops before the steady state fails its check: exit 1, and the report says why.
run "$uwjit" run pipe-flow --size 20 --steps 20 --output "$out_dir"
expect_code 1 "an unconverged pipe-flow"
expect_out '^check: FAIL$' "the verdict is FAIL"
expect_out 'FAIL  drag balances body force' "the failing measurement is named"

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
  bar=$(script -qec "$uwjit run heat --size 6 --steps 30 --output $out_dir >/dev/null" /dev/null | tr '\r' '\n')
  grep -q '100% 30/30 steps' <<<"$bar" && ok || fail "a progress bar on a terminal: $bar"
fi

run "$uwjit" run heat --size 6 --print-kernel
expect_code 0 "--print-kernel"
expect_out 'extern "C" int __UWJIT_ENTRY__' "--print-kernel prints the kernel"
expect_out '^// static_data_hash [0-9a-f]{64}$' "the kernel carries the static_data_hash"

finish
