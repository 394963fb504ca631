"""Flips the lowest bit of one data byte of a tensor in a safetensors file.

Usage: flip_byte.py <file.safetensors> <tensor name> <byte offset in the tensor>
"""

import json
import struct
import sys

path, name, offset = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path, "r+b") as f:
    (header_bytes,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(header_bytes))
    position = 8 + header_bytes + header[name]["data_offsets"][0] + offset
    f.seek(position)
    byte = f.read(1)[0]
    f.seek(position)
    f.write(bytes([byte ^ 1]))
