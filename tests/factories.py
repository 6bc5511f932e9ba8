"""One-line spec factories for engine tests (hand-built layers, no config parsing); fabricated safetensors files;
the project's scripts loaded as modules."""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import threading
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path

from kvplan.specs import (
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    LayerSpec,
    MambaSpec,
    MLAAttentionSpec,
    SlidingWindowSpec,
)


def full(heads=8, head=64, bs=16, dtype="bfloat16", **kw):
    return FullAttentionSpec(block_size=bs, num_kv_heads=heads, head_size=head, dtype=dtype, **kw)


def sw(window, heads=8, head=64, bs=16, dtype="bfloat16", **kw):
    return SlidingWindowSpec(block_size=bs, num_kv_heads=heads, head_size=head, dtype=dtype, sliding_window=window, **kw)


def chunked(chunk, heads=8, head=128, bs=16, dtype="bfloat16"):
    return ChunkedLocalAttentionSpec(block_size=bs, num_kv_heads=heads, head_size=head, dtype=dtype,
                                     attention_chunk_size=chunk)


def mla(bs=16, cache_dtype_str="auto", dtype="bfloat16"):
    return MLAAttentionSpec(block_size=bs, num_kv_heads=1, head_size=576, head_size_v=0, dtype=dtype,
                            cache_dtype_str=cache_dtype_str)


def gdn(num_spec=0, bs=16):
    # Qwen3-Next gated delta net, TP 1: conv (3 + num_spec, 2·16·128 + 32·128 = 8192), ssm (32, 128, 128), bf16.
    return MambaSpec(block_size=bs, shapes=((3 + num_spec, 8192), (32, 128, 128)), dtypes=("bfloat16", "bfloat16"),
                     mamba_type="gdn", num_speculative_blocks=num_spec)


def layers(specs, first_drafter=None, name="model.layers.{i}.self_attn.attn"):
    """Name layers in order; those from index ``first_drafter`` on are drafter layers."""
    return tuple(
        LayerSpec(name.format(i=i), s, "drafter" if first_drafter is not None and i >= first_drafter else "target", i)
        for i, s in enumerate(specs)
    )


def gpt_oss_20b(num_draft=0):
    # 24 layers: even = sliding(128), odd = full; 8 KV heads × 64; drafter layers are full.
    return layers([sw(128) if i % 2 == 0 else full() for i in range(24)] + [full()] * num_draft,
                  first_drafter=24 if num_draft else None)


def gemma3_27b(extra_full=0):
    # 62 layers: layer i full iff (i + 1) % 6 == 0 (10 full), others sliding(1024); 16 KV heads × 128.
    specs = [full(16, 128) if (i + 1) % 6 == 0 else sw(1024, 16, 128) for i in range(62)]
    return layers(specs + [full(16, 128)] * extra_full, first_drafter=62 if extra_full else None)


def heavy_modules_after_cli(args, root, module="kvplan.cli", packages=("torch", "transformers")):
    """Run `python -m kvplan.cli ARGS` in a fresh interpreter; return (exit code, the modules of
    ``packages`` (torch and transformers) it imported). The exit code is returned so a caller can assert that the
    command really ran: a broken entry point imports nothing and must not pass as 'no torch'."""
    import os
    import subprocess
    import sys

    code = (
        "import sys, runpy\n"
        f"sys.argv = ['kvplan', *{list(args)!r}]\n"
        "rc = 0\n"
        f"try:\n    runpy.run_module({module!r}, run_name='__main__')\n"
        "except SystemExit as e:\n    rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)\n"
        "sys.stderr.write('\\nRC %d MODS ' % rc + ' '.join(sorted(m for m in sys.modules"
        f" if m.split('.')[0] in {tuple(packages)!r})))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root,
                       env={**os.environ, "PYTHONPATH": str(root)})
    assert "\nRC " in r.stderr, f"the CLI did not run:\n{r.stderr[-2000:]}"
    tail = r.stderr.rsplit("\nRC ", 1)[1]
    rc, mods = tail.split(" MODS ", 1)
    return int(rc), mods.split()


SAFETENSORS_BITS = {"BF16": 16, "F16": 16, "F32": 32, "U8": 8, "F8_E4M3": 8}


def safetensors_file(tensors: dict[str, tuple[str, list[int]]], *, data_bytes: int = 0) -> bytes:
    """A safetensors file as the format lays it out: u64 length, JSON header, then the data (zeros; at least
    ``data_bytes`` of them, so a test can tell whether the weights crossed the wire)."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        size = math.prod(shape) * SAFETENSORS_BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + b"\0" * max(offset, data_bytes)


# A Llama of hidden 64, 4 query heads and 2 KV heads of 16, MLP 128, untied, bf16 (layers and vocabulary given).
def tiny_llama_config(layers: int, vocab: int) -> dict:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
            "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
            "num_hidden_layers": layers, "vocab_size": vocab, "max_position_embeddings": 2048,
            "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
            "hidden_act": "silu"}


def tiny_llama_layer(i: int, norm_dtype: str = "BF16") -> dict[str, tuple[str, list[int]]]:
    """Layer ``i``'s tensors of ``tiny_llama_config`` as a checkpoint names and stores them."""
    p = f"model.layers.{i}."
    return {p + "self_attn.q_proj.weight": ("BF16", [64, 64]), p + "self_attn.k_proj.weight": ("BF16", [32, 64]),
            p + "self_attn.v_proj.weight": ("BF16", [32, 64]), p + "self_attn.o_proj.weight": ("BF16", [64, 64]),
            p + "mlp.gate_proj.weight": ("BF16", [128, 64]), p + "mlp.up_proj.weight": ("BF16", [128, 64]),
            p + "mlp.down_proj.weight": ("BF16", [64, 128]), p + "input_layernorm.weight": (norm_dtype, [64]),
            p + "post_attention_layernorm.weight": (norm_dtype, [64])}


@contextmanager
def loopback_server(handler):
    """A real HTTP server on 127.0.0.1 (a free port) running ``handler`` in a thread; yields its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


ROOT = Path(__file__).resolve().parent.parent


def script_module(relpath: str, name: str | None = None):
    """The script at ``relpath`` (from the repository root, e.g. ``scripts/walk.py``) loaded as a module."""
    path = ROOT / relpath
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# the budget request's own fields; every other keyword is the deployment's budget part (BudgetInput)
_REQUEST_FIELDS = ("max_num_batched_tokens", "max_num_seqs", "data_parallel_size", "enable_expert_parallel",
                   "num_gpu_blocks_override", "kv_transfer_config", "tensor_parallel_size", "mxfp4_use_marlin",
                   "triton_kernels")


def budget_of(layout, era, *, overrides: dict | None = None, gpu_memory_gib: float | None = None, **kw):
    """``kv_budget`` for a test in the words of the flags: ``gpu``, ``gpu_memory_gib``, ``overrides`` (the
    override sizes by name) and the rest, split into the deployment's ``BudgetInput`` and the ``BudgetRequest``."""
    from kvplan.budget.estimate import kv_budget
    from kvplan.budget.request import BudgetInput, BudgetRequest

    request = {k: kw.pop(k) for k in _REQUEST_FIELDS if kw.get(k) is not None}
    budget = BudgetInput(gpu_memory=gpu_memory_gib, **(overrides or {}), **kw)
    return kv_budget(layout, era, BudgetRequest(budget, **request))
