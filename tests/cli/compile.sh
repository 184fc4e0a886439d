#!/usr/bin/env bash
# CLI suite: uwjit --version, --help, env and compile on the real binary.
uwjit=$1
src=$2
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
expect_err 'kernel\.cpp:2:12: error:' "a malformed kernel reports kernel.cpp:LINE:COL"

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

finish
