#!/usr/bin/env bash
# CLI suite: uwjit --version, --help, env and compile on the real binary.
uwjit=$1
src=$2
host=$3
. "$(dirname "$0")/lib.sh"

run "$uwjit" --version
expect_code 0 "--version"
expect_out '^uwjit [0-9]+\.[0-9]+\.[0-9]+$' "--version prints the version"

run "$uwjit"
expect_code 2 "no command"
expect_err 'usage: uwjit' "no command prints usage"

run "$uwjit" frobnicate
expect_code 2 "unknown command"
expect_err 'unknown command "frobnicate"' "unknown command is named"

run "$uwjit" --help
expect_code 0 "--help"
expect_out 'compile' "--help lists compile"

run "$uwjit" env
expect_code 0 "env"
expect_out '^LLVM version +19\.' "env prints the LLVM version"
expect_out '^target triple +x86_64' "env prints the triple"
expect_out '^resource dir +/' "env prints the resource dir"
# Loop strength reduction where an array's offsets vary at run time and, on x86 without AVX-512,
# in vectorised loops (engine/src/pipeline.cpp).
expect_out '^pipeline +slp-where-scalar,lsr-where-offsets-vary,lsr-vector-loops-on-x86-without-avx512$' "env names the kernel pipeline, part of every key"

run "$uwjit" env --json
expect_code 0 "env --json"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["cpu"] and d["features"] == sorted(d["features"])' <<<"$out" \
  && ok || fail "env --json parses, features sorted"

run "$uwjit" compile --help
expect_code 0 "compile --help"
expect_out '--entry NAME' "compile --help documents --entry"

run "$uwjit" compile "$src/examples/kernels/diffusion.cpp"
expect_code 0 "compile the example"
for field in entry object frontend optimise codegen link total; do
  expect_out "^  $field " "compile reports $field"
done

run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" --json -O2
expect_code 0 "compile --json"
python3 -c '
import json, sys
d = json.load(sys.stdin)
t = d["timings_ms"]
assert d["entry"] == "kernel" and d["object_size"] > 0 and d["opt_level"] == 2
assert len(d["key"]) == 16
assert all(t[k] >= 0 for k in ("frontend", "optimise", "codegen", "link", "total"))
' <<<"$out" && ok || fail "compile --json has entry, key, size and timings"

printf 'extern "C" int kernel(const uwjit_kernel_args* a) {\n  int x = 1\n  return x;\n}\n' >"$sandbox/bad.cpp"
run "$uwjit" compile "$sandbox/bad.cpp"
expect_code 1 "a malformed kernel"
expect_err "$sandbox/bad\\.cpp:2:12: error:" "a malformed kernel's diagnostics name FILE:LINE:COL"

run "$uwjit" compile "$sandbox/bad.cpp" --json
expect_code 1 "a malformed kernel with --json"
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["ok"] is False and d["error"]["kind"] == "compile", d
first = d["error"]["diagnostics"][0]
assert first["file"].endswith("/bad.cpp") and first["line"] == 2 and first["column"] == 12, first
assert "expected" in first["message"], first
' <<<"$out" && ok || fail "compile --json writes JSON with the diagnostics on failure"

run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" -O 9 --json
expect_code 2 "a bad -O with --json"
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["ok"] is False and d["error"]["kind"] == "usage" and "-O: expected" in d["error"]["message"], d
' <<<"$out" && ok || fail "compile --json writes JSON for a misuse too"
run "$uwjit" compile --json
expect_code 2 "compile --json without a file"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["ok"] is False and d["file"] is None, d' <<<"$out" \
  && ok || fail "compile --json without a file writes JSON"

run "$uwjit" compile "$sandbox/missing.cpp" --json
expect_code 1 "a missing file with --json"
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["ok"] is False and d["error"]["kind"] == "io"' <<<"$out" \
  && ok || fail "compile --json writes JSON for a missing file"

run "$uwjit" compile
expect_code 2 "compile without a file"
expect_err 'missing argument FILE' "compile without a file names FILE"

run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" -O 9
expect_code 2 "compile -O 9"
expect_err '-O: expected 0, 1, 2 or 3' "bad -O is explained"

run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" --bogus
expect_code 2 "unknown option"
expect_err 'unknown option --bogus' "unknown option is named"

run "$uwjit" compile "$sandbox/missing.cpp"
expect_code 1 "missing file"
expect_err 'missing\.cpp: cannot open' "a missing file is named"

