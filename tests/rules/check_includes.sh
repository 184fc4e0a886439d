#!/usr/bin/env bash
# Fails on an #include that docs/ARCHITECTURE.md does not allow: its folder table (between the
# include-rules markers) says which uwjit folders and which outside libraries each folder may
# include; the rules listed under it are checked one by one below.
set -u
root=$1
doc="$root/docs/ARCHITECTURE.md"
status=0
checked=0
report() { # report WHY HITS
  if [ -n "$2" ]; then
    echo "FORBIDDEN ($1):"
    echo "$2"
    status=1
  fi
}
includes() { # includes DIR: every #include line under DIR, as FILE:LINE:TEXT
  grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]' "$1" \
    --include='*.hpp' --include='*.h' --include='*.cpp' 2>/dev/null || true
}
# The include pattern of each outside library the table may name.
declare -A library=(
  [llvm]='<llvm/' [clang]='<clang/' [mpi]='<mpi\.h>|<uwjit/mpi\.hpp>' [openssl]='<openssl/'
  [nlohmann]='<nlohmann/' [spdlog]='<spdlog/' [fmt]='<fmt/' [boost]='<boost/'
  [cairo]='<cairo' [pybind11]='<pybind11/' [doctest]='<doctest/' [dl]='<dlfcn\.h>'
  [hdf5]='<(hdf5|H5[A-Za-z]*)\.h>'
)
folders=()
table=$(sed -n '/<!-- include-rules:begin -->/,/<!-- include-rules:end -->/p' "$doc" | grep -E '^\| `')
[ -n "$table" ] || { echo "include rules: no folder table in $doc"; exit 1; }
while IFS='|' read -r _ folder _ ours theirs _; do
  folder=$(tr -d ' `' <<<"$folder")
  ours=$(tr -d ' —' <<<"$ours")
  theirs=$(tr -d ' —' <<<"$theirs")
  folders+=("$folder")
  [ -d "$root/$folder" ] || { report "the table names a folder that does not exist" "$folder"; continue; }
  checked=$((checked + 1))
  lines=$(includes "$root/$folder")
  # uwjit folders: its own, and those the table lists (<uwjit/mpi.hpp> belongs to comm).
  allowed="$folder,$ours"
  hits=$(grep -oE '^[^:]+:[0-9]+:.*<uwjit/[a-z_]+' <<<"$lines" | while IFS= read -r hit; do
    used=${hit##*<uwjit/}
    [ "$used" = mpi ] && used=comm
    case ",$allowed," in *",$used,"*) ;; *) echo "$hit";; esac
  done)
  report "$folder/ may include uwjit's $ours only (docs/ARCHITECTURE.md)" "$hits"
  for name in "${!library[@]}"; do
    case ",$theirs," in *",$name,"*) continue;; esac
    hits=$(grep -E "${library[$name]}" <<<"$lines" || true)
    report "$folder/ may not include $name (docs/ARCHITECTURE.md)" "$hits"
  done
done <<<"$table"
# Every library folder is in the table.
for dir in "$root"/*/include; do
  folder=$(basename "$(dirname "$dir")")
  case " ${folders[*]} " in *" $folder "*) ;; *) report "a folder missing from the table" "$folder";; esac
done
# Only engine/src/llvm.hpp includes LLVM or Clang.
report "only engine/src/llvm.hpp includes LLVM or Clang" \
  "$(includes "$root/engine" | grep -E '<(llvm|clang)/' | grep -v '^[^:]*engine/src/llvm\.hpp:' || true)"
# <mpi.h> only in comm's MPI implementation and <uwjit/mpi.hpp>.
mpi_h=""
for folder in "${folders[@]}"; do
  mpi_h+=$(includes "$root/$folder" | grep -E '<mpi\.h>' \
    | grep -vE '^[^:]*(comm/src/mpi_comm\.cpp|comm/include/uwjit/mpi\.hpp):' || true)
done
report "<mpi.h> only in comm/src/mpi_comm.cpp and <uwjit/mpi.hpp>" "$mpi_h"
# runtime/ uses the cache's key.hpp only.
report "runtime/ uses only <uwjit/cache/key.hpp> of the cache" \
  "$(includes "$root/runtime" | grep -E '<uwjit/cache/' | grep -v '<uwjit/cache/key\.hpp>' || true)"
# Public headers include only the standard library and uwjit's public headers.
for dir in "$root"/*/include; do
  hits=$(includes "$dir" | grep -E '<(llvm|clang|spdlog|fmt|nlohmann|openssl|boost|cairo|mpi|hdf5|H5)' \
    | grep -v '/include/uwjit/mpi\.hpp:[0-9]*:#include <mpi\.h>' || true)
  report "third-party header in a public header" "$hits"
done
echo "include rules: $checked folders checked against docs/ARCHITECTURE.md"
[ $status -eq 0 ] && echo "include rules: 1 passed, 0 failed" || echo "include rules: 0 passed, 1 failed"
exit $status
