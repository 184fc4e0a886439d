#!/usr/bin/env bash
# CLI suite: a sharded job killed (SIGKILL, every rank and mpiexec) while it checkpoints over an
# earlier checkpoint, at a random moment of the job or just after its temporary appears, leaves
# the old file or the new one, never a torn one: every file found afterwards restores, its
# checksums checked.
mpiexec=$1
uwjit=$2
trials=${3:-50}
. "$(dirname "$0")/lib.sh"
export UWJIT_LOG_LEVEL=off
cd "$sandbox" || exit 1

run "$uwjit" run heat --size 128 --steps 2 --checkpoint base.ckpt --output out
expect_code 0 "a checkpoint to start from"
cp base.ckpt job.ckpt
# One uninterrupted job first: it compiles the kernels and says how long a job takes.
start=$(date +%s%N)
run timeout 120 "$mpiexec" -np 2 "$uwjit" run heat --shard x --restore base.ckpt --steps 1 \
  --checkpoint job.ckpt --output out
expect_code 0 "a sharded job that checkpoints"
took_ms=$((($(date +%s%N) - start) / 1000000))

old=0
new=0
during=0
RANDOM=7 # the same moments on every run of the suite
trial=0
# The trials asked for, and more (up to twice as many) while fewer than a fifth of the kills have
# landed during a write: on a loaded machine the polling below can miss the write's window.
while [ "$trial" -lt "$trials" ] ||
  { [ "$during" -lt $((trials / 5)) ] && [ "$trial" -lt $((2 * trials)) ]; }; do
  trial=$((trial + 1))
  before=$(sha256sum job.ckpt | cut -c1-64)
  # Its own process group, so that the kill reaches mpiexec and both ranks at once.
  setsid "$mpiexec" -np 2 "$uwjit" run heat --shard x --restore base.ckpt \
    --steps $((1 + trial % 3)) --checkpoint job.ckpt --output out >/dev/null 2>&1 &
  job=$!
  if [ $((trial % 2)) = 0 ]; then
    # Anywhere in the job.
    sleep "$(awk -v r=$RANDOM -v t="$took_ms" 'BEGIN { printf "%.3f", (0.3 + 0.9 * r / 32767) * t / 1000 }')"
  else
    # Inside the write: once the ranks' temporary exists (or, for a writer that wrote in place,
    # once the checkpoint's name is another file), then up to 4 ms later.
    inode=$(stat -c %i job.ckpt)
    while kill -0 "$job" 2>/dev/null && ! compgen -G '.uwjit-tmp.job.ckpt.*' >/dev/null &&
      [ "$(stat -c %i job.ckpt 2>/dev/null)" = "$inode" ]; do
      sleep 0.001
    done
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.4f", 0.004 * r / 32767 }')"
  fi
  compgen -G '.uwjit-tmp.job.ckpt.*' >/dev/null && during=$((during + 1))
  kill -KILL -- -"$job" 2>/dev/null
  wait "$job" 2>/dev/null
  pkill -KILL -f -- "--checkpoint job.ckpt" 2>/dev/null # a rank that outlived its launcher
  after=$(sha256sum job.ckpt | cut -c1-64)
  if [ "$after" = "$before" ]; then
    old=$((old + 1))
    ok
  else
    new=$((new + 1))
    run "$uwjit" run heat --restore job.ckpt --steps 1 --output out
    expect_code 0 "trial $trial: the checkpoint left after the kill restores"
  fi
  rm -f .uwjit-tmp.* # a killed writer's temporary: never under the checkpoint's name
done
echo "$trial kills ($during with the checkpoint's temporary present): the old checkpoint $old times, a new one $new times (a job takes ${took_ms} ms)"
# The kills that matter are those during the write: without them the suite proves nothing.
[ "$during" -ge $((trials / 5)) ] && ok || fail "only $during of $trial kills landed during a write"
finish
