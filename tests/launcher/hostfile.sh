#!/usr/bin/env bash
# --hostfile: duplicates, missing and empty files are refused with a message
# naming the problem; a good file becomes mpirun's --host list.
source "$(dirname "$0")/lib.sh"

cd "$WORK" || exit 1
printf 'node1\n# spare\nnode2   # second\n\nnode1\n' >dup-hosts
run --dry-run --hostfile dup-hosts -- /bin/true
expect_failure_status "duplicate host fails"
expect_contains "names the duplicate and its lines" "$ERR" "host 'node1' appears twice (lines 1 and 5)"
expect_contains "names the file" "$ERR" "dup-hosts"
expect_status "usage errors exit 2" 2

run --dry-run --hostfile no-such-file -- /bin/true
expect_failure_status "missing hostfile fails"
expect_contains "missing hostfile is named" "$ERR" "cannot read hostfile no-such-file"

printf '# only a comment\n\n' >empty-hosts
run --dry-run --hostfile empty-hosts -- /bin/true
expect_failure_status "empty hostfile fails"
expect_contains "empty hostfile is named" "$ERR" "hostfile empty-hosts lists no hosts"

printf '  alpha  \n# c\nbeta # x\n' >good-hosts
run --dry-run --no-gpu --hostfile good-hosts --npernode 2 -- /bin/true
expect_status "good hostfile" 0
expect_contains "host list with ranks per host" "$OUT" "--host alpha:2,beta:2 -np 4 --npernode 2"

run --dry-run --hostfile good-hosts -n 2 -- /bin/true
expect_failure_status "-n with --hostfile fails"
expect_contains "-n with --hostfile suggests --n-per-node" "$ERR" "--n-per-node 2"


# This node under two names: one host twice for mpirun (which refused it
# with a banner about slots).
printf 'localhost\n%s\n' "$(hostname)" >this-node-twice
run --dry-run --no-gpu --hostfile this-node-twice -- /bin/true
expect_status "this node twice: usage error" 2
expect_contains "this node twice: both names said" "$ERR" "'localhost' and '$(hostname)' both name this node"

finish
