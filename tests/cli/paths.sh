#!/usr/bin/env bash
# CLI suite: nothing of the user's is replaced or read by mistake. What uwjit run writes (output,
# series, pictures, checkpoint) and reads (a checkpoint, a kernel file) is a regular file where
# the user said, never a device, FIFO or socket, never a file outside --output, never one of the
# run's own outputs; every special file here is made inside the sandbox.
uwjit=$1
. "$(dirname "$0")/lib.sh"
cd "$sandbox" || exit 1

# The special files a user may have at a path: a FIFO, a character device (as root only; made
# with /dev/null's numbers inside the sandbox), a socket.
mkfifo pipe
specials=(pipe)
if mknod device c 1 3 2>/dev/null; then
  specials+=(device)
else
  echo "skipped (not counted): a character device needs mknod, which this user may not do"
fi
python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("sock")'
specials+=(sock)

for special in "${specials[@]}"; do
  kind=$(stat -c %F "$special")
  run "$uwjit" run heat --size 8 --steps 1 --output out --checkpoint "$special"
  expect_code 1 "--checkpoint at a $kind"
  expect_err "--checkpoint $special: cannot write \"$special\": it exists and is a .*, not a regular file" \
    "the $kind is named"
  [ "$(stat -c %F "$special")" = "$kind" ] && ok || fail "the $kind at --checkpoint is still one"
  [ ! -e out/heat.vti ] && ok || fail "a run refused for its checkpoint path wrote nothing"

  run "$uwjit" run heat --steps 1 --restore "$special"
  expect_code 1 "--restore of a $kind"
  expect_err "--restore $special: is a .*, not a regular file" "a $kind is not read as a checkpoint"

  run timeout 20 "$uwjit" compile "$special"
  expect_code 1 "compile of a $kind"
  expect_err "is a .*, not a regular file" "a $kind is not read as a kernel"
done
run "$uwjit" compile out
expect_code 1 "compile of a directory"
expect_err 'is a directory, not a regular file' "a directory is not compiled as an empty kernel"

# A file the run writes at the end that became a FIFO meanwhile is not renamed over either: the
# Python test does that one; here, the output directory's own files.
mkdir -p out2
mkfifo out2/heat.vti
run "$uwjit" run heat --size 8 --steps 1 --output out2
expect_code 1 "output over a FIFO"
expect_err 'out2/heat.vti.*is a FIFO, not a regular file' "the output's FIFO is named"
[ -p out2/heat.vti ] && ok || fail "the FIFO in --output is still a FIFO"

# A checkpoint path that is one of the run's own outputs is refused before the run.
mkdir -p series/heat_000001
for own in series/heat.pvd series/heat.vti series/heat_000001.vti series/heat_u.png series/heat.pvti \
  series/heat/heat_0001.vti series/heat_000001/heat_000001_0000.vti; do
  run "$uwjit" run heat --size 8 --steps 2 --output series --output-every 1 --checkpoint "$own"
  expect_code 1 "--checkpoint $own"
  expect_err "is one of the files this run writes in --output" "--checkpoint $own is refused"
done
[ ! -e series/heat.pvd ] && ok || fail "a refused run wrote its series"
rm -rf series/heat_000001 series/heat
run "$uwjit" run heat --size 8 --steps 2 --output series --checkpoint ./series/../series/heat.vti
expect_code 1 "another spelling of the output directory"
run "$uwjit" run heat --size 8 --steps 2 --output series --output-every 1 --checkpoint series/heat.ckpt
expect_code 0 "a checkpoint beside the outputs under a name of its own"

# A checkpoint whose node name is a path: refused when read, nothing written outside --output.
run "$uwjit" run heat --size 8 --steps 1 --output out3 --checkpoint good.ckpt
expect_code 0 "a checkpoint to forge"
mkdir -p victim
echo "important" >victim/important.vti
forge() { # forge NAME OUT: good.ckpt with its node renamed NAME, its head's checksum made valid
  python3 - "$1" "$2" <<'PY'
import hashlib, struct, sys
whole = open("good.ckpt", "rb").read()
(length,) = struct.unpack_from("<Q", whole, 12)  # the head's, after the magic and version
data = whole[:length - 64]
at = 8 + 4 + 8 + 8 + 4
(n,) = struct.unpack_from("<I", data, at)
at += 4 + n                                   # the type
(n,) = struct.unpack_from("<I", data, at)     # the name
name = sys.argv[1].encode().replace(b"\\0", b"\0")
head = data[:at] + struct.pack("<I", len(name)) + name + data[at + 4 + n:]
head = head[:12] + struct.pack("<Q", len(head) + 64) + head[20:]
head += hashlib.sha256(head).hexdigest().encode()
open(sys.argv[2], "wb").write(head + whole[len(head):])  # the data stays where it was
PY
}
for bad in '../victim/important' "$sandbox/victim/important" 'heat\0x' '.hidden' '-rf' ''; do
  forge "$bad" forged.ckpt
  run "$uwjit" run heat --restore forged.ckpt --steps 1 --output out4 --output-every 1 --plot
  expect_code 1 "a checkpoint whose node is named '$bad'"
  expect_err 'is not a valid node name' "the forged name '$bad' is named"
