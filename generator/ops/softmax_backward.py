"""Backward of softmax / log-softmax, from the forward's output y and dy:
  softmax:     dx = (dy - sum(y * dy)) * y
  log_softmax: dx = dy - exp(y) * sum(dy)
The forward's tiers and parameter space (softmax.py), with kernels that hold
two inputs (y and dy) where the forward holds one: twice the registers of a
warp-tier row, twice the shared memory of an smem-tier row.
"""
import dataclasses

from . import softmax

OP = "softmax_backward"
DTYPES = softmax.DTYPES
SUPPORTS = "kgen::softmax::supports_backward"
PROBLEM_HEADER = "softmax/problem.hpp"
DEVICE_HEADER = "kgen/device/softmax_backward.cuh"
BACKWARD = True  # which kernels the strided templates name
DEVICE_NS = "kgen::device::softmax_backward"

# compile cost of a variant relative to a forward one (Tier.cost: about 0.28
# s of nvcc a variant past a bundle's fixed cost, against 0.56 s; the
# forward's variants hold the masked kernels too)
COST = 0.5


def _backward(tier):
    tier = dataclasses.replace(tier, cost=COST)
    if tier.name == "strided":
        return dataclasses.replace(tier, in_default=softmax.strided_default_in(softmax.STRIDED_BACKWARD))
    if tier.name == "column":
        return dataclasses.replace(softmax.column_tier(backward=True), cost=COST)
    if tier.name == "span":
        return dataclasses.replace(tier, valid=softmax.span_valid_backward, in_default=softmax.span_default_backward)
    if tier.name == "warp":
        return dataclasses.replace(tier, valid=softmax.warp_valid_backward, in_default=softmax.warp_default_backward)
    if tier.name == "block":
        return dataclasses.replace(tier, valid=softmax.slice_valid(backward=True, cluster=False),
                                   in_default=softmax.small_block_default(backward=True))
    if tier.name == "grid":  # forward only
        return dataclasses.replace(tier, valid=lambda d, p, a: False)
    if tier.name == "cluster":
        return dataclasses.replace(tier, valid=softmax.slice_valid(backward=True, cluster=True),
                                   in_default=softmax.slice_default(backward=True, cluster=True))
    return tier


# the forward's tiers, with the backward's register budget for a warp-tier
# row and its own default register tiles
TIERS = tuple(_backward(t) for t in softmax.TIERS)
