#!/usr/bin/env bash
# Builds the HTML manual into build/docs/html (or OUT/html): the Markdown pages of docs/ (Sphinx
# with MyST), the C++ API from the public headers' `///` comments (Doxygen XML, read by breathe)
# and the Python API from the module's docstrings (autodoc over the built module). Warnings are
# errors, and every page is read afresh (-E), so an earlier build's doctrees never hide one.
# Needs Debian's python3-sphinx, python3-myst-parser, python3-breathe and doxygen (tools/setup.sh
# installs them) and a build with the Python module.
#
#   tools/docs.sh                       the module of build/release (else build/ci)
#   tools/docs.sh BUILD_DIR [OUT]       the module of BUILD_DIR/python, the manual in OUT/html
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
if [ -z "$build" ]; then
  for preset in release ci dev; do
    if [ -f "$root/build/$preset/python/uwjit/__init__.py" ]; then
      build=$root/build/$preset
      break
    fi
  done
fi
if [ -z "$build" ] || [ ! -f "$build/python/uwjit/__init__.py" ]; then
  echo "docs: no built Python module (build/<preset>/python/uwjit): run tools/setup.sh first" >&2
  exit 1
fi
out=${2:-$root/build/docs}
python=${UWJIT_DOCS_PYTHON:-/usr/bin/python3}
for tool in doxygen "$python"; do
  command -v "$tool" >/dev/null || {
    echo "docs: $tool is missing (tools/setup.sh --deps installs it)" >&2
    exit 1
  }
done
mkdir -p "$out/doxygen"

# The public headers, as a reader of the API sees them: `///` comments, no private sources.
{
  echo "PROJECT_NAME = uwjit"
  echo "OUTPUT_DIRECTORY = $out/doxygen"
  echo "GENERATE_HTML = NO"
  echo "GENERATE_LATEX = NO"
  echo "GENERATE_XML = YES"
  echo "XML_PROGRAMLISTING = NO"
  echo "RECURSIVE = YES"
  echo "FILE_PATTERNS = *.hpp *.h"
  echo "EXTRACT_ALL = YES"
  echo "EXTRACT_PRIVATE = NO"
  echo "QUIET = YES"
  echo "WARNINGS = NO"
  echo "ENABLE_PREPROCESSING = YES"
  echo "MACRO_EXPANSION = YES"
  echo "STRIP_FROM_INC_PATH = $(printf '%s ' "$root"/*/include)"
  echo "INPUT = $(printf '%s ' "$root"/{common,codegen,cache,comm,engine,runtime,driver,nodes}/include/uwjit) $root/comm/include/uwjit/mpi.hpp"
} | doxygen - >"$out/doxygen.log" 2>&1 || {
  cat "$out/doxygen.log" >&2
  exit 1
}

UWJIT_DOXYGEN_XML=$out/doxygen/xml PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH} \
  UWJIT_LOG_LEVEL=off "$python" -m sphinx -W --keep-going -E -q -b html \
  -d "$out/doctrees" "$root/docs" "$out/html"
echo "docs: the manual is $out/html/index.html"
