#!/usr/bin/env python3
"""Compares two uwjit checkpoints (runtime/src/checkpoint.cpp's format, versions 1 to 3).

usage: same_state.py A.ckpt B.ckpt

They hold the same state when they name the same node fields, every field is equal byte for byte
and every domain integral agrees within 1e-12 relative (a device sums them in another order).
Prints "same state" and exits 0, or prints what differs (for real fields: how many values and the
largest difference) and exits 1; 2 for a file that is not a checkpoint.
"""
import struct
import sys

DTYPES = {0: "f", 1: "d"}  # codegen::Dtype: f32, f64 (the integer types are compared as bytes)


def read(path):
    data = open(path, "rb").read()
    if data[:8] != b"UWJITCKP":
        raise ValueError(f"{path}: not a uwjit checkpoint")
    (version,) = struct.unpack_from("<I", data, 8)
    at = 8 + 4 + (8 if version >= 3 else 0) + 8  # magic, version, head length (3), steps

    def take(fmt):
        nonlocal at
        (value,) = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return value

    def text():
        nonlocal at
        n = take("I")
        at += n
        return data[at - n:at].decode()

    def value():
        tag = take("B")
        if tag == 0:
            take("q")
        elif tag == 1:
            take("d")
        elif tag == 2:
            text()
        else:
            for _ in range(take("I")):
                value()

    fields, integrals = {}, {}
    for _ in range(take("I")):
        text()  # the node's type
        node = text()
        for _ in range(take("I")):
            text()
            value()
        for _ in range(take("I")):
            name = text()
            dtype = take("B")
            for _ in range(take("I")):
                take("q")
            n = take("Q")
            if version >= 3:  # the data is where the head says
                offset = take("Q")
                take("Q")  # its CRC-64
                fields[(node, name)] = (dtype, data[offset:offset + n])
            else:
                fields[(node, name)] = (dtype, data[at:at + n])
                at += n
        for _ in range(take("I")):
            name = text()
            integrals[(node, name)] = take("d")
        for _ in range(take("I")):
            text()  # a rebound static array (version 2)
    return fields, integrals


def differences(dtype, a, b):
    if dtype not in DTYPES or len(a) != len(b):
        return "its bytes differ"
    code = DTYPES[dtype]
    n = len(a) // struct.calcsize(code)
    x = struct.unpack(f"<{n}{code}", a)
    y = struct.unpack(f"<{n}{code}", b)
    differ = [(abs(p - q), abs(q)) for p, q in zip(x, y) if p != q]
    worst = max(differ)
    return (f"{len(differ)} of {n} values differ, the largest by {worst[0]:.3e} "
            f"(relative {worst[0] / max(worst[1], 1e-300):.3e})")


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        (fa, ia), (fb, ib) = read(argv[1]), read(argv[2])
    except (OSError, ValueError, struct.error) as e:
        print(f"same_state.py: {e}", file=sys.stderr)
        return 2
    problems = []
    if fa.keys() != fb.keys() or not fa:
        problems.append(f"fields: {sorted(fa)} and {sorted(fb)}")
    for k in sorted(fa.keys() & fb.keys()):
        if fa[k] != fb[k]:
            problems.append(f"field {k[0]}.{k[1]}: {differences(fa[k][0], fa[k][1], fb[k][1])}")
    for k in sorted(ia.keys() | ib.keys()):
        a, b = ia.get(k), ib.get(k)
        if a is None or b is None or abs(a - b) > 1e-12 * max(abs(b), 1.0):
            problems.append(f"integral {k[0]}.{k[1]}: {a!r} and {b!r}")
    for p in problems:
        print(p)
    if not problems:
        print("same state")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
