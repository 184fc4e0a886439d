#!/usr/bin/env bash
# CLI suite: the cache on NFS. Serves a directory of the sandbox over NFS from this machine
# (Debian's nfs-kernel-server and nfs-common) to itself, mounted twice with separate client
# caches (nosharecache) as two machines would, and checks locking and publishing across them:
# an entry published through one mount serves the other, and processes racing through both on
# one cold kernel compile it once (flock is a lock of the NFS server's across clients).
#
# Exit 77 (reported by CTest as skipped, never as passed) when this machine cannot serve and
# mount NFS: not root, a tool missing, or a kernel without an NFS server or client (a container
# or a microVM without the nfsd and nfs file systems), naming what is missing.
uwjit=$1
. "$(dirname "$0")/lib.sh"

skip() {
  echo "skipped: $*"
  exit 77
}
[ "$(id -u)" = 0 ] || skip "serving and mounting NFS needs root"
for tool in rpcbind rpc.nfsd rpc.mountd exportfs mount.nfs; do
  command -v "$tool" >/dev/null || skip "$tool is missing (Debian: nfs-kernel-server, nfs-common)"
done
grep -qw nfsd /proc/filesystems || modprobe nfsd 2>/dev/null ||
  skip "this kernel has no NFS server (no nfsd in /proc/filesystems, no module to load)"
grep -qwE 'nfs4?' /proc/filesystems || modprobe nfs 2>/dev/null ||
  skip "this kernel has no NFS client (no nfs in /proc/filesystems, no module to load)"

export_dir=$sandbox/export
a=$sandbox/client-a
b=$sandbox/client-b
mkdir -p "$export_dir" "$a" "$b"
chmod 0755 "$sandbox"
started=()
cleanup() {
  umount "$a" "$b" 2>/dev/null
  exportfs -u "127.0.0.1:$export_dir" 2>/dev/null
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$sandbox"
}
trap cleanup EXIT
if ! pgrep -x rpcbind >/dev/null; then
  rpcbind -f -w &
  started+=($!)
fi
mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || skip "cannot mount /proc/fs/nfsd"
rpc.nfsd 2 || skip "rpc.nfsd cannot start the server"
if ! pgrep -x rpc.mountd >/dev/null; then
  rpc.mountd -F &
  started+=($!)
fi
exportfs -o rw,sync,no_subtree_check,no_root_squash,fsid=77 "127.0.0.1:$export_dir" ||
  skip "exportfs refuses the export"
for client in "$a" "$b"; do
  mount -t nfs -o vers=4.2,nosharecache,hard "127.0.0.1:$export_dir" "$client" ||
    skip "cannot mount the export"
done

# Published through one client, served to the other.
UWJIT_CACHE_DIR=$a/cache run "$uwjit" warm heat --size 12 --json
expect_code 0 "warm through client a"
UWJIT_CACHE_DIR=$b/cache run "$uwjit" run heat --size 12 --steps 2 --output "$sandbox/out" --json
[ "$(json 'd["compiles"], d["kernels"][0]["tier"]' <<<"$out")" = "(0, 'disk')" ] && ok ||
  fail "an entry published through one client serves the other"

# Four processes, two through each client, racing on one cold kernel: flock excludes across
# clients, so it is compiled once, with no lock warning.
for i in 1 2 3 4; do
  client=$a
  [ $((i % 2)) = 0 ] && client=$b
  UWJIT_CACHE_DIR=$client/cache "$uwjit" run pipe-flow --size 12 --steps 2 \
    --output "$sandbox/race-out-$i" --json >"$sandbox/race.$i" 2>"$sandbox/race.err.$i" &
done
wait
python3 - "$sandbox"/race.? <<'PY' && ok || fail "racing through two clients compiles once"
import json, sys
reports = [json.load(open(name)) for name in sys.argv[1:]]
assert sum(r["compiles"] for r in reports) == 1, [r["compiles"] for r in reports]
PY
! grep -q 'running unlocked' "$sandbox"/race.err.? && ok || fail "locks work on NFS: no warning"
UWJIT_CACHE_DIR=$a/cache run "$uwjit" cache verify
expect_code 0 "the cache on NFS verifies clean through client a"
UWJIT_CACHE_DIR=$b/cache run "$uwjit" cache verify
expect_code 0 "and through client b"

finish