done
[ "$(cat victim/important.vti)" = "important" ] && ok || fail "the victim's file is untouched"
[ -z "$(ls out4 2>/dev/null)" ] && ok || fail "nothing was written for a forged checkpoint"

# A large file that is not a checkpoint is refused from its first bytes: the peak memory of the
# refusal is that of refusing a tiny file, not 300 MB more.
head -c 8 /dev/zero >tiny
head -c 300000000 /dev/zero >zeros
peak() { /usr/bin/time -f '%M' "$uwjit" run heat --restore "$1" 2>&1 >/dev/null | tail -n 1; }
run "$uwjit" run heat --restore zeros
expect_code 1 "a file of zeros"
expect_err 'not a uwjit checkpoint \(bad magic\)' "zeros are not a checkpoint"
tiny_kb=$(peak tiny)
zeros_kb=$(peak zeros)
[ $((zeros_kb - tiny_kb)) -lt 100000 ] && ok ||
  fail "300 MB of zeros refused without being read ($zeros_kb kB peak, $tiny_kb kB for 8 bytes)"
rm -f zeros

# A checkpoint path that names a user's file: refused before the run (a typo must not cost the
# file), the file left as it was; an earlier checkpoint and an empty file are replaced.
printf 'print("results")\n' >analysis.py
run "$uwjit" run heat --size 8 --steps 1 --output out5 --checkpoint analysis.py
expect_code 1 "--checkpoint over a user's file"
expect_err '--checkpoint analysis.py: cannot write "analysis.py": it exists \(17 bytes\) and is not a uwjit checkpoint' \
  "the user's file is named with what it is"
[ "$(cat analysis.py)" = 'print("results")' ] && ok || fail "the user's file is untouched"
[ ! -e out5/heat.vti ] && ok || fail "a run refused for its checkpoint path wrote nothing"
run "$uwjit" ensemble heat --size 8 --vary contrast=1:2:2 --until steps:40 --checkpoint analysis.py \
  --checkpoint-every 1
expect_code 1 "an ensemble's --checkpoint over a user's file"
expect_err 'is not a uwjit ensemble checkpoint' "the ensemble names what it would replace"
[ "$(cat analysis.py)" = 'print("results")' ] && ok || fail "the user's file is untouched by the ensemble"
run "$uwjit" run heat --size 8 --steps 1 --output out5 --checkpoint out5/heat.ckpt
expect_code 0 "a first checkpoint"
run "$uwjit" run heat --size 8 --steps 2 --output out5 --checkpoint out5/heat.ckpt
expect_code 0 "a checkpoint replaces the earlier one"
: >empty.ckpt
run "$uwjit" run heat --size 8 --steps 1 --output out5 --checkpoint empty.ckpt
expect_code 0 "a checkpoint replaces an empty file"
[ "$(head -c 8 empty.ckpt)" = UWJITCKP ] && ok || fail "the empty file became the checkpoint"

# A user's file named like the run's VTK output: refused before the first step, and left as it
# was (the writer would refuse it only when the run ends); an earlier output is replaced.
mkdir -p out6
printf 'my notes\n' >out6/heat.vti
run "$uwjit" run heat --size 8 --steps 1 --output out6
expect_code 1 "VTK output over a user's file"
expect_err '--output out6/heat.vti: cannot write "out6/heat.vti": it exists \(9 bytes\) and is not a VTK XML file' \
  "names the file and what it is"
[ -z "$out" ] && ok || fail "refused before the run (it reported): $out"
[ "$(ls out6)" = heat.vti ] && ok || fail "nothing else written: $(ls out6)"
[ "$(cat out6/heat.vti)" = 'my notes' ] && ok || fail "the user's file is untouched"
rm out6/heat.vti
run "$uwjit" run heat --size 8 --steps 1 --output out6
expect_code 0 "a run writes its VTK file"
run "$uwjit" run heat --size 8 --steps 1 --output out6
expect_code 0 "and replaces it the next time"

finish