# --- The cache lines say what happened ---------------------------------------------------------
printf 'extern "C" int kernel(const uwjit_kernel_args* a) {\n  int x = 1.5;\n  return x - 1;\n}\n' >"$sandbox/warn.cpp"
run "$uwjit" compile "$sandbox/warn.cpp"
expect_code 0 "a kernel with a warning"
expect_out "served by  compiler \\(cold compile, published to the cache in $sandbox/cache\\)" \
  "a cold compile says it was published, and where"
expect_err "$sandbox/warn\\.cpp:2:11: warning: implicit conversion" "the first compile prints its warning"
run "$uwjit" compile "$sandbox/warn.cpp" --json
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["ok"] and d["tier"] == "disk" and d["publication"] == "not_needed", d
assert "warn.cpp:2:11: warning: implicit conversion" in d["warnings"], d
assert d["diagnostics"][0]["severity"] == "warning" and d["diagnostics"][0]["line"] == 2, d
' <<<"$out" && ok || fail "a disk hit replays the stored warnings in --json"
run "$uwjit" compile "$sandbox/warn.cpp"
expect_out "served by  disk cache \\(verified entry in $sandbox/cache, no compile\\)" "a disk hit says so"
expect_err "warn\\.cpp:2:11: warning: implicit conversion" "a disk hit replays the warning"

UWJIT_CACHE=0 run "$uwjit" compile "$sandbox/warn.cpp"
expect_out 'not published: the disk cache is disabled by UWJIT_CACHE=0; memory only' \
  "UWJIT_CACHE=0: the compile says it was not published, and why"
mkdir -p "$sandbox/shared" && chmod 0777 "$sandbox/shared"
UWJIT_CACHE_DIR="$sandbox/shared" run "$uwjit" compile "$sandbox/warn.cpp"
expect_out 'not published: cache directory .*shared.* is refused: it is writable by other users' \
  "a refused cache directory: not published, and why"
UWJIT_CACHE_DIR="$sandbox/warn.cpp" run "$uwjit" compile "$sandbox/warn.cpp"
expect_out 'not published: cache directory .*warn\.cpp.*Not a directory; memory only' \
  "a file as the cache directory: not published, and why"
# A directory where the object goes makes the publish itself fail (even as root).
printf 'extern "C" int kernel(const uwjit_kernel_args*) { return 3; }\n' >"$sandbox/three.cpp"
key=$(UWJIT_CACHE=0 "$uwjit" compile "$sandbox/three.cpp" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])')
mkdir -p "$sandbox/cache/$key.o"
run "$uwjit" compile "$sandbox/three.cpp" --json
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["tier"] == "compiled" and d["publication"] == "not_published", d
assert d["not_published_because"], d
' <<<"$out" && ok || fail "a failed publish is reported as not published, with the reason"
rmdir "$sandbox/cache/$key.o"

# --- A wrong entry: one error naming the entries found, nothing published, no recompile ---------
entries_before=$(ls "$sandbox/cache" | grep -cE '\.(o|json|cpp)$')
run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" --entry step -O1
expect_code 1 "a wrong --entry"
expect_err 'kernel entry "step" .*the functions it defines: kernel\.' "a wrong --entry names the entry found"
[ "$(grep -c 'error' <<<"$err")" -eq 1 ] && ok || fail "a wrong --entry is one error"
[ "$(ls "$sandbox/cache" | grep -cE '\.(o|json|cpp)$')" -eq "$entries_before" ] \
  && ok || fail "a wrong --entry publishes nothing"
run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" -O1 --json
python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["tier"] == "compiled" and d["publication"] == "published", d' <<<"$out" \
  && ok || fail "the right entry compiles and is published"
run "$uwjit" compile "$src/examples/kernels/diffusion.cpp" --entry step -O1 --json
python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["ok"] is False and "the functions it defines: kernel" in d["error"]["message"], d
' <<<"$out" && ok || fail "a wrong --entry on a cached kernel is the same error"
grep -q 'does not load' <<<"$err" && fail "a wrong --entry on a cached kernel warns of damage" || ok
run "$uwjit" cache stats --json
python3 -c 'import json,sys; c=json.load(sys.stdin)["counters"]; assert c["rejected"] == 0, c' <<<"$out" \
  && ok || fail "a wrong --entry rejects no entry"

