#!/usr/bin/env bash
# uwjit::format checks its pattern at compile time: a matching call compiles; a pattern with more
# or fewer "{}" than arguments, or with a spec such as "{:x}" (which it would print literally),
# does not, and the compiler names the reason. Also through a logger.
set -u
compiler=$1
include=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/uwjit-format.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
compile() { # compile CODE: compiles a file whose main runs CODE; output in $work/out
  printf '#include <uwjit/common/format.hpp>\n#include <uwjit/common/log.hpp>\nint main() { %s; }\n' \
    "$1" >"$work/snippet.cpp"
  "$compiler" -std=c++20 -fsyntax-only -I"$include" "$work/snippet.cpp" >"$work/out" 2>&1
}
accepts() {
  if compile "$1"; then echo "ok: compiles: $1"; else echo "FAIL: does not compile: $1"; cat "$work/out"; status=1; fi
}
rejects() { # rejects REASON CODE
  if compile "$2"; then
    echo "FAIL: compiles: $2"; status=1
  elif grep -q "$1" "$work/out"; then
    echo "ok: rejected ($1): $2"
  else
    echo "FAIL: rejected for another reason: $2"; cat "$work/out"; status=1
  fi
}
accepts '(void)uwjit::format("{} and {}", 1, "two")'
accepts '(void)uwjit::format("none")'
accepts '(void)uwjit::format("{ literal } {}", 1)'
accepts 'uwjit::log::get("t").warn("{} of {}", 1, 2)'
rejects format_pattern_and_argument_count_differ '(void)uwjit::format("{} and {}", 1)'
rejects format_pattern_and_argument_count_differ '(void)uwjit::format("{}", 1, 2)'
rejects format_pattern_and_argument_count_differ '(void)uwjit::format("none", 1)'
rejects format_specs_are_not_supported '(void)uwjit::format("/x-{:x}-{}", 1, 2)'
rejects format_pattern_and_argument_count_differ 'uwjit::log::get("t").info("{} {}", 1)'
rejects "not usable in a constant expression" 'std::string p = "{}"; (void)uwjit::format(p, 1)'
exit $status
