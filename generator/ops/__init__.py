"""Op families: every module in this package that defines OP and TIERS is one.

A new family is a new module here plus its templates; nothing else in the
generator needs to change.
"""
import importlib
import pkgutil


def load_ops():
    ops = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "OP") and hasattr(module, "TIERS"):
            ops.append(module)
    return ops
