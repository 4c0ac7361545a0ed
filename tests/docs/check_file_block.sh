#!/usr/bin/env bash
# A page that shows a whole file of the repository (a batch script the suite
# runs) marks the fenced block with `<!-- file: PATH -->` on the line before
# it; this check fails, with the difference, when the block is not that
# file's text, so the page cannot drift from what the suite runs.
#
#   check_file_block.sh PAGE.md REPO_ROOT RELATIVE_PATH
set -u
page=${1:?usage: check_file_block.sh PAGE.md REPO_ROOT RELATIVE_PATH}
root=${2:?}
file=${3:?}
block=$(awk -v marker="<!-- file: $file -->" '
  $0 == marker { state = 1; next }
  state == 1 && /^```/ { state = 2; next }
  state == 2 && /^```/ { exit }
  state == 2 { print }' "$page")
[ -n "$block" ] || { echo "FAIL: $page has no block marked <!-- file: $file -->"; exit 1; }
if diff -u "$root/$file" <(printf '%s\n' "$block"); then
  echo "PASS: the block in $page is $file"
else
  echo "FAIL: the block in $page differs from $file (above: - the file, + the page)"
  exit 1
fi
