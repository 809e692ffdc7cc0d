"""Where: out = cond ? x : y with cond, x and y broadcast (the broadcast
family; the shared space and tiers are in broadcast.py).  Values are copied
bit for bit, so variants are per element size; cond is one byte an element."""
from ..dtypes import MOVEMENTS
from . import broadcast

OP = "where"
ELEMENTS = {k: MOVEMENTS[k] for k in ("b1", "b2", "b4", "b8")}
DTYPES = tuple(ELEMENTS)
SUPPORTS = "kgen::broadcast::supports"
PROBLEM_HEADER = "broadcast/problem.hpp"
TIERS = broadcast.tiers("broadcast.cu.j2", "broadcast.cu.j2")
