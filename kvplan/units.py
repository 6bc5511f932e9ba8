"""Small arithmetic and unit helpers shared by every layer of kvplan."""

from __future__ import annotations

import re

GiB = 1 << 30
MiB = 1 << 20

# Bytes per element for the cache dtypes vLLM uses (reference §1.2). Every fp8
# flavour and int8 is stored as one byte (vLLM keeps fp8 caches as uint8).
_DTYPE_BYTES = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "uint8": 1,
    "int8": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}

# --kv-cache-dtype values → the cache tensor dtype. "auto" resolves to the model dtype.
CACHE_DTYPES = {
    "auto": None,
    "bfloat16": "bfloat16",
    "float16": "float16",
    "half": "float16",
    "float32": "float32",
    "float": "float32",
    "fp8": "uint8",
    "fp8_e4m3": "uint8",
    "fp8_e5m2": "uint8",
    "fp8_inc": "uint8",
    "fp8_ds_mla": "uint8",
    "fp8_per_token_head": "uint8",
    "int8": "int8",
    "int8_per_token_head": "int8",
}

# --dtype / config torch_dtype values → canonical torch dtype names.
MODEL_DTYPES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}


def cdiv(a: int, b: int) -> int:
    """Ceiling division, as vLLM's ``cdiv``."""
    return -(a // -b)


def largest_true(pred, lo: int, hi: int) -> int:
    """Largest x in [lo, hi] with ``pred(x)``, for a predicate that is true up to some point
    and false after it; ``pred(lo)`` is assumed true (binary search, ~log2(hi - lo) calls)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def dtype_size_bytes(dtype: str) -> int:
    try:
        return _DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}") from None


_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]i?[bB]?|[bB])?\s*$")
_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "kib": 1 << 10, "ki": 1 << 10,
    "m": 1000**2, "mb": 1000**2, "mib": 1 << 20, "mi": 1 << 20,
    "g": 1000**3, "gb": 1000**3, "gib": 1 << 30, "gi": 1 << 30,
    "t": 1000**4, "tb": 1000**4, "tib": 1 << 40, "ti": 1 << 40,
}


def parse_bytes(text: str) -> int:
    """Parse ``"40GiB"``, ``"42949672960"``, ``"1.5 GB"`` into bytes.

    Binary units (KiB, MiB, GiB, TiB) are powers of 1024; decimal ones (KB, MB,
    GB, TB) powers of 1000, as vLLM's ``--kv-cache-memory-bytes`` parser reads them.
    """
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"cannot read {text!r} as a size; write bytes or e.g. 40GiB, 512MiB")
    number, unit = m.group(1), (m.group(2) or "").lower()
    value = float(number) * _UNITS[unit]
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number of bytes")
    return int(value)


def format_bytes(n: float) -> str:
    """Human form for tables: binary units, two decimals."""
    for unit, size in (("TiB", 1 << 40), ("GiB", GiB), ("MiB", MiB), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def compact_ranges(indices: list[int]) -> str:
    """``[0, 2, 4, 6, 9]`` → ``"0-6/2, 9"``: arithmetic runs of 3+ collapse with their step."""
    out: list[str] = []
    i = 0
    while i < len(indices):
        j = i
        if i + 1 < len(indices):
            step = indices[i + 1] - indices[i]
            while j + 1 < len(indices) and indices[j + 1] - indices[j] == step:
                j += 1
            if j - i >= 2:
                out.append(f"{indices[i]}-{indices[j]}" + (f"/{step}" if step != 1 else ""))
                i = j + 1
                continue
        out.append(str(indices[i]))
        i += 1
    return ", ".join(out)
