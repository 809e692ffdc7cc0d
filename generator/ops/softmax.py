"""Softmax / log-softmax over the last dim of a rows x cols tensor.

Three tiers as in OneFlow's design plus a generic fallback:
  warp     whole row in registers; a group of `group_width` lanes owns a row,
           each lane holds `cols_per_thread` values loaded `pack_size` at a time;
           `rows_per_access` rows per group per pass; `padding` masks a tail.
  smem     one block per row, the row cached in shared memory (opt-in above
           48 KB), `block_size` chosen by the runtime from occupancy.
  uncached one block per row, two passes over global memory (online max+sum,
           then normalise); any length.
  generic  the uncached kernel at pack 1: every valid problem, any alignment.
softmax and log_softmax share each variant: the mode is a run-time argument
that picks one of the two instantiations compiled into the variant.
"""
from ..core import Param, Tier
from ..dtypes import max_pack

OP = "softmax"
DTYPES = ("f32", "f16", "bf16", "f64")
# C++ function deciding capability from the real problem (runtime/src/softmax)
SUPPORTS = "kgen::softmax::supports"
PROBLEM_HEADER = "softmax/problem.hpp"


def packs(d):
    return [p for p in (1, 2, 4, 8) if p <= max_pack(d)]


def max_cols_per_thread(d):
    # register budget: 32 compute values per row per lane (16 for float64)
    return 16 if d.short == "f64" else 32


# cols_per_thread / pack_size multipliers; non powers of two fit rows such as
# 96 or 384 with no padding waste.
COL_MULTIPLIERS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
POW2 = (1, 2, 4, 8, 16, 32)
BLOCKS = (128, 256, 512, 1024)


def warp_valid(d, p, arch):
    c, pk, g, r = p["cols_per_thread"], p["pack_size"], p["group_width"], p["rows_per_access"]
    if c % pk or c // pk not in COL_MULTIPLIERS or c > max_cols_per_thread(d):
        return False
    if g < 32 and c != pk:          # narrow groups hold one pack per lane
        return False
    if r == 2 and c * 2 > max_cols_per_thread(d):
        return False
    return True


def warp_default(d, p):
    """Pruned set: the widest pack, powers of two, and the shapes the
    heuristic prefers (two rows per access for narrow groups, one for full
    warps; padding on so every variant covers a range of cols)."""
    pk, c, g, r = p["pack_size"], p["cols_per_thread"], p["group_width"], p["rows_per_access"]
    if pk != max_pack(d) or c // pk not in POW2 or not p["padding"]:
        return False
    return r == (2 if g < 32 else 1)


def smem_pack(d):
    """The smem tier's preferred pack: 4 bytes (see runtime/src/softmax/rules.cpp)."""
    return max(1, 4 // d.size)


def smem_default(d, p):
    return p["pack_size"] in (smem_pack(d), 1)


def uncached_default(d, p):
    return (p["pack_size"], p["block_size"]) in ((max_pack(d), 1024),)


TIERS = (
    Tier(
        name="warp",
        template="softmax_warp.cu.j2",
        params=(
            Param("pack_size", "p", packs),
            Param("cols_per_thread", "c", lambda d: range(1, max_cols_per_thread(d) + 1)),
            Param("group_width", "g", lambda d: (1, 2, 4, 8, 16, 32)),
            Param("rows_per_access", "r", lambda d: (1, 2)),
            Param("padding", "pad", lambda d: (0, 1), words=("nopad", "pad")),
        ),
        valid=warp_valid,
        in_default=warp_default,
    ),
    Tier(
        name="smem",
        template="softmax_smem.cu.j2",
        params=(Param("pack_size", "p", packs), Param("block_size", "b", lambda d: BLOCKS)),
        in_default=smem_default,
    ),
    Tier(
        name="uncached",
        template="softmax_uncached.cu.j2",
        params=(Param("pack_size", "p", packs), Param("block_size", "b", lambda d: BLOCKS)),
        in_default=uncached_default,
    ),
    Tier(
        name="generic",
        template="softmax_uncached.cu.j2",
        params=(),
        generic=True,
        fixed=(("pack_size", 1), ("block_size", 256)),
    ),
)
