#!/usr/bin/env bash
# Fails on an #include that the dependency table of DESIGN.md forbids.
set -u
root=$1
status=0
forbid() { # forbid FOLDERS PATTERN WHY
  local folders=$1 pattern=$2 why=$3 hits=""
  for f in $folders; do
    [ -d "$root/$f" ] || continue
    hits+=$(grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($pattern)" "$root/$f" \
      --include='*.hpp' --include='*.h' --include='*.cpp' || true)
  done
  if [ -n "$hits" ]; then
    echo "FORBIDDEN ($why):"
    echo "$hits"
    status=1
  fi
}
forbid "common codegen cache runtime nodes tools tests" "llvm/|clang/" "only engine/ includes LLVM or Clang"
# Within engine/, only src/llvm.hpp includes LLVM/Clang.
hits=$(grep -rlE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(llvm|clang)/' "$root/engine" | grep -v 'engine/src/llvm.hpp$' || true)
[ -z "$hits" ] || { echo "FORBIDDEN (only engine/src/llvm.hpp includes LLVM): $hits"; status=1; }
forbid "common codegen cache nodes tools" "mpi\.h" "only engine's MPI communicator and runtime/ include <mpi.h>"
forbid "common codegen cache" "uwjit/(engine|runtime|nodes)/" "a lower folder must not know a higher one"
forbid "common" "uwjit/(codegen|cache)/|openssl/|nlohmann/|boost/" "common/ depends on the standard library and spdlog only"
forbid "codegen" "uwjit/cache/|openssl/|spdlog/|nlohmann/|boost/|fstream" "codegen/ uses common and the standard library only"
forbid "cache" "boost/|spdlog/" "cache/ uses common, OpenSSL, nlohmann-json and POSIX"
forbid "nodes" "uwjit/cache/|openssl/" "nodes/ use runtime and codegen, not cache internals"
# Public headers include only the standard library and uwjit's own public headers.
for dir in "$root"/*/include; do
  [ -d "$dir" ] || continue
  # <uwjit/mpi.hpp> is the one public header that takes an MPI_Comm; it stands apart.
  hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(llvm|clang|spdlog|fmt|nlohmann|openssl|boost|mpi)' "$dir" \
    | grep -v '/include/uwjit/mpi\.hpp:[0-9]*:#include <mpi\.h>' || true)
  [ -z "$hits" ] || { echo "FORBIDDEN (third-party header in a public header): $hits"; status=1; }
done
[ $status -eq 0 ] && echo "include rules: 1 passed, 0 failed" || echo "include rules: 0 passed, 1 failed"
exit $status
