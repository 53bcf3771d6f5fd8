#!/usr/bin/env python3
"""Reads a safetensors file with nothing but json, struct and numpy.

An independent check that files written by headlab follow the format (and a
small reference for how the format works). Usage:

    python3 tests/data/check_safetensors.py FILE [FILE ...]
        prints the metadata and, per tensor, name, dtype, shape and a few values
    python3 tests/data/check_safetensors.py --write FILE
        writes a small reference file (F32, F64, I64 tensors + metadata) that
        headlab's load_safetensors should read back

Format: 8-byte little-endian u64 header length N, N bytes of JSON header,
then the data buffer; data_offsets are relative to the start of the buffer.
Exits with status 1 and a message if a file breaks the rules.
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8")}


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: shorter than 8 bytes")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} beyond the file ({len(raw)} bytes)")
    header = json.loads(raw[8 : 8 + n].decode("utf-8"))
    data = raw[8 + n :]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    covered = []
    for name, info in header.items():
        dtype = DTYPES[info["dtype"]]
        shape = tuple(info["shape"])
        begin, end = info["data_offsets"]
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(data) or end - begin != count * dtype.itemsize:
            raise ValueError(f"{path}: tensor {name!r}: bad data_offsets {[begin, end]} for {shape} {info['dtype']}")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(shape)
        covered.append((begin, end))
    position = 0
    for begin, end in sorted(covered):
        if begin != position:
            raise ValueError(f"{path}: data buffer not tiled exactly at byte {position}")
        position = end
    if position != len(data):
        raise ValueError(f"{path}: data bytes [{position}, {len(data)}) not covered by any tensor")
    return metadata, tensors, (8 + n) % 8 == 0


def write(path):
    tensors = {
        "py.weight": np.arange(6, dtype="<f4").reshape(2, 3) / 4,
        "py.bias": np.array([0.1, -2.5, np.inf], dtype="<f8"),
        "py.ids": np.array([[-(2**63), 2**63 - 1]], dtype="<i8"),
    }
    names = {np.dtype("<f4"): "F32", np.dtype("<f8"): "F64", np.dtype("<i8"): "I64"}
    header = {"__metadata__": {"writer": "check_safetensors.py"}}
    buffer = b""
    for name, array in tensors.items():
        header[name] = {"dtype": names[array.dtype], "shape": list(array.shape),
                        "data_offsets": [len(buffer), len(buffer) + array.nbytes]}
        buffer += array.tobytes()
    text = json.dumps(header).encode("utf-8")
    text += b" " * (-(8 + len(text)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + buffer)


def main(argv):
    if len(argv) == 3 and argv[1] == "--write":
        write(argv[2])
        print(f"wrote {argv[2]}")
        return 0
    if len(argv) < 2:
        print(__doc__)
        return 2
    for path in argv[1:]:
        try:
            metadata, tensors, aligned = read(path)
        except (ValueError, KeyError, UnicodeDecodeError, json.JSONDecodeError) as e:
            print(f"INVALID {path}: {e}")
            return 1
        print(f"{path}: {len(tensors)} tensors, metadata {metadata}, data 8-byte aligned: {aligned}")
        for name, array in tensors.items():
            print(f"  {name}: {array.dtype.str} {list(array.shape)} {array.ravel()[:4].tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
