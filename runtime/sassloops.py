#!/usr/bin/env python3
"""sassloops.py - the loops of each kernel in an sm_90a cubin, read off its
code without a disassembler (this machine's CUDA has no cuobjdump or
nvdisasm): for the static size of a kernel's inner loop, which is the
number of instructions one trip executes when the loop holds no branch.

usage: python3 runtime/sassloops.py FILE.cubin [SUBSTRING]
(needs readelf and c++filt, binutils; bad input: one line on stderr, exit
1, or 64 for a usage error)

For each kernel (.text.NAME section, NAME containing SUBSTRING) it prints
its size in instructions and every loop of at least 4 instructions as
"first-last: size", and inside a loop the count of LDGSTS (cp.async).
Loops nest as their ranges do.

How it reads the code (found by experiment on nvcc 13 output, not from a
specification): an instruction is 16 bytes; bits 0..11 of its first 8 are
the opcode, bits 0..8 the operation (0x147 BRA, 0x1ae LDGSTS); a BRA's
offset, in 4-byte units from the next instruction, is bits 16..23 (low)
and 34..63 (high, signed) of the first 8 bytes. A loop is a BRA whose
target is at or before it. A kernel's cubin, for example:

    printf '#include "kernels.cuh"\\ntemplate __global__ void k_fused_q<WP_Q4_K, 1, 1>(DevMat, const uint32_t *__restrict__, const float *__restrict__, float *__restrict__);\\n' > /tmp/k.cu
    nvcc -cubin -arch=sm_90a -O3 -std=c++17 -Ilib -Iruntime /tmp/k.cu -o /tmp/k.cubin
    python3 runtime/sassloops.py /tmp/k.cubin k_fused_q
"""
import re
import struct
import subprocess
import sys

BRA, LDGSTS = 0x147, 0x1AE


def fail(msg, status=1):
    """One line on stderr, naming the program, and exit."""
    sys.stderr.write("sassloops.py: %s\n" % msg)
    sys.exit(status)


def kernels(path):
    """(name, [(lo, hi) 64-bit halves of each instruction]) per .text section."""
    try:
        data = open(path, "rb").read()
    except OSError as e:
        fail("%s: %s" % (path, e.strerror))
    if data[:4] != b"\x7fELF" or len(data) < 52 or struct.unpack_from("<H", data, 18)[0] != 190:
        fail("%s: not a cubin (no ELF header of machine CUDA)" % path)
    sm = (struct.unpack_from("<I", data, 48)[0] >> 8) & 0xFF   # e_flags: the SM version at bits 8..15
    if sm != 90:
        fail("%s: a cubin for sm_%d; this reads sm_90a code only (nvcc -cubin -arch=sm_90a)" % (path, sm))
    run = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True)
    if run.returncode:
        fail("%s: readelf: %s" % (path, (run.stderr.strip().splitlines() or ["failed"])[-1]))
    out = run.stdout
    for line in out.splitlines():
        m = re.search(r"\]\s+\.text\.(\S+)\s+PROGBITS\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            off, size = int(m.group(2), 16), int(m.group(3), 16)
            yield m.group(1), [struct.unpack_from("<QQ", data, off + 16 * i) for i in range(size // 16)]


def loops(code, least=4):
    """(first, last) of every backward branch's range of at least `least` instructions."""
    found = []
    for i, (lo, _) in enumerate(code):
        if lo & 0x1FF == BRA:
            v = ((lo >> 34) << 8) | ((lo >> 16) & 0xFF)
            if lo >> 63:
                v -= 1 << 38
            first = i + 1 + v // 4
            if first <= i and i - first + 1 >= least:
                found.append((first, i))
    return found


USAGE = "usage: sassloops.py FILE.cubin [SUBSTRING]"


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(USAGE)
        return
    if len(sys.argv) not in (2, 3) or sys.argv[1].startswith("-"):
        fail(USAGE + " (try --help)", 64)
    want = sys.argv[2] if len(sys.argv) == 3 else ""
    found = 0
    for name, code in kernels(sys.argv[1]):
        if want not in name:
            continue
        found += 1
        shown = subprocess.run(["c++filt"], input=name, capture_output=True, text=True).stdout.strip()
        print("%s: %d instructions" % (re.sub(r"\(DevMat.*", "", shown), len(code)))
        for first, last in loops(code):
            copies = sum(1 for lo, _ in code[first:last + 1] if lo & 0x1FF == LDGSTS)
            print("  loop %d-%d: %d%s" % (first, last, last - first + 1, ", %d LDGSTS" % copies if copies else ""))


    if not found:
        fail("%s: no kernel%s (a cubin's code is in .text.NAME sections)" % (sys.argv[1], " named *%s*" % want if want else ""))


if __name__ == "__main__":
    try:
        main()
        sys.stdout.flush()
    except BrokenPipeError:   # (| head)
        sys.stderr.close()
        sys.exit(0)
