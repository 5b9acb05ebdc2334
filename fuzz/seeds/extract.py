#!/usr/bin/env python3
"""Writes the seed layers of the `extract` fuzz target into the directory given: small tar and
tar+gzip layers with what a release image layer holds (payload directories, files from the
payload given as the second argument) and what a hostile one may (whiteouts, symlinks and
hardlinks, `..` and absolute names, devices, long names, pax headers)."""

import gzip
import io
import os
import sys
import tarfile

out = sys.argv[1]
payload = sys.argv[2] if len(sys.argv) > 2 else None
os.makedirs(out, exist_ok=True)


def entry(name, kind=tarfile.REGTYPE, data=b"", link=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if kind in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0
    info.linkname = link
    info.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    info.mtime = 1_700_000_000
    return info, data


def write(name, entries, fmt=tarfile.USTAR_FORMAT, compress=False):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.size else None)
    # Drop tarfile's padding to a 10 KiB record: two zero blocks end the archive.
    raw = buf.getvalue().rstrip(b"\0")
    raw += b"\0" * (-len(raw) % 512 + 1024)
    if compress:
        raw = gzip.compress(raw, mtime=0)
    with open(os.path.join(out, name), "wb") as f:
        f.write(raw)


D, F, L, H = tarfile.DIRTYPE, tarfile.REGTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE
doc = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: b\n"

plain = [
    entry("./release-manifests/", D),
    entry("./release-manifests/0000_50_a.yaml", F, doc),
    entry("./release-manifests/release-metadata", F, b'{"kind":"cincinnati-metadata-v0","version":"4.18.0"}'),
    entry("manifests/", D),
    entry("manifests/0000_00_b.yaml", F, doc),
    entry("usr/bin/sh", F, b"skipped"),
]
write("plain.tar", plain)
write("plain.tar.gz", plain, compress=True)
write("pax.tar", plain + [entry("release-manifests/" + "x" * 120 + ".yaml", F, doc)], fmt=tarfile.PAX_FORMAT)
# A PAX `size` record overrides the header's size field (as for files over 8 GiB).
big, data = entry("manifests/big.yaml", F, doc)
big.pax_headers = {"size": str(len(doc))}
write("pax-size.tar", [entry("manifests/a.yaml", F, doc), (big, data)], fmt=tarfile.PAX_FORMAT)
write("gnu.tar", [entry("bootstrap/" + "y" * 150, F, doc)], fmt=tarfile.GNU_FORMAT)
write("whiteouts.tar", [
    entry("release-manifests/.wh.a.yaml", F),
    entry("manifests/sub/.wh..wh..opq", F),
    entry(".wh..wh..opq", F),
    entry("bootstrap/.wh.sub", F),
    entry("release-manifests/new.yaml", F, doc),
])
write("links.tar", [
    entry("release-manifests/", D),
    entry("release-manifests/a.yaml", F, doc),
    entry("release-manifests/sym", L, link="a.yaml"),
    entry("release-manifests/up", L, link="../manifests/a.yaml"),
    entry("release-manifests/hard", H, link="release-manifests/a.yaml"),
    entry("manifests/dirlink", L, link="../release-manifests"),
])
write("hostile.tar", [
    entry("../escape.yaml", F, doc),
    entry("/abs/manifests/x", F, doc),
    entry("manifests/../../x", F, doc),
    entry("manifests/out", L, link="/etc/passwd"),
    entry("manifests/up", L, link="../../.."),
    entry("manifests/dev", tarfile.CHRTYPE),
    entry("manifests/fifo", tarfile.FIFOTYPE),
    entry("manifests/link/x", F, doc),
])
write("replace.tar", [
    entry("manifests/a.yaml", D),
    entry("manifests/sub", F, doc),
    entry("release-manifests/link", D),
    entry("release-manifests/link/x", F, doc),
])

if payload:
    # A layer with a few real payload files (the smallest ones, to keep executions fast).
    files = []
    for sub in ("release-manifests", "manifests"):
        d = os.path.join(payload, sub)
        if os.path.isdir(d):
            files += [(sub, n) for n in os.listdir(d) if os.path.isfile(os.path.join(d, n))]
    files.sort(key=lambda f: os.path.getsize(os.path.join(payload, *f)))
    real = []
    for sub, name in files[:6]:
        with open(os.path.join(payload, sub, name), "rb") as f:
            real.append(entry(f"{sub}/{name}", F, f.read()))
    write("payload.tar", real)
    write("payload.tar.gz", real, compress=True)
