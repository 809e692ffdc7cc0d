#!/usr/bin/env python3
"""Rounds of global loads in each kernel of a cubin: how many memory round
trips a thread waits for before its first shuffle or barrier.

Walks each function's SASS in code order up to its first SHFL, BAR or
cluster barrier; a round ends where an instruction reads a register that an
earlier load of the round wrote (the thread must wait for that load).  A
kernel that issues every load of a row before it uses any shows one round;
one that loads a pack, uses it, then loads the next shows a round a pack.
Code of several paths (a branch over a predicated and a hoisted copy of the
loads) is walked as laid out, so their rounds appear one after another.

    scripts/load_rounds.py build/.../bundle_softmax_00.cubin [REGEX]
    (the cubin from nvcc -cubin; cuobjdump from the CUDA toolkit, or
     $CUOBJDUMP)

Prints "rounds  loads-a-round  function" a line (bench/NOTES.md warp v1).
"""
import os
import re
import subprocess
import sys

INSTRUCTION = re.compile(r"/\*[0-9a-f]{4}\*/\s+(.*?);")
REGISTER = re.compile(r"\bR(\d+)\b")


def registers(text):
    return set(REGISTER.findall(text))


def rounds(body):
    pending, counts = set(), [0]
    for m in INSTRUCTION.finditer(body):
        text = m.group(1).strip()
        if re.search(r"\b(SHFL|BAR|UCGABAR)", text):
            break
        words = text.split(None, 2 if text.startswith("@") else 1)
        op = words[1] if text.startswith("@") else words[0]
        operands = [o.strip() for o in (words[-1] if len(words) > (2 if text.startswith("@") else 1) else "").split(",")]
        sources = ",".join(operands[1:])
        if op.startswith("LDG"):
            if pending & registers(sources):  # an address from a loaded value
                pending, counts = set(), counts + [0]
            counts[-1] += 1
            first = REGISTER.findall(operands[0])
            width = {"64": 2, "128": 4}.get((re.search(r"\.(64|128)\b", op) or [None, "32"])[1], 1)
            if first:
                pending |= {str(int(first[0]) + i) for i in range(width)}
        elif pending & registers(",".join(operands) if op.startswith("ST") else sources):
            if counts[-1]:
                counts.append(0)
            pending = set()
    return [c for c in counts if c]


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    tool = os.environ.get("CUOBJDUMP", "cuobjdump")
    sass = subprocess.run([tool, "-sass", sys.argv[1]], capture_output=True, text=True, check=True).stdout
    pattern = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
    for fn in sass.split("Function : ")[1:]:
        name = fn.split("\n")[0].strip()
        if pattern and not pattern.search(name):
            continue
        r = rounds(fn)
        print(f"{len(r):3d}  {'+'.join(map(str, r)) or '-':24s} {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
