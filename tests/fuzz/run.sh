#!/usr/bin/env bash
# Runs one fuzzer for a bounded time from the seed corpus in the repository, keeping what it
# finds in a temporary corpus (the repository stays clean). A crash prints the input, base64.
#   run.sh FUZZER SEED_DIR [SECONDS]
set -u
fuzzer=$1
seeds=$2
seconds=${3:-10}
work=$(mktemp -d "${TMPDIR:-/tmp}/uwjit-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$seeds" 2>"$work/log"
code=$?
grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::new_units_added|Done [0-9]+ runs)' "$work/log"
if [ $code -ne 0 ]; then
  tail -n 60 "$work/log"
  for artifact in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -e "$artifact" ] && { echo "input $(basename "$artifact") (base64):"; base64 "$artifact"; }
  done
  echo "0 passed, 1 failed"
  exit 1
fi
echo "1 passed, 0 failed"
