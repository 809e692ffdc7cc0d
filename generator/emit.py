"""Renders variants to files: one .cu per variant (named after it), the
bundles that compile them, the registry table, and the per-family parameter
structs.  Files are written only when their content changed, so an
unchanged variant is never recompiled.

A bundle (bundle_<op>_<k>.cu) includes several variant files of one family
and is the translation unit the build compiles: nvcc's fixed cost per
translation unit (about 2.3 s on a 2-core machine: preprocessing, cudafe++,
the host compile of the headers) is then paid once per bundle instead of
once per variant.  A change to one family's templates rewrites only that
family's variant files, so only the bundles that include them rebuild."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import jinja2

from .core import Variant, arch_number, parse_arches

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"


def camel(name: str) -> str:
    return "".join(w.capitalize() for w in name.split("_"))


def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text() == text:
        return False
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return True


def family_fields(op_module) -> List[str]:
    """Union of the parameter names of an op's tiers, in first-seen order:
    the fields of the generated params struct."""
    fields: List[str] = []
    for tier in op_module.TIERS:
        for name in [p.name for p in tier.params] + [k for k, _ in tier.fixed]:
            if name not in fields:
                fields.append(name)
    return fields


def dependency_files() -> List[Path]:
    """The generator's own sources and the templates: what the output of a
    run depends on besides its arguments."""
    files = []
    for base in (ROOT / "generator", TEMPLATES):
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".j2", ".cuh", ".hpp"):
                files.append(path)
    return files


def generator_hash() -> str:
    """Hash of the generator and templates: identifies the kernels a tuning
    database was measured on."""
    h = hashlib.sha256()
    for path in dependency_files():
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


# The default number of cost units (Tier.cost: one softmax variant each) a
# bundle holds (meson.options: bundle_size).  Clean default-level builds
# (581 variants, tests and tools included) on a 2-core machine: 321 s at 8,
# 257 s at 16, 246 s at 32 (103, 46 and 25 bundles; each variant in its own
# translation unit: 1208 s).  At 32 the 2-core build is at its fastest and
# the full level still makes 125 bundles to keep 16 cores busy.
DEFAULT_BUNDLE_SIZE = 32


def bundles(variants: Sequence[Variant], size: int = DEFAULT_BUNDLE_SIZE) -> List[Tuple[str, List[Variant]]]:
    """The variants in bundles of one family each, in generator order, each
    filled up to `size` cost units (Tier.cost: a variant's compile cost
    relative to a softmax one), so that bundles take similar times."""
    if size < 1:
        raise ValueError(f"bundle size must be at least 1, got {size}")
    out: List[Tuple[str, List[Variant]]] = []
    count: Dict[str, int] = {}
    current: List[Variant] = []
    cost = 0.0
    for v in variants:
        if current and (current[0].op != v.op or cost + v.tier.cost > size):
            out.append((current[0].op, current))
            current, cost = [], 0.0
        current.append(v)
        cost += v.tier.cost
    if current:
        out.append((current[0].op, current))
    named = []
    for op, members in out:
        k = count.get(op, 0)
        count[op] = k + 1
        named.append((f"bundle_{op}_{k:02d}.cu", members))
    return named


def render_all(ops, variants_by_op: Dict[str, List[Variant]], out: Path, arch, level: str,
               databases: Sequence[str] = (), bundle_size: int = DEFAULT_BUNDLE_SIZE) -> List[str]:
    """`arch`: the build's arch list; `databases`: the JSON texts of the
    tuning databases to compile in."""
    arches = parse_arches(arch)
    env = environment()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    families = []
    for op in ops:
        families.append({
            "op": op.OP,
            "struct": camel(op.OP) + "Params",
            "tier_enum": camel(op.OP) + "Tier",
            "tiers": [t.name for t in op.TIERS],
            "fields": family_fields(op),
        })
    all_variants = [v for op in ops for v in variants_by_op[op.OP]]
    op_by_name = {op.OP: op for op in ops}
    fields_by_op = {op.OP: family_fields(op) for op in ops}
    for v in all_variants:
        op = op_by_name[v.op]
        fields = fields_by_op[v.op]
        values = dict(v.params)
        text = env.get_template(v.tier.template).render(
            v=v,
            name=v.name,
            dtype=v.dtype,
            p=values,
            op=op,
            struct=camel(v.op) + "Params",
            tier_enum=camel(v.op) + "Tier",
            tier=v.tier.name,
            fields=[(f, values.get(f, 0)) for f in fields],
        )
        if write_if_changed(out / f"{v.name}.cu", text):
            written.append(v.name + ".cu")
    for fname, members in bundles(all_variants, bundle_size):
        text = env.get_template("bundle.cu.j2").render(name=fname[:-3], variants=members)
        if write_if_changed(out / fname, text):
            written.append(fname)
    ctx = dict(families=families, variants=all_variants, arch=",".join(arches), level=level,
               code_arches=[arch_number(a) for a in arches],
               generator_hash=generator_hash(), databases=databases)
    for tpl, fname in (("registry.gen.cpp.j2", "registry.gen.cpp"),
                       ("params.gen.hpp.j2", "kgen_params.gen.hpp")):
        if write_if_changed(out / fname, env.get_template(tpl).render(**ctx)):
            written.append(fname)
    return written


def output_names(variants: Sequence[Variant], bundle_size: int = DEFAULT_BUNDLE_SIZE) -> List[str]:
    """Every file render_all writes: first what the build compiles (the
    bundles, then the registry), then the variant files the bundles
    include, and last the params header."""
    return ([name for name, _ in bundles(variants, bundle_size)] + ["registry.gen.cpp"] +
            [v.name + ".cu" for v in variants] + ["kgen_params.gen.hpp"])
