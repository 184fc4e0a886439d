#!/usr/bin/env bash
# CLI suite under Slurm: `srun --mpi=pmix uwjit run --shard` is one job of N ranks (one compile,
# the node's ranks sharing its cores), and a job warmed into a read-only site cache by a sharded
# run serves sharded runs of any rank count with no compile and nothing copied. Exit 77 (reported
# as skipped) where there is no Slurm to run under (no srun, or no controller answering), or
# where srun offers no PMIx, naming what is missing.
uwjit=$1
. "$(dirname "$0")/lib.sh"
export UWJIT_LOG_LEVEL=off

skip() {
  echo "skipped: $*"
  exit 77
}
command -v srun >/dev/null || skip "no srun (Slurm is not installed)"
timeout 20 sinfo -h >/dev/null 2>&1 || skip "no Slurm controller answers (sinfo fails)"
timeout 20 srun --mpi=list 2>&1 | grep -qw pmix || skip "this Slurm offers no PMIx (srun --mpi=list)"
# Another user cannot read the sandbox, and Slurm may run the tasks as this user anywhere: keep
# the files in a directory the tasks can reach.
base=$(mktemp -d /tmp/uwjit-srun.XXXXXX)
trap 'rm -rf "$sandbox" "$base"' EXIT
chmod 0755 "$base"

run timeout 120 srun -n 2 --mpi=pmix "$uwjit" run heat --shard x --size 13 --steps 30 \
  --output "$base/out" --json
expect_code 0 "srun -n 2 --mpi=pmix uwjit run heat --shard x"
[ "$(json 'd["ranks"], d["compiles"], d["check"]["passed"]' <<<"$out")" = "(2, 1, True)" ] && ok ||
  fail "one job of two ranks, one compile, the physics check passed"

# A sharded run warms the site cache; sharded runs of 1 and 2 ranks find the kernel there.
UWJIT_CACHE_DIR=$base/site run timeout 120 srun -n 2 --mpi=pmix "$uwjit" run heat --shard x \
  --size 13 --steps 1 --output "$base/out"
expect_code 0 "a sharded run fills the site cache"
chmod -R a+rX,a-w "$base/site"
for n in 1 2; do
  UWJIT_CACHE_DIR=$base/local-$n UWJIT_CACHE_SITE_DIR=$base/site \
    run timeout 120 srun -n "$n" --mpi=pmix --oversubscribe "$uwjit" run heat --shard x --size 13 \
    --steps 2 --output "$base/out" --json
  [ "$(json 'd["ranks"], d["compiles"], d["kernels"][0]["served_from"]' <<<"$out")" = "($n, 0, '$base/site')" ] &&
    ok || fail "$n rank(s) under srun: the kernel comes from the site cache"
  [ -z "$(ls "$base/local-$n" | grep -E '^[0-9a-f]{16}\.o$')" ] && ok ||
    fail "$n rank(s) under srun: nothing copied into the node's cache"
done

finish
