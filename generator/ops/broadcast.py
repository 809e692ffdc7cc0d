"""The broadcast family's shared parameter space: expand (one input) and
where (cond, x, y) are the same kernel over a different number of inputs
(generator/ops/expand.py, generator/ops/where.py).

The runtime simplifies every problem first (runtime/src/broadcast/simplify.cpp):
shapes right-aligned, size-1 dims dropped, adjacent dims with the same
broadcast pattern across every input merged; expand also widens its unit to
up to 16 bytes.  Both only copy bytes, so variants are compiled per unit
size (b1 .. b16), not per dtype.

Tiers:
  flat     rank <= 1 after simplification: every input is read whole or is
           one value (elementwise, fill, or a mix); no index math
  elem     rank R (2-8) fixed at compile time: each thread's pack of `pack`
           output units is decomposed into coordinates once, shared by
           every input; the index (packs) is int32 with fast division or
           int64; offsets are int64 either way
  generic  elem with the rank read at run time, pack 1 and int64 indices:
           every problem of its unit size
Packs: `pack` consecutive units of the innermost dim per thread, one vector
access of pack x unit bytes (<= 16) for out and for each input that spans
that dim (where's cond: pack bytes); an input broadcast along it reads one
unit and repeats it.
"""
from ..core import Param, Tier

INDEX = ("i32", "i64")


def packs(d):
    return [v for v in (1, 2, 4, 8, 16) if v * d.size <= 16]


def widest(d):
    return 16 // d.size


# compile cost of a variant relative to a softmax one (Tier.cost: bundles of
# 16 on a 2-core machine, about 0.14 s of nvcc a variant past the bundle's
# fixed cost, against 0.56 s)
COST = 0.25


def tiers(flat_template, elem_template):
    # default level: the widest pack (full 16-byte accesses) and pack 1
    # (any extent, any alignment), int32 indices, every rank (ranks 5-8 fell
    # to the generic kernel: bench/NOTES.md sweep v2)
    return (
        Tier(
            name="flat",
            template=flat_template,
            params=(Param("pack", "v", packs),),
            in_default=lambda d, p: p["pack"] in (1, widest(d)),
            fixed=(("rank", 1), ("index", 1)),
            cost=COST,
        ),
        Tier(
            name="elem",
            template=elem_template,
            params=(Param("rank", "r", lambda d: range(2, 9)),
                    Param("pack", "v", packs),
                    Param("index", "", lambda d: range(len(INDEX)), words=INDEX)),
            in_default=lambda d, p: p["index"] == 0 and p["pack"] in (1, widest(d)),
            cost=COST,
        ),
        Tier(
            name="generic",
            template=elem_template,
            params=(),
            generic=True,
            fixed=(("rank", 0), ("pack", 1), ("index", 1)),
            cost=COST,
        ),
    )
