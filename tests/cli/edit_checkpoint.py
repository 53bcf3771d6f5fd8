#!/usr/bin/env python3
"""Writes a damaged copy of a safetensors checkpoint, for the CLI tests of tests/cli/loading.cmake.

  edit_checkpoint.py IN OUT options FROM TO   the metadata "options" text with FROM replaced by TO
  edit_checkpoint.py IN OUT nan               every F32 value of the "model." tensors set to NaN
  edit_checkpoint.py IN OUT zero_rng          the data generator's state words all set to 0
"""
import json
import struct
import sys

src, dst, what = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(src, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = bytearray(data[8 + n:])
if what == "options":
    old, new = sys.argv[4], sys.argv[5]
    options = header["__metadata__"]["options"]
    assert old in options, f"{old!r} is not in the options"
    header["__metadata__"]["options"] = options.replace(old, new, 1)
elif what == "nan":
    for name, info in header.items():
        if name.startswith("model.") and info["dtype"] == "F32":
            begin, end = info["data_offsets"]
            body[begin:end] = struct.pack("<f", float("nan")) * ((end - begin) // 4)
elif what == "zero_rng":
    words = header["__metadata__"]["data_rng"].split()
    header["__metadata__"]["data_rng"] = " ".join(["0"] * (len(words) - 1) + words[-1:])
else:
    sys.exit(f"unknown edit {what!r}")
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
open(dst, "wb").write(struct.pack("<Q", len(text)) + text + bytes(body))
