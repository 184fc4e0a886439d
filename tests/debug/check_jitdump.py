#!/usr/bin/env python3
"""Checks a perf jitdump file (the format of linux/tools/perf/Documentation/jitdump-specification.txt).

    check_jitdump.py FILE --pid PID --entry NAME --host EXE [--debug-file NAME]

Passes (exit 0) when the header is valid (magic, version 1, size 40, the host's ELF machine,
pad1 and flags zero, the process's pid, a timestamp), every record is well formed, a code-load
record describes NAME in this process, the file ends with a close record and, with
--debug-file, a debug-info record names that source file. Prints what it found either way.
"""
import argparse
import struct
import sys

JIT_CODE_LOAD, JIT_CODE_MOVE, JIT_CODE_DEBUG_INFO, JIT_CODE_CLOSE, JIT_CODE_UNWINDING_INFO = range(5)
MAGIC = 0x4A695444


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--entry", required=True)
    parser.add_argument("--host", required=True, help="the executable whose e_machine to expect")
    parser.add_argument("--debug-file")
    args = parser.parse_args()

    problems = []
    with open(args.host, "rb") as host:
        elf = host.read(20)
    expected_machine = struct.unpack_from("<H", elf, 18)[0]

    data = open(args.file, "rb").read()
    if len(data) < 40:
        print(f"FAIL: {args.file} has {len(data)} bytes, less than a header")
        return 1
    magic, version, total_size, elf_mach, pad1, pid, timestamp, flags = struct.unpack_from(
        "<IIIIIIQQ", data, 0)
    print(f"header: magic={magic:#x} version={version} total_size={total_size} "
          f"elf_mach={elf_mach} pad1={pad1} pid={pid} timestamp={timestamp} flags={flags:#x}")
    expect = [("magic", magic, MAGIC), ("version", version, 1), ("total_size", total_size, 40),
              ("elf_mach", elf_mach, expected_machine), ("pad1", pad1, 0), ("pid", pid, args.pid),
              ("flags", flags, 0)]
    for name, got, wanted in expect:
        if got != wanted:
            problems.append(f"header {name} is {got:#x}, expected {wanted:#x}")
    if timestamp == 0:
        problems.append("header timestamp is 0")

    offset = total_size if total_size >= 40 else 40
    loads, debug_files, kinds = [], set(), []
    while offset < len(data):
        if offset + 16 > len(data):
            problems.append(f"a torn record header at offset {offset}")
            break
        kind, size, stamp = struct.unpack_from("<IIQ", data, offset)
        kinds.append(kind)
        if size < 16 or offset + size > len(data):
            problems.append(f"record at offset {offset} (id {kind}) has size {size}, "
                            f"beyond the file's {len(data)} bytes")
            break
        body = data[offset + 16:offset + size]
        if kind == JIT_CODE_LOAD:
            rpid, tid, vma, addr, code_size, index = struct.unpack_from("<IIQQQQ", body, 0)
            name_end = body.index(b"\0", 40)
            name = body[40:name_end].decode()
            if 40 + len(name) + 1 + code_size != len(body):
                problems.append(f"code-load record {name} has an inconsistent size")
            loads.append(name)
            print(f"code load: {name} pid={rpid} vma={vma:#x} size={code_size} index={index}")
            if name == args.entry:
                if rpid != args.pid:
                    problems.append(f"code-load record of {name} has pid {rpid}")
                if code_size == 0 or vma != addr:
                    problems.append(f"code-load record of {name}: size {code_size}, "
                                    f"vma {vma:#x}, code_addr {addr:#x}")
        elif kind == JIT_CODE_DEBUG_INFO:
            _, entries = struct.unpack_from("<QQ", body, 0)
            at = 16
            for _ in range(entries):
                at += 16
                end = body.index(b"\0", at)
                debug_files.add(body[at:end].decode())
                at = end + 1
        elif kind not in (JIT_CODE_MOVE, JIT_CODE_CLOSE, JIT_CODE_UNWINDING_INFO):
            problems.append(f"unknown record id {kind} at offset {offset}")
        offset += size
    if debug_files:
        print("debug info names: " + ", ".join(sorted(debug_files)))
    if args.entry not in loads:
        problems.append(f"no code-load record names {args.entry} (found: {loads})")
    if not kinds or kinds[-1] != JIT_CODE_CLOSE:
        problems.append("the file does not end with a close record")
    if args.debug_file and not any(f.endswith(args.debug_file) for f in debug_files):
        problems.append(f"no debug-info record names {args.debug_file}")
    for problem in problems:
        print("FAIL: " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
