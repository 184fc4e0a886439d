#!/usr/bin/env bash
# Packs the static build (cmake --preset static) into one archive that runs on a GPU machine
# without Debian's LLVM, MPI or any other library of this machine: the programs, libuwjit with
# LLVM and Clang inside, Open MPI's launcher, plugins and help texts, and every shared library
# these load that is not glibc's or GCC's own. libcuda is never packed: it is the GPU machine's.
# Unpacked there, `. uwjit-gpu/env.sh` puts it first on PATH and the loader's path, and
# `uwjit-gpu/check.sh` runs the GPU checks (tools/gpu/check.sh).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: tools/gpu/pack.sh [--build DIR] [--out FILE]

Packs the static build into FILE (default: uwjit-gpu.tar.xz), a directory uwjit-gpu/ with bin/
(uwjit, uwjit-bench, uwjit-bench-mpi, uwjit_gpu_tests, mpiexec), lib/, mpi/ (Open MPI's plugins
and help texts), env.sh and check.sh. Build it first:

  cmake --preset static && cmake --build --preset static

options:
  --build DIR   the static build (default: build/static)
  --out FILE    the archive to write (default: uwjit-gpu.tar.xz)
  --help        show this help
EOF
}

here=$(cd "$(dirname "$0")" && pwd)
build=build/static
out=uwjit-gpu.tar.xz
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    --help) usage; exit 0 ;;
    *) echo "pack.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

die() { echo "pack.sh: $*" >&2; exit 1; }
programs=(uwjit uwjit-bench uwjit-bench-mpi uwjit_gpu_tests)
for p in "${programs[@]}"; do
  [ -x "$build/bin/$p" ] || die "$build/bin/$p is missing: build the static preset first" \
    "(cmake --preset static && cmake --build --preset static)"
done
linked=$(ldd "$build/bin/uwjit") || die "ldd $build/bin/uwjit failed"
if grep -Eq 'libLLVM|libclang-cpp' <<<"$linked"; then
  die "$build links the shared LLVM or Clang library: pack a build made with -DUWJIT_STATIC_LLVM=ON"
fi
grep -q 'libmpi\.so' <<<"$linked" ||
  die "$build was built without MPI: install Open MPI (tools/setup.sh) and configure it again"
command -v ompi_info >/dev/null || die "ompi_info not found: Open MPI is packed from this machine"

# Open MPI's layout on this machine, and the PMIx its plugins load.
ompi_path() { ompi_info --parsable --path "$1" | sed -n "s/^path:$1://p" | head -1; }
ompi_prefix=$(ompi_path prefix)
ompi_plugins=$(ompi_path pkglibdir)
ompi_help=$(ompi_path pkgdatadir)
pmix_lib=$(ldd "$ompi_plugins"/mca_pmix_*.so | awk '/libpmix\.so/ {print $3; exit}')
pmix_root=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
for dir in "$ompi_plugins" "$ompi_help" "$pmix_root/lib/pmix"; do
  case $dir in "$ompi_prefix"/*) ;; *) die "$dir is not under Open MPI's prefix $ompi_prefix" ;; esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkg=$work/uwjit-gpu
mkdir -p "$pkg/bin" "$pkg/lib" "$pkg/mpi"

for p in "${programs[@]}"; do
  cp "$build/bin/$p" "$pkg/bin/"
done
cp "$(readlink -f "$(command -v orterun)")" "$pkg/bin/mpiexec"
strip --strip-unneeded -o "$pkg/lib/libuwjit.so.0.1" "$build/libuwjit.so.0.1"
cp -L "$build/comm/libuwjit_mpi.so.0.1" "$pkg/lib/"
# The plugins keep their place under the prefix, which env.sh names as OPAL_PREFIX.
for dir in "$ompi_plugins" "$ompi_help" "$pmix_root/lib/pmix" "$pmix_root/share"; do
  [ -d "$dir" ] || continue
  mkdir -p "$pkg/mpi/${dir#"$ompi_prefix"/}"
  cp -RL "$dir/." "$pkg/mpi/${dir#"$ompi_prefix"/}/"
done

# Every library those load, flat in lib/, but glibc's and GCC's own (the machine's are newer).
system_owned='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil|libstdc\+\+|libgcc_s|libcuda)\.'
missing=$(find "$pkg" -type f \( -perm -u+x -o -name '*.so*' \) -exec ldd {} + 2>/dev/null |
  awk '/not found/ {print $1}' | grep -Ev 'libuwjit' | sort -u || true)
[ -z "$missing" ] || die "libraries not found on this machine: $missing"
find "$pkg" -type f \( -perm -u+x -o -name '*.so*' \) -exec ldd {} + 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $system_owned ]] && continue
    [ -e "$pkg/lib/$name" ] || cp -L "$path" "$pkg/lib/$name"
  done

cp "$here/env.sh" "$here/check.sh" "$here/same_state.py" "$pkg/"
tar -C "$work" -cf - uwjit-gpu | xz -9 -T0 >"$out"
echo "pack.sh: $out, $(du -b "$out" | cut -f1) bytes ($(find "$pkg" -type f | wc -l) files," \
  "$(du -sb "$pkg" | cut -f1) bytes unpacked)"
