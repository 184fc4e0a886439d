#!/usr/bin/env bash
# CLI suite: the loop form a cell-form kernel gets depends on the target, from one text. pipe-flow
# asks for its remainder folded into masked iterations (UWJIT_MASKED_MOVES): with AVX-512 on
# AVX-512 (Intel's and AMD's Zen 4) the compiler uses mask registers ({%k} operands) and no AVX2
# masked moves; for AVX2, whose masked moves (vmaskmov) are microcoded on AMD's cores, the text
# leaves predication out and the AVX2 object has no masked move at all (with predication forced,
# the same source has dozens). The stored canonical source is compiled with clang++-19 for each
# target, whatever this machine has; the JIT'd object of this machine is checked too. On AMD's
# Zen 4 and Zen 5 a loop whose rows are whole vectors (a compiled innermost extent, a multiple of
# 16) keeps the unmasked form, and one with a remainder the masked iterations.
#   loop_forms.sh UWJIT CLANGXX
uwjit=$1
clangxx=$2
. "$(dirname "$0")/lib.sh"
export UWJIT_LOG_LEVEL=off

run "$uwjit" run pipe-flow --size 16 --steps 1 --output "$sandbox/out" --json
expect_code 0 "uwjit run pipe-flow"
key=$(json 'd["kernels"][0]["key"]' <<<"$out")
"$uwjit" cache inspect --source "$key" >"$sandbox/kernel.cpp"
grep -q '^#if defined(__AVX512F__) || !defined(__x86_64__)$' "$sandbox/kernel.cpp" && ok ||
  fail "the masked remainder is asked for where masked moves are cheap"
[ "$(grep -A1 '^#if UWJIT_MASKED_MOVES$' "$sandbox/kernel.cpp" | grep -c '^#pragma clang loop vectorize_predicate')" -eq 1 ] &&
  ok || fail "the loop's predication follows UWJIT_MASKED_MOVES"
# The same text with predication forced, as every target had it before.
sed '/^#if UWJIT_MASKED_MOVES$/{N;N;N;N;s/^[^\n]*\n\(#pragma clang loop vectorize_predicate[^\n]*\)\n#else\n[^\n]*\n#endif$/\1/}' \
  "$sandbox/kernel.cpp" >"$sandbox/forced.cpp"
[ "$(grep -B1 '^#pragma clang loop vectorize_predicate' "$sandbox/forced.cpp" | head -n 1)" != \
  '#if UWJIT_MASKED_MOVES' ] && ok || fail "the forced copy keeps the guard"
masked() { # masked FILE.s: AVX2 masked moves, then AVX-512 masked operands
  echo "$(grep -c 'vmaskmov' "$1") $(grep -c '{%k[1-7]}' "$1")"
}
for file in kernel forced; do
  for isa in x86-64-v3 x86-64-v4 sapphirerapids znver4; do
    "$clangxx" -x c++ -std=c++20 -O3 -march=$isa -S -o "$sandbox/$file-$isa.s" "$sandbox/$file.cpp" ||
      fail "$file.cpp compiles for $isa"
  done
done
for isa in x86-64-v4 sapphirerapids znver4; do
  read -r moves masks <<<"$(masked "$sandbox/kernel-$isa.s")"
  [ "$moves" -eq 0 ] && [ "$masks" -gt 0 ] && ok ||
    fail "AVX-512 ($isa): masked iterations with mask registers, no vmaskmov ($moves vmaskmov, $masks masked operands)"
done
read -r v3_moves _ <<<"$(masked "$sandbox/kernel-x86-64-v3.s")"
read -r forced_moves _ <<<"$(masked "$sandbox/forced-x86-64-v3.s")"
[ "$v3_moves" -eq 0 ] && [ "$forced_moves" -gt 0 ] && ok ||
  fail "AVX2: no masked moves ($v3_moves; with predication forced: $forced_moves)"
echo "AVX2: $v3_moves vmaskmov (forced predication: $forced_moves)"
# The JIT'd object of this machine, whose CPU the kernel's salt names.
"$uwjit" cache inspect --asm "$key" >"$sandbox/jit.s"
cpu=$("$uwjit" cache inspect --json "$key" | json 'd["salt"].split("|cpu=")[1].split("|")[0]')
read -r jit_moves jit_masks <<<"$(masked "$sandbox/jit.s")"
if grep -qw avx512f /proc/cpuinfo; then
  [ "$jit_moves" -eq 0 ] && [ "$jit_masks" -gt 0 ] && ok ||
    fail "this AVX-512 machine's kernel uses mask registers ($jit_moves vmaskmov, $jit_masks masked)"
