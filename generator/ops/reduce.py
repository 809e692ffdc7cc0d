"""Reductions: sum, mean, max, min, argmax, argmin over the middle axis of a
tensor seen as (outer, reduce, inner).  inner == 1 is the last dim,
outer == inner == 1 the whole tensor.

The op is a run-time argument: each variant compiles one kernel per op
(sum and mean share one), so a variant is a strategy and its parameters.
Strategies for inner == 1 (rows of `reduce` contiguous elements):
  thread   one thread per row (very short rows)
  warp     a group of `group_width` lanes per row, several rows per block
  block    one block per row; `tree` picks the block-level combine
           (warp shuffles, or the shared-memory trees: sequential
           addressing, sequential with the last warp unrolled)
  split    several blocks per row for few long rows (the whole tensor
           included): each writes a partial, the last one to finish
           combines them in a fixed order (deterministic, one launch)
and for inner > 1 (the strided case):
  col      `lanes` threads across inner, each owning `pack_size`
           consecutive outputs (vector loads along inner), the rest of the
           block across reduce; split across blocks like `split` when the
           outputs alone cannot fill the GPU
  col_thread  a thread per `pack_size` outputs of the flattened (outer,
           inner), folding the whole reduced axis: outputs that fill the
           GPU on their own (short reduced axes, narrow or odd inner)
  slab     a narrow inner (at most half a block of packs): a block reads
           a run of rows of one outer position's slab, which lies back to
           back, thread t at inner pack t % (inner / pack_size); split
           across blocks like col when the slabs cannot fill the GPU
  generic  block (inner == 1) or col (inner > 1) at pack 1, splitting as
           needed: every valid problem, any alignment.
Every kernel loads `fold` packs per thread before combining any of them.
"""
from ..core import Param, Tier
from ..dtypes import max_pack

OP = "reduce"
DTYPES = ("f32", "f16", "bf16", "f64", "i32")
SUPPORTS = "kgen::reduce::supports"
PROBLEM_HEADER = "reduce/problem.hpp"

TREES = ("shfl", "seq", "unroll")


def packs(d):
    """pack 1 (any alignment) and the widest 16-byte pack"""
    return sorted({1, max_pack(d)})


def widest(d, p):
    return p["pack_size"] == max_pack(d)


def pack(d):
    return Param("pack_size", "p", packs)


FOLD = Param("fold", "u", lambda d: (1, 2, 4, 8))


def thread_default(d, p):
    # pack 1 too: many short rows of odd length would otherwise go to the
    # generic block-per-row kernel
    return (widest(d, p) and p["fold"] == 2) or (p["pack_size"] == 1 and p["fold"] == 4)


def warp_valid(d, p, arches):
    # pack 1 only for full warps: short misaligned rows go to the thread tier
    return p["fold"] in (1, 2, 4) and (widest(d, p) or (p["group_width"] == 32 and p["fold"] == 4))


def warp_default(d, p):
    return widest(d, p) and p["fold"] == 4 and p["group_width"] in (4, 8, 32)


def block_valid(d, p, arches):
    if p["tree"] != 0:  # the shared-memory trees, for the comparison
        return widest(d, p) and p["fold"] == 4 and p["block_size"] >= 256
    return p["fold"] >= 2 and (widest(d, p) or (p["block_size"] == 256 and p["fold"] in (4, 8)))


def block_default(d, p):
    return widest(d, p) and p["fold"] == 4 and p["block_size"] in (256, 512) and p["tree"] == 0


def split_valid(d, p, arches):
    return widest(d, p) and p["fold"] >= 2 and p["block_size"] >= 256


def split_default(d, p):
    return p["fold"] == 8 and p["block_size"] == 256


def col_valid(d, p, arches):
    if not widest(d, p):  # 8 lanes: inner extents of 3-16 (rows adjacent, a warp's loads contiguous)
        # fold 8 too: at pack 1 a thread's 4 loads of 2 bytes kept too
        # little in flight (H200 sweep: a bfloat16 sum over dim 0 of
        # 6595 x 5381, 56.9 us at its best variant, about 30% of copy)
        return p["block_size"] == 256 and p["fold"] in (4, 8) and p["lanes"] in (8, 32)
    return p["fold"] in (2, 4) and p["block_size"] >= 128 and p["block_size"] // p["lanes"] >= 2