# --- Compile options: validated, in the key, named by cache explain ----------------------------
run "$uwjit" compile "$sandbox/three.cpp" --json
plain=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["key"])' <<<"$out")
run "$uwjit" compile "$sandbox/three.cpp" --fast-math --fp-contract off -DWIDTH=8 --json
expect_code 0 "compile with options"
fast=$(python3 -c 'import json,sys; d=json.load(sys.stdin); assert "-ffp-contract=off -ffast-math -DWIDTH=8" in d["flags"], d; print(d["key"])' <<<"$out")
[ -n "$fast" ] && [ "$fast" != "$plain" ] && ok || fail "compile options change the key and show in flags"
run "$uwjit" cache explain "$plain" "$fast"
expect_out '-ffast-math' "cache explain names -ffast-math"
expect_out '-DWIDTH=8' "cache explain names the define"
run "$uwjit" compile "$sandbox/three.cpp" --fp-contract sometimes
expect_code 2 "a bad --fp-contract"
expect_err '--fp-contract: expected off, on or fast' "a bad --fp-contract is explained"
run "$uwjit" compile "$sandbox/three.cpp" -D '1X=2'
expect_code 2 "a bad define"
expect_err 'define "1X=2": expected NAME or NAME=VALUE' "a bad define is explained"

# --- Slot tables: the CLI warms exactly the key a host asks for ---------------------------------
printf 'extern "C" int __UWJIT_ENTRY__(const uwjit_kernel_args* args) {\n  const double* x = static_cast<const double*>(args->state_in[0]);\n  double* y = static_cast<double*>(args->state_out[0]);\n  for (uw_i64 k = 0; k < args->extents[0]; ++k) y[k] = 7.0 * x[k] + 1.0;\n  return UWJIT_KERNEL_OK;\n}\n' >"$sandbox/host7.cpp"
run "$uwjit" compile "$sandbox/host7.cpp" --state-in x --state-out y --extents n --json
warmed=$(python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["publication"] == "published", d; print(d["key"])' <<<"$out")
run "$host" --first 7
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["tiers"]["7"] == "disk", d
assert d["keys"]["7"] == sys.argv[2], (d, sys.argv[2])
' "$out" "$warmed" && ok || fail "a host finds the kernel the CLI compiled with its slot names, under the same key"
run "$uwjit" compile "$sandbox/host7.cpp" --state-in x --state-out y --extents n --params gain --json
with_params=$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["key"])' <<<"$out")
[ -n "$with_params" ] && [ "$with_params" != "$warmed" ] && ok || fail "--params names run-time param slots, part of the key"
run "$uwjit" compile "$sandbox/host7.cpp" --state-in 'x,1y'
expect_code 2 "a bad slot name"
expect_err 'slot name "1y" is not a C identifier' "a bad slot name is named"

# --- uwjit warm: a built-in node's kernels into the cache, no steps -----------------------------
run "$uwjit" warm heat --size 12 --set contrast=2 --json
expect_code 0 "warm heat"
heat=$(python3 -c 'import json,sys; d=json.load(sys.stdin); k=d["kernels"][0]; assert d["ok"] and k["publication"] == "published", d; print(k["key"])' <<<"$out")
run "$uwjit" run heat --size 12 --set contrast=2 --steps 1 --output "$sandbox/out" --json
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["kernels"][0]["tier"] == "disk" and d["kernels"][0]["key"] == sys.argv[2], d
' "$out" "$heat" && ok || fail "uwjit run finds the kernel uwjit warm compiled"
# fvm's first step runs a checked copy of its kernel (its loops are its own): warm compiles both.
run "$uwjit" warm fvm --size 12 --json
expect_code 0 "warm fvm"
run "$uwjit" run fvm --size 12 --steps 1 --output "$sandbox/out" --json
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
k = d["kernels"][0]
assert d["compiles"] == 0 and k["tier"] == "disk" and k["first_step_check"]["tier"] == "disk", d
' "$out" && ok || fail "uwjit run finds fvm's kernel and its first-step check where uwjit warm put them"
UWJIT_CACHE=0 run "$uwjit" warm heat --size 12
expect_code 1 "warm without a disk cache fails"
expect_out 'not published: the disk cache is disabled by UWJIT_CACHE=0' "warm says why nothing was cached"
run "$uwjit" warm heat --size 0
expect_code 2 "warm with a bad size"
expect_err 'warm: --size: expected N' "warm names a bad size"
run "$uwjit" warm heat --size 12 --set help
expect_code 0 "warm --set help"
expect_out '^heat params \(--set NAME=VALUE' "warm --set help lists the node's params"
expect_out '^  nx = 12( |$)' "warm --set help shows the defaults of the --size given"

finish
