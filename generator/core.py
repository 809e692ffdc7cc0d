"""Variant model shared by every op family.

An op family (generator/ops/<op>.py) describes its parameter space as data:
a list of Tier objects, each naming its template, its parameters with their
value sets, a constraint, and a predicate for the pruned default level.
Everything else (enumeration order, names, filtering, file writing) lives
here so that a new family is only data plus templates.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import AbstractSet, Callable, Dict, List, Optional, Sequence, Tuple

from .dtypes import DType, DTYPES

ARCHES = ("sm_80", "sm_86", "sm_89", "sm_90")
# default: the pruned set around the heuristic picks, plus the winners of the
# committed tuning databases; full: the whole space (what kgen-tune sweeps);
# tuned: only the winners of the committed databases plus the generic variants.
LEVELS = ("default", "full", "tuned")


@dataclass(frozen=True)
class Param:
    """One tunable parameter: its C++ field name, the short tag used in
    variant names, and the function giving its candidate values for a dtype."""
    name: str
    tag: str
    values: Callable[[DType], Sequence[int]]
    # how the value is written in a name: tag+value by default; for small
    # enumerations (booleans included) one word per value, indexed by it
    # (e.g. ("nopad", "pad")).
    words: Optional[Tuple[str, ...]] = None

    def spell(self, value: int) -> str:
        if self.words is not None:
            return self.words[value]
        return f"{self.tag}{value}"


@dataclass(frozen=True)
class Tier:
    """A template family inside an op: the kernels of one algorithm."""
    name: str
    template: str
    params: Tuple[Param, ...]
    valid: Callable[[DType, Dict[str, int], str], bool] = lambda d, p, a: True
    in_default: Callable[[DType, Dict[str, int]], bool] = lambda d, p: True
    # the generic tier holds the variant that supports every valid problem;
    # it is compiled at every level and every kernel filter.
    generic: bool = False
    # parameters with one fixed value: part of the params struct, not the name
    fixed: Tuple[Tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Variant:
    op: str
    tier: Tier
    dtype: DType
    params: Tuple[Tuple[str, int], ...]
    name: str = field(default="")

    @property
    def param_dict(self) -> Dict[str, int]:
        return dict(self.params)

    @property
    def generic(self) -> bool:
        return self.tier.generic


def variant_name(op: str, tier: Tier, dtype: DType, params: Dict[str, int]) -> str:
    """The one canonical name: file name, filter key, registry key and
    tuning-db value.  e.g. softmax_warp_f16_p8_c4_g32_r1_pad."""
    parts = [op, tier.name, dtype.short]
    parts += [p.spell(params[p.name]) for p in tier.params]
    return "_".join(parts)


def enumerate_tier(op: str, tier: Tier, dtype: DType, arch: str, level: str,
                   winners: AbstractSet[str] = frozenset()) -> List[Variant]:
    names = [p.name for p in tier.params]
    spaces = [list(p.values(dtype)) for p in tier.params]
    out = []
    for combo in itertools.product(*spaces):
        params = dict(zip(names, combo))
        if not tier.valid(dtype, params, arch):
            continue
        name = variant_name(op, tier, dtype, params)
        if not tier.generic and name not in winners:
            if level == "tuned" or (level == "default" and not tier.in_default(dtype, params)):
                continue
        ordered = tuple((n, params[n]) for n in names) + tuple(tier.fixed)
        out.append(Variant(op, tier, dtype, ordered, name))
    return out


def enumerate_op(op_module, arch: str, level: str, dtypes: Sequence[str],
                 kernels: Optional[str] = None,
                 winners: AbstractSet[str] = frozenset()) -> List[Variant]:
    """All variants of one op, in a deterministic order (tier, dtype, params).
    The kernel filter never removes generic variants: selection relies on them.
    `winners` (variant names the tuning databases pick) join the default
    level and make up the tuned one."""
    if arch not in ARCHES:
        raise ValueError(f"arch must be one of {', '.join(ARCHES)}, got {arch!r}")
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    pattern = re.compile(kernels) if kernels else None
    # an op with its own element table (permute: movement sizes) is not
    # filtered by dtype: its generic variants serve every dtype
    table = getattr(op_module, "ELEMENTS", None)
    result = []
    for tier in op_module.TIERS:
        for short in op_module.DTYPES:
            if table is None and short not in dtypes:
                continue
            element = table[short] if table is not None else DTYPES[short]
            for v in enumerate_tier(op_module.OP, tier, element, arch, level, winners):
                if pattern is None or v.generic or pattern.search(v.name):
                    result.append(v)
    names = [v.name for v in result]
    if len(names) != len(set(names)):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicate variant names in {op_module.OP}: {dup[:5]}")
    return result
