"""python3 -m generator --arch sm_90[,sm_100,...] --level default [--kernels REGEX]
                        [--dtypes f32,f16] [--bundle-size N] [--list | --outputs | --out DIR]"""
import argparse
import sys
from pathlib import Path

from .core import ARCHES, LEVELS, enumerate_op, gencode_flags, parse_arches
from .dtypes import DTYPES
from .emit import DEFAULT_BUNDLE_SIZE, dependency_files, output_names, render_all
from .ops import load_ops
from .tuning import database_files, embedded_texts, load_databases, winners


def parse(argv):
    ap = argparse.ArgumentParser(prog="python3 -m generator", description=__doc__)
    ap.add_argument("--arch", default="sm_90",
                    help="comma-separated list among " + ",".join(ARCHES) + " (SASS for each, PTX for the newest)")
    ap.add_argument("--level", default="default", choices=LEVELS)
    ap.add_argument("--kernels", default="", help="regex over variant names (generic variants always kept)")
    ap.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated subset of " + ",".join(DTYPES))
    ap.add_argument("--ops", default="", help="comma-separated op families (default: all)")
    ap.add_argument("--bundle-size", type=int, default=DEFAULT_BUNDLE_SIZE,
                    help="variants (in units of an average variant's compile cost) per compiled bundle")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--list", action="store_true", help="print the variants, one per line")
    mode.add_argument("--outputs", action="store_true", help="print the files --out would write")
    mode.add_argument("--out", type=Path, help="write the generated sources into this folder")
    mode.add_argument("--deps", action="store_true", help="print the files the output depends on")
    mode.add_argument("--gencode", action="store_true", help="print nvcc's -gencode flags for --arch")
    args = ap.parse_args(argv)
    args.dtypes = [d for d in args.dtypes.split(",") if d]
    bad = [d for d in args.dtypes if d not in DTYPES]
    if bad:
        ap.error(f"--dtypes: unknown dtype {bad[0]!r} (known: {', '.join(DTYPES)})")
    try:
        args.arch = parse_arches(args.arch)
    except ValueError as e:
        ap.error(f"--{e}")
    if args.bundle_size < 1:
        ap.error("--bundle-size: at least 1")
    return args


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.gencode:
        print("\n".join(gencode_flags(args.arch)))
        return 0
    ops = load_ops()
    if args.ops:
        wanted = args.ops.split(",")
        unknown = [o for o in wanted if o not in [m.OP for m in ops]]
        if unknown:
            print(f"--ops: unknown op {unknown[0]!r}", file=sys.stderr)
            return 2
        ops = [m for m in ops if m.OP in wanted]
    databases = load_databases(args.arch)
    picked = winners(databases)
    by_op = {m.OP: enumerate_op(m, args.arch, args.level, args.dtypes, args.kernels or None, picked)
             for m in ops}
    variants = [v for m in ops for v in by_op[m.OP]]
    if args.deps:
        # the databases decide the default and tuned levels, but are not
        # part of the generator's hash (they are measured on its kernels)
        for path in dependency_files() + database_files():
            print(path)
    elif args.list:
        for v in variants:
            print(v.name)
        counts = ", ".join(f"{m.OP}: {len(by_op[m.OP])}" for m in ops)
        print(f"# {len(variants)} variants ({counts}) for {','.join(args.arch)}, level {args.level}",
              file=sys.stderr)
    elif args.outputs:
        for name in output_names(variants, args.bundle_size):
            print(name)
    else:
        compiled = {v.name for v in variants}
        written = render_all(ops, by_op, args.out, args.arch, args.level,
                             embedded_texts(databases, compiled), args.bundle_size)
        print(f"generator: {len(variants)} variants, {len(written)} files changed in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
