#!/usr/bin/env bash
# Output folders that cannot be made: under a path whose parent is
# a regular file, and on a read-only file system. Each of --checkpoint-dir
# (ModelCheckpoint), --backup-dir (BackupAndRestore), --tensorboard and the
# launcher's --output-filename must end the job with a non-zero status and a
# message that names the folder, the reason and the fix, never a C++ type
# name such as std::filesystem::__cxx11::filesystem_error.
#   unwritable_dirs.sh LAUNCHER LENET5
set -u
launcher=$1 lenet5=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/tnt-unwritable.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }

# A read-only file system: a tmpfs mounted read-only in a private mount
# namespace (root, as in CI); elsewhere /proc, which refuses new folders.
readonly_root=$work/readonly
mkdir "$readonly_root"
wrap=()
reason="No such file or directory"
if unshare -m sh -c "mount -t tmpfs -o ro tmpfs '$readonly_root'" 2>/dev/null; then
  wrap=(unshare -m sh -c "mount -t tmpfs -o ro tmpfs '$readonly_root' && exec \"\$0\" \"\$@\"")
  reason="Read-only file system"
else
  readonly_root=/proc/tnt-readonly-$$
  echo "(no mount namespace here: $readonly_root stands in for a read-only file system)"
fi
: >"$work/file"

expect() {  # NAME WHO DIR REASON ARGS...: runs ARGS, checks status and message
  local name=$1 who=$2 dir=$3 why=$4
  shift 4
  "$@" >"$work/out" 2>&1 </dev/null
  local status=$?
  if [ "$status" -eq 0 ]; then fail "$name: exit status 0"; cat "$work/out"; return; fi
  local message="$who: cannot create the directory '$dir': $why"
  [ "$who" = "--output-filename" ] && message="--output-filename: cannot create directory $dir: $why"
  if grep -qF -- "$message" "$work/out"; then pass "$name: names the folder and the reason"
  else fail "$name: missing '$message'"; cat "$work/out"; fi
  if grep -qE "filesystem_error|std::|__cxx11" "$work/out"; then
    fail "$name: a C++ type name reaches the user"; cat "$work/out"
  else pass "$name: no C++ type name"; fi
  grep -qF "test accuracy" "$work/out" && fail "$name: the job trained anyway"
}

train() {  # FLAGS...: a tiny LeNet-5 job at 1 rank
  "${wrap[@]}" "$launcher" -n 1 --no-gpu -- "$lenet5" --epochs 1 --train-size 64 --val-size 0 \
    --test-size 64 --batch-size 64 --verbose 0 "$@"
}

for where in file readonly; do
  if [ "$where" = file ]; then
    base=$work/file why="'$work/file' is a file, not a directory"
  else
    base=$readonly_root why=$reason
  fi
  expect "$where: --checkpoint-dir" ModelCheckpoint "$base/ckpt" "$why" train --checkpoint-dir "$base/ckpt"
  expect "$where: --backup-dir" BackupAndRestore "$base/backup" "$why" train --backup-dir "$base/backup"
  expect "$where: --tensorboard" TensorBoard "$base/tb/train" "$why" train --tensorboard "$base/tb"
done
# The launcher's own folder, before anything starts.
expect "file: --output-filename" --output-filename "$work/file/out" "Not a directory" \
  "$launcher" -n 1 --no-gpu --output-filename "$work/file/out" -- /bin/true

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo PASS
