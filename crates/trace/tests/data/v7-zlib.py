#!/usr/bin/env python3
"""Rewrites an uncompressed trace-cmd v7 file as a zlib-compressed one, the way trace-cmd
3.1 writes zlib files (the trace-cmd built here has no zlib support, so it cannot make one):
every section but the options sections is compressed whole (u32 compressed size, u32
uncompressed size, compress2 data); the flyrecord CPU data is compressed in chunks of 10
pages (u32 chunk count; per chunk u32 compressed size, u32 uncompressed size, data) at a
page-aligned offset; the offsets in the options are fixed up.

    trace-cmd convert --file-version 7 --compression none -i IN.dat -o none.dat
    v7-zlib.py none.dat OUT.dat
"""
import struct
import sys
import zlib

HEADER_INFO, CMDLINES, BUFFER, DONE = 16, 21, 3, 0


def sections(d, start):
    """All sections from `start` to the end of the file: (offset, id, flags, desc, payload)."""
    out, p = [], start
    while p + 16 <= len(d):
        sid, flags, desc, size = struct.unpack_from("<HHIQ", d, p)
        out.append((p, sid, flags, desc, d[p + 16:p + 16 + size]))
        p += 16 + size
    assert p == len(d), "sections do not tile the file"
    return out


def options(payload):
    """(id, data) of each option of an options section."""
    out, p = [], 0
    while p < len(payload):
        oid, size = struct.unpack_from("<HI", payload, p)
        out.append((oid, payload[p + 6:p + 6 + size]))
        p += 6 + size
        if oid == DONE:
            break
    return out


def parse_buffer(data):
    off, = struct.unpack_from("<Q", data, 0)
    p = 8
    name_end = data.index(b"\0", p)
    clock_end = data.index(b"\0", name_end + 1)
    p = clock_end + 1
    page_size, cpus = struct.unpack_from("<II", data, p)
    p += 8
    table = [struct.unpack_from("<IQQ", data, p + 20 * i) for i in range(cpus)]
    return off, data[8:clock_end + 1], page_size, table


def main(src, dst):
    d = open(src, "rb").read()
    assert d[:10] == b"\x17\x08\x44tracing" and d[10:12] == b"7\0" and d[12] == 0
    page_size, = struct.unpack_from("<I", d, 14)
    assert d[18:24] == b"none\0\0", "input must be an uncompressed v7 file"
    first_opts, = struct.unpack_from("<Q", d, 24)
    secs = sections(d, 32)
    by_off = {s[0]: s for s in secs}
    # The BUFFER options tell where each CPU's data is inside its flyrecord section.
    buffers = {}
    for off, sid, _, _, payload in secs:
        if sid == DONE:
            for oid, data in options(payload):
                if oid == BUFFER:
                    boff, middle, ps, table = parse_buffer(data)
                    buffers[boff] = (ps, table)
    header = d[:18] + b"zlib\0" + zlib.ZLIB_VERSION.encode() + b"\0"
    pos = len(header) + 8
    new_off, bodies = {}, {}
    cpu_new = {}
    for off, sid, flags, desc, payload in secs:
        new_off[off] = pos
        if sid == DONE:
            body, fl = payload, flags  # fixed up below; same size
        elif sid == BUFFER:
            ps, table = buffers[off]
            body = bytearray()
            start = pos + 16
            pad = (-start) % ps
            body += b"\0" * pad
            for cpu, coff, csize in table:
                raw = d[coff:coff + csize]
                chunks = [raw[i:i + 10 * ps] for i in range(0, len(raw), 10 * ps)]
                at = start + len(body)
                body += struct.pack("<I", len(chunks))
                for c in chunks:
                    z = zlib.compress(c, 9)
                    body += struct.pack("<II", len(z), len(c)) + z
                cpu_new[(off, cpu)] = (at, start + len(body) - at)
            body, fl = bytes(body), flags | 1
        else:
            z = zlib.compress(payload, 9)
            body, fl = struct.pack("<II", len(z), len(payload)) + z, flags | 1
        bodies[off] = (sid, fl, desc, body)
        pos += 16 + len(body)
    out = bytearray(header + struct.pack("<Q", new_off[first_opts]))
    for off, sid, flags, desc, payload in secs:
        sid, fl, desc, body = bodies[off]
        if sid == DONE:
            fixed = bytearray()
            for oid, data in options(body):
                if HEADER_INFO <= oid <= CMDLINES:
                    data = struct.pack("<Q", new_off[struct.unpack("<Q", data)[0]])
                elif oid == BUFFER:
                    boff, middle, ps, table = parse_buffer(data)
                    data = struct.pack("<Q", new_off[boff]) + middle + struct.pack("<II", ps, len(table))
                    for cpu, _, _ in table:
                        data += struct.pack("<IQQ", cpu, *cpu_new[(boff, cpu)])
                elif oid == DONE:
                    nxt, = struct.unpack("<Q", data)
                    data = struct.pack("<Q", new_off[nxt] if nxt else 0)
                fixed += struct.pack("<HI", oid, len(data)) + data
            assert len(fixed) == len(body)
            body = bytes(fixed)
        assert len(out) == new_off[off]
        out += struct.pack("<HHIQ", sid, fl, desc, len(body)) + body
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
