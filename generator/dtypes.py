"""Element types as data: one row per dtype, shared by every op family."""
from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    short: str      # used in variant names: f32, f16, bf16, f64, i32
    ctype: str      # CUDA C++ storage type
    compute: str    # accumulation / arithmetic type (half types compute in float)
    size: int       # bytes per element
    enum: str       # kgen_dtype_t enumerator in kgen.h


DTYPES = {
    d.short: d
    for d in (
        DType("f32", "float", "float", 4, "KGEN_FLOAT32"),
        DType("f16", "__half", "float", 2, "KGEN_FLOAT16"),
        DType("bf16", "__nv_bfloat16", "float", 2, "KGEN_BFLOAT16"),
        DType("f64", "double", "double", 8, "KGEN_FLOAT64"),
        DType("i32", "int", "int", 4, "KGEN_INT32"),
    )
}


# Permute only moves bytes: its variants are compiled per movement size (the
# bytes one thread moves per access), not per dtype.  The enum is the
# registry key of each size (kgen::movement_key in runtime/src/variant.hpp).
MOVEMENTS = {
    d.short: d
    for d in (
        DType("b1", "uint8_t", "uint8_t", 1, "kgen::movement_key(1)"),
        DType("b2", "uint16_t", "uint16_t", 2, "kgen::movement_key(2)"),
        DType("b4", "uint32_t", "uint32_t", 4, "kgen::movement_key(4)"),
        DType("b8", "uint2", "uint2", 8, "kgen::movement_key(8)"),
        DType("b16", "uint4", "uint4", 16, "kgen::movement_key(16)"),
    )
}


def max_pack(dtype: DType, max_bytes: int = 16) -> int:
    """Widest vector of this dtype that fits one 16-byte access."""
    return max_bytes // dtype.size
