#!/usr/bin/env python3
"""Prints what a safetensors file holds, read with the standard library alone (not with headlab's
reader): one line "NAME DTYPE SHAPE" per tensor, in data order, then "metadata KEY: VALUE" lines.

  safetensors_summary.py FILE
"""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
metadata = header.pop("__metadata__", {})
sizes = {"F32": 4, "F64": 8, "I64": 8}
for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    begin, end = info["data_offsets"]
    count = 1
    for d in info["shape"]:
        count *= d
    assert end - begin == count * sizes[info["dtype"]], f"{name}: {end - begin} bytes for shape {info['shape']}"
    print(name, info["dtype"], "x".join(map(str, info["shape"])))
for key, value in sorted(metadata.items()):
    print(f"metadata {key}: {value}")
