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


def max_pack(dtype: DType, max_bytes: int = 16) -> int:
    """Widest vector of this dtype that fits one 16-byte access."""
    return max_bytes // dtype.size