def col_fold(d):
    """about 16 elements in flight a thread (runtime/src/reduce/rules.cpp)"""
    return max(2, min(4, 16 // max_pack(d)))


def col_default(d, p):
    # the narrower packs too (full level: 32 lanes, 256 threads, fold 4):
    # a middle axis whose inner extent or pointer the widest pack does not
    # divide went to the generic kernel, at 0.1-0.2x torch (H100, random
    # sweep, bench/NOTES.md sweep v1)
    if not widest(d, p):
        return True
    return p["fold"] == col_fold(d) and (p["lanes"], p["block_size"]) in ((8, 512), (32, 256))


def col_thread_default(d, p):
    return p["block_size"] == 256 and p["fold"] == 4


def slab_default(d, p):
    # 16 bytes or more in flight a thread: the widest pack 4 deep, pack 1
    # (an inner or pointer the widest pack does not divide) 8 deep
    return p["block_size"] == 256 and p["fold"] == (4 if widest(d, p) else 8)


# Tier.cost: compile cost of a variant relative to a softmax one, from the
# bundles of 16 on a 2-core machine (nvcc past a bundle's fixed cost: thread
# and warp tiers about 0.44 s a variant, block and split 1.0 s, col 1.5 s,
# against 0.56 s for softmax)
TIERS = (
    Tier(
        name="thread",
        template="reduce_group.cu.j2",
        params=(pack(None), Param("fold", "u", lambda d: (1, 2, 4))),
        in_default=thread_default,
        fixed=(("group_width", 1), ("block_size", 128)),
        cost=0.8,
    ),
    Tier(
        name="warp",
        template="reduce_group.cu.j2",
        params=(Param("group_width", "g", lambda d: (2, 4, 8, 16, 32)), pack(None), FOLD),
        valid=warp_valid,
        in_default=warp_default,
        fixed=(("block_size", 128),),
        cost=0.8,
    ),
    Tier(
        name="block",
        template="reduce_block.cu.j2",
        params=(Param("block_size", "b", lambda d: (128, 256, 512, 1024)), pack(None), FOLD,
                Param("tree", "", lambda d: range(len(TREES)), words=TREES)),
        valid=block_valid,
        in_default=block_default,
        cost=1.8,
    ),
    Tier(
        name="split",
        template="reduce_block.cu.j2",
        params=(Param("block_size", "b", lambda d: (256, 512, 1024)), pack(None), FOLD),
        valid=split_valid,
        in_default=split_default,
        fixed=(("tree", 0),),
        cost=1.8,
    ),
    Tier(
        name="col",
        template="reduce_col.cu.j2",
        params=(Param("lanes", "l", lambda d: (8, 16, 32)),
                Param("block_size", "b", lambda d: (128, 256, 512)), pack(None), FOLD),
        valid=col_valid,
        in_default=col_default,
        cost=2.7,
    ),
    Tier(
        name="col_thread",
        template="reduce_col_thread.cu.j2",
        params=(Param("block_size", "b", lambda d: (128, 256)), pack(None), Param("fold", "u", lambda d: (2, 4, 8))),
        in_default=col_thread_default,
        fixed=(("lanes", 1), ("group_width", 1), ("tree", 0)),
        cost=0.8,
    ),
    Tier(
        name="slab",
        template="reduce_slab.cu.j2",
        params=(Param("block_size", "b", lambda d: (128, 256, 512)), pack(None), Param("fold", "u", lambda d: (2, 4, 8))),
        in_default=slab_default,
        fixed=(("lanes", 1), ("group_width", 1), ("tree", 0)),
        cost=1.5,
    ),
    Tier(
        name="generic",
        template="reduce_generic.cu.j2",
        params=(),
        generic=True,
        fixed=(("pack_size", 1), ("fold", 4), ("block_size", 256), ("lanes", 32), ("tree", 0)),
        cost=2.7,
    ),
)
