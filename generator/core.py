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
from pathlib import Path
from typing import AbstractSet, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

from .dtypes import DType, DTYPES

# The GPU architectures a build can target (nvcc 13.0 has each).  A build
# takes a list of them: SASS for every one and PTX for the newest.
ARCHES = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_103", "sm_120")
# default: the pruned set around the heuristic picks, plus the winners of the
# committed tuning databases; full: the whole space (what kgen-tune sweeps);
# tuned: only the winners of the committed databases plus the generic variants.
LEVELS = ("default", "full", "tuned")


def arch_number(arch: str) -> int:
    """sm_90 -> 90, sm_120 -> 120."""
    return int(arch[3:])


def parse_arches(arches) -> Tuple[str, ...]:
    """A build's arch list ("sm_90,sm_120" or a sequence of names): each a
    known arch, no repeats, oldest first.  Raises ValueError otherwise."""
    names = arches.split(",") if isinstance(arches, str) else list(arches)
    names = [a.strip() for a in names if a.strip()]
    if not names:
        raise ValueError(f"arch: name at least one of {', '.join(ARCHES)}")
    for a in names:
        if a not in ARCHES:
            raise ValueError(f"arch must be among {', '.join(ARCHES)}, got {a!r}")
    return tuple(sorted(set(names), key=arch_number))


def gencode_flags(arches: Sequence[str]) -> List[str]:
    """nvcc's flags for a build's arch list: SASS for each arch, and PTX
    for the newest so that later GPUs run it through the driver's JIT."""
    arches = parse_arches(arches)
    flags = [f"-gencode=arch=compute_{arch_number(a)},code=sm_{arch_number(a)}" for a in arches]
    newest = arch_number(arches[-1])
    return flags + [f"-gencode=arch=compute_{newest},code=compute_{newest}"]


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
    # valid(dtype, params, arches): arches is the build's list, oldest first
    valid: Callable[[DType, Dict[str, int], Tuple[str, ...]], bool] = lambda d, p, a: True
    in_default: Callable[[DType, Dict[str, int]], bool] = lambda d, p: True
    # the generic tier holds the variant that supports every valid problem;
    # it is compiled at every level and every kernel filter.
    generic: bool = False
    # parameters with one fixed value: part of the params struct, not the name
    fixed: Tuple[Tuple[str, int], ...] = ()
    # the oldest arch whose features the tier needs (90: thread-block
    # clusters, say; 0: any).  Its variants are emitted only when the build
    # lists such an arch; their kernels compile to nothing in the passes of
    # older arches (the device code guards them with __CUDA_ARCH__), and the
    # runtime never selects them on a device that runs older code.
    min_arch: int = 0
    # relative compile cost of one variant (nvcc time, measured): bundles
    # are filled to an even cost rather than an even count
    cost: float = 1.0

    def __post_init__(self):
        if self.generic and self.min_arch:
            raise ValueError(f"tier {self.name}: a generic tier runs everywhere (min_arch 0)")


@dataclass(frozen=True)
class Variant:
    op: str
    tier: Tier
    dtype: DType
    params: Tuple[Tuple[str, int], ...]
    name: str = field(default="")
    # ranked by the heuristic: the default level's own variants (and the
    # generic ones) at the default and full levels; every variant of a
    # tuned-level build.  A variant compiled only as a tuning database's
    # winner (or only at the full level) is selected only through a
    # database entry or by name, never by the heuristic, so that committing
    # one GPU's database never moves the heuristic's picks on any GPU.
    ranked: bool = field(default=True)

    @property
    def param_dict(self) -> Dict[str, int]:
        return dict(self.params)

    @property
    def generic(self) -> bool:
        return self.tier.generic


def variant_name(op: str, tier: Tier, dtype: DType, params: Dict[str, int]) -> str:
    """The one canonical name: file name, filter key, registry key and
    tuning-db value.  e.g. softmax_warp_f16_p8_c16_g32_r2_pad."""
    parts = [op, tier.name, dtype.short]
    parts += [p.spell(params[p.name]) for p in tier.params]
    return "_".join(parts)


KEEP_FILE = Path(__file__).resolve().parent / "default_keep.txt"


def default_keep() -> FrozenSet[str]:
    """The variant names of default_keep.txt: in the default level and ranked
    by the heuristic beside the tiers' own predicates."""
    lines = KEEP_FILE.read_text().splitlines() if KEEP_FILE.is_file() else []
    return frozenset(l.strip() for l in lines if l.strip() and not l.lstrip().startswith("#"))


def enumerate_tier(op: str, tier: Tier, dtype: DType, arches: Tuple[str, ...], level: str,
                   winners: AbstractSet[str] = frozenset(),
                   keep: AbstractSet[str] = frozenset()) -> List[Variant]:
    """The tier's variants of one element at `level`.  `keep`: names the
    default level lists besides its tiers' predicates (default_keep.txt)."""
    if tier.min_arch and arch_number(arches[-1]) < tier.min_arch:
        return []
    names = [p.name for p in tier.params]
    spaces = [list(p.values(dtype)) for p in tier.params]
    out = []
    for combo in itertools.product(*spaces):
        params = dict(zip(names, combo))
        if not tier.valid(dtype, params, arches):
            continue
        name = variant_name(op, tier, dtype, params)
        # a tuned-level build holds only winners (and generics): the
        # heuristic ranks what it has
        ranked = level == "tuned" or tier.generic or tier.in_default(dtype, params) or name in keep
        if not tier.generic and name not in winners:
            if level == "tuned" or (level == "default" and not ranked):
                continue
        ordered = tuple((n, params[n]) for n in names) + tuple(tier.fixed)
        out.append(Variant(op, tier, dtype, ordered, name, ranked))
    return out


def enumerate_op(op_module, arch, level: str, dtypes: Sequence[str],
                 kernels: Optional[str] = None,
                 winners: AbstractSet[str] = frozenset()) -> List[Variant]:
    """All variants of one op, in a deterministic order (tier, dtype, params).
    The kernel filter never removes generic variants: selection relies on them.
    `winners` (variant names the tuning databases pick) join the default
    level and make up the tuned one.  `arch`: the build's arch list (a
    name, "sm_90,sm_120", or a sequence)."""
    arches = parse_arches(arch)
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    keep = default_keep()
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
            for v in enumerate_tier(op_module.OP, tier, element, arches, level, winners, keep):
                if pattern is None or v.generic or pattern.search(v.name):
                    result.append(v)
    names = [v.name for v in result]
    if len(names) != len(set(names)):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"duplicate variant names in {op_module.OP}: {dup[:5]}")
    return result
