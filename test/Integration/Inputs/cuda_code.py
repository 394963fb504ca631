"""Lists the GPU code a shared library or executable carries: the entries of
its .nv_fatbin section (SASS as CUDA ELF images, PTX), one line per kind and
architecture, e.g. "sass sm_90a (3 images)". Reads the ELF and fatbin
headers itself, so no CUDA tools (cuobjdump) are needed.

A SASS image's exact target ("sm_90a" rather than "sm_90": the "a" variant
has Hopper's wgmma and TMA) is read from the ptxas command line each image
records ("-arch sm_90a"); the fatbin header only has the number.
"""
import collections
import re
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND = {1: "ptx", 2: "sass"}


def sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
               for i in range(shnum)]
    strtab = headers[shstrndx][4]
    for h in headers:
        name = data[strtab + h[0]:data.index(b"\0", strtab + h[0])].decode()
        yield name, h[4], h[5]


def entries(data, offset, size):
    pos, end = offset, offset + size
    while pos + 16 <= end:
        magic, _, header, fat = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-byte aligned
            continue
        e, stop = pos + header, pos + header + fat
        while e < stop:
            kind, _, entry_header, padded = struct.unpack_from("<HHIQ", data, e)
            sm, = struct.unpack_from("<I", data, e + 28)
            payload = data[e + entry_header:e + entry_header + padded]
            yield KIND.get(kind, "kind%d" % kind), sm, payload
            e += entry_header + padded
        pos = stop


def main(path):
    data = open(path, "rb").read()
    if data[:4] != b"\x7fELF":
        sys.exit("%s is not an ELF file" % path)
    found = collections.Counter()
    for name, offset, size in sections(data):
        if name != ".nv_fatbin":
            continue
        for kind, sm, payload in entries(data, offset, size):
            arch = ("sm_%d" if kind == "sass" else "compute_%d") % sm
            if kind == "sass":
                m = re.search(rb"-arch (sm_\d+[a-z]?)", payload)
                arch = m.group(1).decode() if m else arch + " (compressed)"
            found[(kind, arch)] += 1
    if not found:
        sys.exit("%s has no GPU code (.nv_fatbin)" % path)
    for (kind, arch), n in sorted(found.items()):
        print("%s %s (%d image%s)" % (kind, arch, n, "" if n == 1 else "s"))


if __name__ == "__main__":
    main(sys.argv[1])
