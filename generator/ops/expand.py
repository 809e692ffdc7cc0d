"""Expand: dst = src.expand(shape).contiguous() (the broadcast family; the
shared space and tiers are in broadcast.py).  Units of 1-16 bytes: the
runtime widens an element to the widest unit the innermost spanned bytes and
the pointers allow."""
from ..dtypes import MOVEMENTS
from . import broadcast

OP = "expand"
ELEMENTS = MOVEMENTS
DTYPES = tuple(MOVEMENTS)
SUPPORTS = "kgen::broadcast::supports"
PROBLEM_HEADER = "broadcast/problem.hpp"
TIERS = broadcast.tiers("broadcast.cu.j2", "broadcast.cu.j2")
