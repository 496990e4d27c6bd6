#!/usr/bin/env python3
"""Writes the wgc wheel (a zip with METADATA, WHEEL and a RECORD of sha256
hashes, as the wheel spec, PEP 427, lays out) from the package sources, the
generated constants and the two shared libraries:

  python_wheel.py VERSION OUTDIR PKGDIR CONSTS.py LIB...

and prints the wheel's path. The package runs no build step of its own
(ctypes over prebuilt libraries), so a 100-line writer is all a build
backend would do here, without installing one.

The platform tag is worked out from the libraries: manylinux_2_N_ARCH with
N the newest glibc symbol version they need, when they link only libraries
the manylinux policy lets a wheel assume; linux_ARCH otherwise.
"""

import base64
import hashlib
import os
import platform
import re
import subprocess
import sys
import zipfile

# The libraries a manylinux wheel may take from the system (PEP 600).
SYSTEM_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
               "librt.so.1", "libgcc_s.so.1", "ld-linux-x86-64.so.2",
               "ld-linux-aarch64.so.1"}
# A fixed date keeps the wheel's bytes the same from one build to the next.
DATE = (2020, 1, 1, 0, 0, 0)


def platform_tag(libs):
    arch = platform.machine()
    newest, needed = (2, 17), set()
    for lib in libs:
        dyn = subprocess.run(["objdump", "-T", "-p", lib], check=True,
                             capture_output=True, text=True).stdout
        for major, minor in re.findall(r"GLIBC_(\d+)\.(\d+)", dyn):
            newest = max(newest, (int(major), int(minor)))
        needed |= set(re.findall(r"NEEDED\s+(\S+)", dyn))
    needed -= {os.path.basename(lib) for lib in libs}
    if needed <= SYSTEM_LIBS:
        return f"manylinux_{newest[0]}_{newest[1]}_{arch}"
    return f"linux_{arch}"


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{name},sha256={digest.decode()},{len(data)}"


def main(argv):
    if len(argv) < 5:
        sys.exit("usage: python_wheel.py VERSION OUTDIR PKGDIR CONSTS.py LIB...")
    version, outdir, pkgdir, consts, libs = argv[0], argv[1], argv[2], argv[3], argv[4:]
    # One version: the number the Makefile read from wgc.h must be the one
    # the compiler saw there.
    consts_text = open(consts).read()
    if f'VERSION = "{version}"' not in consts_text:
        sys.exit(f"python_wheel.py: {consts} does not hold version {version}")
    tag = f"py3-none-{platform_tag(libs)}"
    files = []  # (name in the wheel, bytes, executable)
    for name in sorted(os.listdir(pkgdir)):
        if name.endswith((".py", ".pyi")) or name == "py.typed":
            with open(os.path.join(pkgdir, name), "rb") as f:
                files.append((f"wgc/{name}", f.read(), False))
    files.append(("wgc/_consts.py", consts_text.encode(), False))
    for lib in libs:
        with open(lib, "rb") as f:
            files.append((f"wgc/{os.path.basename(lib)}", f.read(), True))
    info = f"wgc-{version}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: wgc\n"
        f"Version: {version}\n"
        "Summary: BLAS/DNN operations on WebGPU (wgpu-native) or the CPU, over numpy\n"
        "Requires-Python: >=3.9\n"
        "Requires-Dist: numpy\n")
    wheel = ("Wheel-Version: 1.0\n"
             "Generator: wgc tools/python_wheel.py\n"
             "Root-Is-Purelib: false\n"
             f"Tag: {tag}\n")
    files += [(f"{info}/METADATA", metadata.encode(), False),
              (f"{info}/WHEEL", wheel.encode(), False)]
    record = [record_line(name, data) for name, data, _ in files]
    record.append(f"{info}/RECORD,,")
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode(), False))

    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, f"wgc-{version}-{tag}.whl")
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, executable in files:
            entry = zipfile.ZipInfo(name, DATE)
            entry.compress_type = zipfile.ZIP_DEFLATED
            entry.external_attr = (0o100755 if executable else 0o100644) << 16
            zf.writestr(entry, data)
    # Only a complete wheel appears under its name; older ones would
    # be ambiguous for the tests' install.
    for old in os.listdir(outdir):
        if old.startswith("wgc-") and old.endswith(".whl"):
            os.remove(os.path.join(outdir, old))
    os.replace(tmp, path)
    print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
