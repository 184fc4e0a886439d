#!/usr/bin/env python3
"""Prints each cell array of a VTK ImageData file uwjit wrote, .vti or .pvti (its pieces joined
into the whole image), as one line: its name and the SHA-256 of its values in VTK order. Two
files with the same lines hold the same cells bit for bit, however they were split.

usage: vtk_arrays.py FILE.vti|FILE.pvti
"""
import base64
import hashlib
import os
import struct
import sys
import xml.etree.ElementTree as ET


def extent(text):
    return [int(v) for v in text.split()]


def read_vti(path):
    """(extent, {name: bytes}) of an ImageData file's binary cell arrays."""
    image = ET.parse(path).getroot().find("ImageData")
    piece = image.find("Piece")
    arrays = {}
    for array in piece.find("CellData").findall("DataArray"):
        raw = base64.b64decode("".join(array.text.split()))
        (size,) = struct.unpack("<Q", raw[:8])
        assert size == len(raw) - 8, "%s: array %s holds other than it says" % (path, array.get("Name"))
        arrays[array.get("Name")] = raw[8:]
    return extent(piece.get("Extent")), arrays


def read_pvti(path):
    """{name: bytes} of the whole image a PImageData file's pieces make."""
    image = ET.parse(path).getroot().find("PImageData")
    whole = extent(image.get("WholeExtent"))
    n = [whole[1] - whole[0], whole[3] - whole[2], whole[5] - whole[4]]
    joined = {}
    for piece in image.findall("Piece"):
        box, arrays = read_vti(os.path.join(os.path.dirname(path), piece.get("Source")))
        assert box == extent(piece.get("Extent")), "%s: its extent is not the index's" % piece.get("Source")
        cells = (box[1] - box[0]) * (box[3] - box[2]) * (box[5] - box[4])
        for name, data in arrays.items():
            size = len(data) // cells
            out = joined.setdefault(name, bytearray(size * n[0] * n[1] * n[2]))
            at = 0
            for z in range(box[4], box[5]):
                for y in range(box[2], box[3]):
                    row = ((z * n[1] + y) * n[0] + box[0]) * size
                    width = (box[1] - box[0]) * size
                    out[row:row + width] = data[at:at + width]
                    at += width
    return joined


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    arrays = read_pvti(path) if path.endswith(".pvti") else read_vti(path)[1]
    for name in sorted(arrays):
        print(name, hashlib.sha256(bytes(arrays[name])).hexdigest())


if __name__ == "__main__":
    main()
