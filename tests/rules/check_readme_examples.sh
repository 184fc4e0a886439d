#!/usr/bin/env bash
# The README's worked examples are files of the repository: a fenced block that follows a line
# `<!-- file: PATH -->` must be the file PATH, byte for byte, so the README shows what the tests
# build and run.
set -euo pipefail
root=$1
readme=$root/README.md
checked=0
failed=0
while IFS= read -r path; do
  block=$(awk -v want="<!-- file: $path -->" '
    $0 == want { armed = 1; next }
    armed && /^```/ && !inside { inside = 1; next }
    inside && /^```$/ { exit }
    inside { print }
  ' "$readme")
  if [ ! -f "$root/$path" ]; then
    echo "README names $path, which does not exist"
    failed=$((failed + 1))
  elif [ "$block" != "$(cat "$root/$path")" ]; then
    echo "README's block for $path differs from the file:"
    diff <(printf '%s\n' "$block") "$root/$path" | head -20 || true
    failed=$((failed + 1))
  fi
  checked=$((checked + 1))
done < <(sed -n 's/^<!-- file: \(.*\) -->$/\1/p' "$readme")
if [ "$checked" -eq 0 ]; then
  echo "README has no <!-- file: PATH --> blocks"
  exit 1
fi
echo "readme examples: $((checked - failed)) of $checked blocks equal their files"
[ "$failed" -eq 0 ]