fi
echo "this machine ($cpu): $jit_moves vmaskmov, $jit_masks masked operands"
# Zen 4 and Zen 5: rows of whole vectors keep the unmasked loop (no state stored under a mask; a select of
# two loads may still be a load merged under a mask), other rows keep masked iterations, whose
# every population is stored under the remainder's mask.
masked_stores() { # masked_stores FILE.s: vector stores to memory under a mask register
  grep -E '^\s*vmov(upd|apd|ups|aps|dqu32|dqu64|dqa32|dqa64)\s+%[xyz]mm[0-9]+, [^,]*\(%r[^)]*\) \{%k[1-7]\}' "$1" |
    grep -vc '(%rip)'
}
for size in 16x16x32 16x16x24; do
  run "$uwjit" run pipe-flow --size $size --steps 1 --output "$sandbox/out" --json
  expect_code 0 "uwjit run pipe-flow --size $size"
  "$uwjit" cache inspect --source "$(json 'd["kernels"][0]["key"]' <<<"$out")" >"$sandbox/$size.cpp"
  for isa in znver5 znver4; do
    "$clangxx" -x c++ -std=c++20 -O3 -march=$isa -S -o "$sandbox/$size-$isa.s" "$sandbox/$size.cpp" ||
      fail "$size.cpp compiles for $isa"
  done
done
grep -q '^#if defined(__znver4__) || defined(__znver5__)$' "$sandbox/16x16x32.cpp" && ok ||
  fail "rows of 32 cells (whole vectors) ask for Zen 4's and Zen 5's unmasked loop"
grep -qE '__znver[45]__' "$sandbox/16x16x24.cpp" && fail "rows of 24 cells keep the masked form on Zen 4 and 5" || ok
"$clangxx" -x c++ -std=c++20 -O3 -march=sapphirerapids -S -o "$sandbox/16x16x32-sapphirerapids.s" \
  "$sandbox/16x16x32.cpp" || fail "16x16x32.cpp compiles for sapphirerapids"
whole=$(masked_stores "$sandbox/16x16x32-znver5.s")
whole_zen4=$(masked_stores "$sandbox/16x16x32-znver4.s")
whole_intel=$(masked_stores "$sandbox/16x16x32-sapphirerapids.s")
partial=$(masked_stores "$sandbox/16x16x24-znver5.s")
partial_zen4=$(masked_stores "$sandbox/16x16x24-znver4.s")
[ "$whole" -eq 0 ] && [ "$whole_zen4" -eq 0 ] && [ "$whole_intel" -ge 19 ] && [ "$partial" -ge 19 ] &&
  [ "$partial_zen4" -ge 19 ] && ok ||
  fail "masked vector stores: whole rows on Zen 5 $whole and Zen 4 $whole_zen4 (want 0), on Intel $whole_intel, rows with a remainder on Zen 5 $partial and Zen 4 $partial_zen4 (want >= 19, one per population)"
echo "masked vector stores: whole rows on Zen 5 $whole, Zen 4 $whole_zen4, Intel $whole_intel; rows with a remainder on Zen 5 $partial, Zen 4 $partial_zen4"
# With run-time extents (as a sharded axis has), the loop is vectorised on every target too: its
# run-time checks are many, and the cost model alone would leave it scalar.
run "$uwjit" run pipe-flow --size 16 --steps 1 --set extents=runtime --output "$sandbox/out" --json
expect_code 0 "uwjit run pipe-flow --set extents=runtime"
runtime_key=$(json 'd["kernels"][0]["key"]' <<<"$out")
"$uwjit" cache inspect --source "$runtime_key" >"$sandbox/runtime.cpp"
for isa in x86-64-v3 x86-64-v4 znver4; do
  "$clangxx" -x c++ -std=c++20 -O3 -march=$isa -S -o "$sandbox/runtime-$isa.s" "$sandbox/runtime.cpp" ||
    fail "runtime.cpp compiles for $isa"
  vector_adds=$(grep -cE 'vaddpd\s+%[yz]mm' "$sandbox/runtime-$isa.s")
  [ "$vector_adds" -gt 0 ] && ok || fail "run-time extents, $isa: the cell loop is vectorised ($vector_adds vector additions)"
done
finish
