"""Small arithmetic and unit helpers shared by every layer of kvplan."""

from __future__ import annotations

import math
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
    "int32": 4,  # a weight table's dtype (DeepSeek-V4's hash-routing tid2eid), never a cache dtype
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


class Bisection:
    """The largest x in [lo, hi] where a predicate holds (true up to some point, false after it;
    assumed true at ``lo``), by binary search (~log2(hi - lo) points), driven by its caller so that
    the predicate runs where it is written (a core function calling a predicate of a layer above
    would be a call back up)::

        search = Bisection(lo, hi)
        for x in search:
            search.answer(pred(x))
        search.largest  # the largest x in [lo, hi] with pred(x)
    """

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi, self._mid = lo, hi, lo

    def __iter__(self) -> "Bisection":
        return self

    def __next__(self) -> int:
        if self.lo >= self.hi:
            raise StopIteration
        self._mid = (self.lo + self.hi + 1) // 2
        return self._mid

    def answer(self, holds: bool) -> None:
        """Whether the predicate holds at the point last given."""
        if holds:
            self.lo = self._mid
        else:
            self.hi = self._mid - 1

    @property
    def largest(self) -> int:
        return self.lo


def dtype_size_bytes(dtype: str) -> int:
    try:
        return _DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}") from None


# vLLM's ``human_readable_int`` (vllm/utils/argparse_utils.py, read in 0.34.0): one letter after a
# number; lower case is decimal (k = 10**3, m, g, t), upper case binary (K = 2**10, M, G, T), and a
# decimal number with a binary letter is refused ("Decimals are not allowed with binary suffixes").
# kvplan extensions, accepted on top: IEC/SI unit names (40GiB = 40·2**30, 80GB = 80·10**9, 512 MiB,
# 10B; a fraction with a unit name is floored to bytes: 13.72GiB), scientific notation for a whole
# number (1.5e10), and thousands separators (131_072, 131,072).
_VLLM_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_VLLM_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_VLLM_RE = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_UNIT_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)")
_UNITS = {
    "": 1, "b": 1,
    "kb": 1000, "kib": 1 << 10, "ki": 1 << 10,
    "mb": 1000**2, "mib": 1 << 20, "mi": 1 << 20,
    "gb": 1000**3, "gib": 1 << 30, "gi": 1 << 30,
    "tb": 1000**4, "tib": 1 << 40, "ti": 1 << 40,
}


def parse_human_int(text: str | int) -> int:
    """A count or a size as vLLM's flags read it (``human_readable_int``), plus unit names.

    ``40G`` → 40·2**30, ``40g`` → 40·10**9, ``128k`` → 128,000, ``25.6k`` → 25,600,
    ``40GiB`` → 40·2**30, ``80GB`` → 80·10**9, ``1.5e10`` → 15,000,000,000. Raises
    ``ValueError`` with the reason; ``1.5G`` is refused as vLLM refuses it.
    """
    if isinstance(text, bool):
        raise ValueError(f"{text!r} is not a number")
    if isinstance(text, int):
        return text
    value = str(text).strip()
    m = _VLLM_RE.fullmatch(value)
    if m:
        number, suffix = m.groups()
        if suffix in _VLLM_DECIMAL:
            return int(float(number) * _VLLM_DECIMAL[suffix])
        if "." in number:
            raise ValueError(f"decimals are not allowed with binary suffixes like {suffix} (vLLM's rule); "
                             f"did you mean {number}{suffix.lower()}?")
        return int(number) * _VLLM_BINARY[suffix]
    plain = value.replace("_", "").replace(",", "")
    m = _UNIT_RE.fullmatch(plain)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"cannot read {text!r} as a number; write e.g. 131072, 128k (10**3), 40G (2**30), "
                         "40g (10**9), 40GiB or 80GB")
    number, unit = m.group(1), m.group(2).lower()
    factor = _UNITS[unit]
    if "." in number or "e" in number.lower():
        value_f = float(number) * factor
        if not math.isfinite(value_f):  # 1e400: beyond any float, let alone a size
            raise ValueError(f"{text!r} is too large")
        if value_f != int(value_f) and factor == 1:
            raise ValueError(f"{text!r} is not a whole number")
        return int(value_f)  # 13.72GiB (copied from a vLLM log line) is floored to whole bytes
    return int(number) * factor


def parse_bytes(text: str | int) -> int:
    """A size in bytes (``parse_human_int``'s rules); kept for callers that say "bytes"."""
    return parse_human_int(text)


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


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """``1 layer``, ``2 layers``, ``0 layers``, ``1,000 layers``, ``1.5 requests`` (``many`` for
    irregular plurals)."""
    count = f"{n:,g}" if isinstance(n, float) else f"{n:,}"
    return f"{count} {word if n == 1 else (many or word + 's')}"
