"""llama.cpp's own KV-cache sizes, recorded from a real CPU build, for kvplan's tests.

Run with the Python of a venv that has ``llama-cpp-python`` (built from source) and the
``gguf`` package of the same llama.cpp tree:

    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_OPENMP=OFF" \
      .golden-venvs/llamacpp/bin/pip install llama-cpp-python==0.3.36
    .golden-venvs/llamacpp/bin/pip install <llama-cpp-python sdist>/vendor/llama.cpp/gguf-py
    .golden-venvs/llamacpp/bin/python scripts/golden/llamacpp_goldens.py

It writes tiny GGUF models (random weights; the real architecture's layer pattern and
sliding window, fewer and narrower layers) for gemma-3 and gpt-oss into a temporary
directory, creates a llama.cpp context for every case in ``CASES`` (n_ctx, n_seq_max,
n_ubatch, swa_full, kv_unified), captures llama.cpp's log lines, and writes
``tests/golden/llamacpp/<model>.json``: the model's geometry and, per case, what llama.cpp
printed (n_ctx, n_ctx_seq, n_ubatch, and per cache: cells, layers, streams, K and V MiB).
The CI tests only compare kvplan against these files; the build is too slow for CI.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "llamacpp"

# Scaled-down geometry; the window and the full/sliding pattern are the real models'.
MODELS = {
    # gemma-3: layer i full iff (i + 1) % 6 == 0 (llama.cpp's default pattern 6), window 1024.
    "gemma3-tiny": {"arch": "gemma3", "n_layer": 12, "n_embd": 64, "n_head": 4, "n_head_kv": 2, "head_dim": 32,
                    "n_ff": 128, "n_vocab": 64, "sliding_window": 1024, "n_ctx_train": 131072},
    # gpt-oss: even layers sliding (pattern 2), window 128; 4 experts, 2 used.
    "gpt-oss-tiny": {"arch": "gpt-oss", "n_layer": 6, "n_embd": 64, "n_head": 4, "n_head_kv": 2, "head_dim": 16,
                     "n_ff": 64, "n_vocab": 64, "sliding_window": 128, "n_ctx_train": 131072,
                     "n_expert": 4, "n_expert_used": 2},
}

# (n_ctx, n_seq_max, n_ubatch, swa_full, kv_unified); n_batch stays at 2048.
CASES = [
    (4096, 1, 512, False, False),
    (4096, 1, 512, True, False),
    (4000, 1, 512, False, False),  # n_ctx not a multiple of 256
    (131072, 1, 512, False, False),
    (16384, 4, 512, False, True),
    (16384, 4, 512, False, False),
    (16384, 3, 512, False, False),  # 16384 / 3 is not a multiple of 256
    (16384, 4, 512, True, False),
    (16384, 4, 128, False, True),
    (16384, 4, 4096, False, True),
    (1000, 2, 512, False, True),
    (300, 1, 512, False, False),  # n_ctx below n_ubatch: n_batch = n_ctx caps n_ubatch
    (524288, 4, 512, False, True),
    (524288, 4, 512, False, False),
]


def write_model(path: Path, spec: dict) -> None:
    import gguf

    rng = np.random.default_rng(0)
    arch = spec["arch"]
    w = gguf.GGUFWriter(str(path), arch)
    E, H, KV, D, F, V = (spec[k] for k in ("n_embd", "n_head", "n_head_kv", "head_dim", "n_ff", "n_vocab"))
    w.add_context_length(spec["n_ctx_train"])
    w.add_embedding_length(E)
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(10000.0)
    w.add_sliding_window(spec["sliding_window"])
    w.add_vocab_size(V)
    w.add_tokenizer_model("none")
    names = gguf.TENSOR_NAMES
    T = gguf.MODEL_TENSOR

    def t(kind, shape, i=None, suffix="weight"):
        # numpy shape is ggml's ne reversed
        name = names[kind].format(bid=i) + "." + suffix
        w.add_tensor(name, (rng.standard_normal(tuple(reversed(shape))) * 0.02).astype(np.float32))

    t(T.TOKEN_EMBD, (E, V))
    t(T.OUTPUT_NORM, (E,))
    if arch == "gpt-oss":
        NE = spec["n_expert"]
        w.add_expert_count(NE)
        w.add_expert_used_count(spec["n_expert_used"])
        w.add_expert_feed_forward_length(F)
        w.add_rope_dimension_count(D)
        t(T.OUTPUT, (E, V))
    for i in range(spec["n_layer"]):
        t(T.ATTN_NORM, (E,), i)
        t(T.ATTN_Q, (E, H * D), i)
        t(T.ATTN_K, (E, KV * D), i)
        t(T.ATTN_V, (E, KV * D), i)
        t(T.ATTN_OUT, (H * D, E), i)
        if arch == "gemma3":
            t(T.ATTN_POST_NORM, (E,), i)
            t(T.ATTN_K_NORM, (D,), i)
            t(T.ATTN_Q_NORM, (D,), i)
            t(T.FFN_NORM, (E,), i)
            t(T.FFN_GATE, (E, F), i)
            t(T.FFN_UP, (E, F), i)
            t(T.FFN_DOWN, (F, E), i)
            t(T.FFN_POST_NORM, (E,), i)
        else:
            NE = spec["n_expert"]
            t(T.ATTN_POST_NORM, (E,), i)
            t(T.ATTN_Q, (H * D,), i, "bias")
            t(T.ATTN_K, (KV * D,), i, "bias")
            t(T.ATTN_V, (KV * D,), i, "bias")
            t(T.ATTN_OUT, (E,), i, "bias")
            t(T.ATTN_SINKS, (H,), i)
            t(T.FFN_GATE_INP, (E, NE), i)
            t(T.FFN_GATE_INP, (NE,), i, "bias")
            t(T.FFN_GATE_EXP, (E, F, NE), i)
            t(T.FFN_DOWN_EXP, (F, E, NE), i)
            t(T.FFN_UP_EXP, (E, F, NE), i)
            t(T.FFN_GATE_EXP, (F, NE), i, "bias")
            t(T.FFN_DOWN_EXP, (E, NE), i, "bias")
            t(T.FFN_UP_EXP, (F, NE), i, "bias")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


LOG: list[str] = []

CTX_RE = re.compile(r"llama_context: (n_ctx|n_ctx_seq|n_seq_max|n_ubatch|n_batch|kv_unified)\s+= (\S+)")
KV_RE = re.compile(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
                   r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB")
ISWA_RE = re.compile(r"llama_kv_cache_iswa: creating +(non-SWA|SWA) KV cache, size = (\d+) cells")


def parse(lines: list[str]) -> dict:
    text = "".join(lines)
    ctx = {k: v for k, v in CTX_RE.findall(text)}
    caches = []
    for m in KV_RE.finditer(text):
        caches.append({"size_mib": m.group(1), "cells": int(m.group(2)), "layers": int(m.group(3)),
                       "n_seq_max": int(m.group(4)), "n_stream": int(m.group(5)), "type_k": m.group(6),
                       "k_mib": m.group(7), "type_v": m.group(8), "v_mib": m.group(9)})
    iswa = [{"cache": kind, "cells": int(n)} for kind, n in ISWA_RE.findall(text)]
    return {
        "n_ctx": int(ctx["n_ctx"]), "n_ctx_seq": int(ctx["n_ctx_seq"]), "n_seq_max": int(ctx["n_seq_max"]),
        "n_batch": int(ctx["n_batch"]), "n_ubatch": int(ctx["n_ubatch"]), "kv_unified": ctx["kv_unified"] == "true",
        "iswa": iswa, "caches": caches,
        "warnings": sorted({ln.strip() for ln in lines if "rounding down" in ln or "full-size SWA" in ln}),
    }


def run_case(llama_cpp, model, case) -> dict:
    n_ctx, n_seq, n_ubatch, swa_full, unified = case
    p = llama_cpp.llama_context_default_params()
    p.n_ctx, p.n_seq_max, p.n_ubatch, p.swa_full, p.kv_unified = n_ctx, n_seq, n_ubatch, swa_full, unified
    p.n_threads = p.n_threads_batch = 1
    LOG.clear()
    ctx = llama_cpp.llama_init_from_model(model, p)
    if not ctx:
        raise RuntimeError(f"llama_init_from_model failed for {case}:\n{''.join(LOG)}")
    out = parse(LOG)
    llama_cpp.llama_free(ctx)
    return {"request": {"n_ctx": n_ctx, "n_seq_max": n_seq, "n_ubatch": n_ubatch, "n_batch": p.n_batch,
                        "swa_full": swa_full, "kv_unified": unified},
            "llama_cpp": out}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    import importlib.metadata as md

    import llama_cpp

    @llama_cpp.llama_log_callback
    def on_log(level, text, user_data):  # noqa: ARG001 - ctypes signature
        LOG.append(text.decode("utf-8", "replace"))

    llama_cpp.llama_log_set(on_log, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, spec in MODELS.items():
            path = Path(tmp) / f"{name}.gguf"
            write_model(path, spec)
            mp = llama_cpp.llama_model_default_params()
            LOG.clear()
            model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
            if not model:
                print("".join(LOG), file=sys.stderr)
                raise SystemExit(f"llama.cpp could not load {name}")
            results = [run_case(llama_cpp, model, c) for c in CASES]
            llama_cpp.llama_model_free(model)
            doc = {"llama_cpp_python": md.version("llama-cpp-python"), "llama_cpp_build": "0c1e57098",
                   "gguf": md.version("gguf"), "model": name, "geometry": spec, "cases": results}
            (args.out / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
            print(f"{name}: {len(results)} cases → {args.out / (name + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
