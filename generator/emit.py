"""Renders variants to files: one .cu per variant (named after it), the
registry table, and the per-family parameter structs.  Files are written only
when their content changed, so an unchanged variant is never recompiled."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Dict, List, Sequence

import jinja2

from .core import Variant

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


def render_all(ops, variants_by_op: Dict[str, List[Variant]], out: Path, arch: str, level: str,
               databases: Sequence[str] = ()) -> List[str]:
    """`databases`: the JSON texts of the tuning databases to compile in."""
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
    ctx = dict(families=families, variants=all_variants, arch=arch, level=level,
               generator_hash=generator_hash(), databases=databases)
    for tpl, fname in (("registry.gen.cpp.j2", "registry.gen.cpp"),
                       ("params.gen.hpp.j2", "kgen_params.gen.hpp")):
        if write_if_changed(out / fname, env.get_template(tpl).render(**ctx)):
            written.append(fname)
    return written


def output_names(variants: Sequence[Variant]) -> List[str]:
    return [v.name + ".cu" for v in variants] + ["registry.gen.cpp", "kgen_params.gen.hpp"]
