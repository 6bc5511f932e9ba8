"""``--kv-cache-dtype auto`` on ModelOpt checkpoints, as vLLM resolves it.

vLLM 0.34.0 (the same in 0.33.0 and 0.18.0, checked by running the functions in each venv):
``get_config`` attaches ``hf_quant_config.json`` beside config.json when config.json has no
``quantization_config`` (transformers_utils/config.py lines 996-1007); the model-arch convertor sets
``quant_method`` from ``producer.name`` modelopt + ``quant_algo`` (model_arch_config_convertor.py lines
241-283: NVFP4 → modelopt_fp4); ``resolve_kv_cache_dtype_string`` → ``get_kv_cache_quant_algo_string``
(utils/torch_utils.py lines 463-536) maps ``kv_cache_quant_algo`` FP8 to ``fp8_e4m3``. On the genuine
NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4 hf_quant_config.json all three releases return ``fp8_e4m3``.
"""

from __future__ import annotations

import json
import shutil

import pytest

import kvplan

from kvplan.errors import ConfigError, UnsupportedError
from kvplan.model import ServingOptions
from kvplan.model.catalog import catalog_config_path
from kvplan.model.layout import build_model_layout

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B"
FP8_NOTE = ("--kv-cache-dtype auto resolves to fp8_e4m3 from the checkpoint's quantization_config (read from "
            "hf_quant_config.json beside config.json, as vLLM does)")


def _attention(layout):
    return [ls for ls in layout.layers if ls.spec.kind == "full_attention"]


@pytest.mark.parametrize("variant", ["FP8", "NVFP4"])
def test_quantized_nano_has_an_fp8_attention_cache(variant):
    # 6 attention layers x 2 KV heads x 128; fp8_e4m3 pages: 16 x 2 x 128 x 2 (K, V) x 1 byte = 8,192
    # (BF16 sibling: 16,384). The Mamba state is unchanged: float32 ssm from mamba_ssm_cache_dtype.
    q = build_model_layout(f"{NANO}-{variant}")
    bf16 = build_model_layout(f"{NANO}-BF16")
    attn = _attention(q)
    assert [ls.name for ls in attn] == [ls.name for ls in _attention(bf16)] and len(attn) == 6
    assert {(ls.spec.dtype, ls.spec.page_size_bytes) for ls in attn} == {("uint8", 8192)}
    assert {(ls.spec.dtype, ls.spec.page_size_bytes) for ls in _attention(bf16)} == {("bfloat16", 16384)}
    assert FP8_NOTE in q.notes
    assert [ls.spec for ls in q.layers if ls.spec.kind == "mamba"] == [ls.spec for ls in bf16.layers
                                                                      if ls.spec.kind == "mamba"]
    # vLLM's normalised quantization_config: the weights estimate sees the scheme
    quant = q.target.config["quantization_config"]
    assert quant["quant_method"] == {"FP8": "modelopt", "NVFP4": "modelopt_fp4"}[variant]
    # an explicit --kv-cache-dtype wins
    explicit = build_model_layout(f"{NANO}-{variant}", options=ServingOptions(kv_cache_dtype="bfloat16"))
    assert {ls.spec.page_size_bytes for ls in _attention(explicit)} == {16384}


def test_hf_quant_config_beside_a_local_config(tmp_path):
    src = catalog_config_path(f"{NANO}-NVFP4").parent
    shutil.copy(src / "config.json", tmp_path / "config.json")
    assert {ls.spec.dtype for ls in _attention(build_model_layout(str(tmp_path)))} == {"bfloat16"}
    shutil.copy(src / "hf_quant_config.json", tmp_path / "hf_quant_config.json")
    assert {ls.spec.dtype for ls in _attention(build_model_layout(str(tmp_path)))} == {"uint8"}
    # config.json's own quantization_config wins (vLLM reads the sibling only when it has none)
    cfg = json.loads((src / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "modelopt", "quantization": {"quant_algo": "FP8"}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert {ls.spec.dtype for ls in _attention(build_model_layout(str(tmp_path)))} == {"bfloat16"}


def _with_quant(tmp_path, quant: dict) -> str:
    cfg = json.loads(catalog_config_path("meta-llama/Meta-Llama-3.1-8B").read_text())
    cfg["quantization_config"] = quant
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    return str(p)


def test_modelopt_kv_algorithms(tmp_path):
    modelopt = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}}
    # a scheme dict {num_bits 8, type float, dynamic false} is fp8_e4m3 too
    scheme = {**modelopt, "quantization": {"quant_algo": "FP8", "kv_cache_scheme": {
        "num_bits": 8, "type": "float", "dynamic": False}}}
    L = build_model_layout(_with_quant(tmp_path, scheme))
    assert L.layers[0].spec.dtype == "uint8"
    # an unknown algorithm: vLLM warns and keeps auto
    odd = {**modelopt, "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "INT4"}}
    L = build_model_layout(_with_quant(tmp_path, odd))
    assert L.layers[0].spec.dtype == "bfloat16"
    assert ("vLLM warns \"Unknown kv_cache_quant_algo 'INT4' in model config\" and keeps --kv-cache-dtype auto "
            "(the model dtype)") in L.notes
    # an NVFP4 KV cache (0.33.0+): --kv-cache-dtype auto resolves to nvfp4 (packed by the engine's backend:
    # tests/test_kv_dtypes.py sizes it through simulate)
    nvfp4 = {**modelopt, "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4"}}
    L = build_model_layout(_with_quant(tmp_path, nvfp4))
    assert L.layers[0].spec.dtype == "uint8"
    assert "--kv-cache-dtype auto resolves to nvfp4 from the checkpoint's quantization_config" in L.notes
    # vLLM refuses an unknown ModelOpt quant_algo when it builds the model config
    with pytest.raises(ConfigError, match="Unknown ModelOpt quant algo: W4A8"):
        build_model_layout(_with_quant(tmp_path, {**modelopt, "quantization": {"quant_algo": "W4A8"}}))
    # kv_cache_quant_algo outside a ModelOpt config is not read by vLLM's resolver
    L = build_model_layout(_with_quant(tmp_path, {"quant_method": "fp8", "kv_cache_quant_algo": "FP8"}))
    assert L.layers[0].spec.dtype == "bfloat16"


def test_nvfp4_plan_at_40_gib():
    # Mamba page: conv 3 x 6,144 x 2 B = 36,864 + ssm 64 x 64 x 128 x 4 B = 2,097,152 -> 2,134,016 B.
    # fp8 attention: 2 (K, V) x 2 heads x 128 x 1 B = 512 B per token; vLLM raises the attention block to
    # cdiv(2,134,016, 512) = 4,168 -> a multiple of 16: 4,176 tokens, page 4,176 x 512 = 2,138,112 B (the
    # Mamba page is padded by 4,096 B, "0.19%"). BF16: 1,024 B per token -> 2,096 tokens, 2,146,304 B.
    # 23 Mamba + 6 attention layers, group size 6 (1 padding slot): a block = 6 pages = 12,828,672 B;
    # 42,949,672,960 // 12,828,672 = 3,347 blocks (BF16: // 12,877,824 = 3,335). vLLM 0.18.0 and 0.33.0
    # print the same (tests/golden/nemotron-3-nano-nvfp4__40gib__*.json), concurrency 76.07x. 0.34.0 (block
    # 64, so the kernel alignment is 64): cdiv(2,134,016, 64 x 512) x 64 = 4,224 tokens, page 2,162,688 B,
    # a block 12,976,128 B: 3,309 blocks, 75.20x (its golden); BF16 2,112 tokens, the same page and blocks.
    r = kvplan.simulate(f"{NANO}-NVFP4", kv_cache_memory="40GiB", max_model_len=131072, policy="vllm==0.33.0")
    assert [(g["kind"], g["block_size"], g["num_layers"], g["padding_slots"]) for g in r["groups"]] == [
        ("mamba", 4176, 6, 0), ("mamba", 4176, 6, 0), ("mamba", 4176, 6, 0), ("mamba", 4176, 5, 1),
        ("full_attention", 4176, 6, 0)]
    m = r["memory"]
    assert (m["page_size_bytes"], m["bytes_per_block"], m["num_blocks"], m["max_concurrency"]) == (
        2138112, 12828672, 3347, 76.068182)
    assert "Setting attention block size to 4176 tokens to ensure that attention page size is >= mamba page size." \
        in r["logs"]
    b = kvplan.simulate(f"{NANO}-BF16", kv_cache_memory="40GiB", max_model_len=131072, policy="vllm==0.33.0")
    assert (b["memory"]["page_size_bytes"], b["memory"]["num_blocks"]) == (2146304, 3335)
    r = kvplan.simulate(f"{NANO}-NVFP4", kv_cache_memory="40GiB", max_model_len=131072)
    assert {g["block_size"] for g in r["groups"]} == {4224}
    m = r["memory"]
    assert (m["page_size_bytes"], m["bytes_per_block"], m["num_blocks"], m["max_concurrency"]) == (
        2162688, 12976128, 3309, 75.204545)
    b = kvplan.simulate(f"{NANO}-BF16", kv_cache_memory="40GiB", max_model_len=131072)["memory"]
    assert (b["page_size_bytes"], b["num_blocks"]) == (2162688, 3309)


def test_nvfp4_exclusions_keep_attention_and_six_mamba_projections_in_bf16():
    # hf_quant_config.json's quantization.exclude_modules (read by vLLM's ModelOpt config, modelopt.py 0.34.0
    # line 346) names q/k/v/o of all 6 attention blocks and in_proj/out_proj of the 6 Mamba blocks before
    # them, in checkpoint names ("backbone.layers.5.mixer.q_proj"), which NemotronH's hf_to_vllm_mapper turns
    # into "model.layers.5.mixer.q_proj" (nemotron_h.py line 735). Each one matches a weight of the inventory,
    # and those weights stay in bfloat16: the attention bytes equal the BF16 checkpoint's.
    from kvplan.model.inventory import analytic_inventory
    from kvplan.budget.quantization import quantization_of

    layout = build_model_layout(f"{NANO}-NVFP4")
    quant = quantization_of(layout.target.config)
    assert quant.method == "nvfp4" and len(quant.exclude) == 1 + 6 * 4 + 6 * 2 + 23  # lm_head, projections, conv1d
    inv = analytic_inventory(layout.target.config)
    modules = {w.module for w in inv.weights if w.linear}
    linear_excluded = [p for p in quant.exclude if not p.endswith("conv1d") and p != "lm_head"]
    assert len(linear_excluded) == 6 * 4 + 6 * 2 and set(linear_excluded) <= modules
    kept = [w for w in inv.weights if w.linear and not quant.converts(w)]
    assert {w.module for w in kept if w.kind in ("attention", "mixer")} == set(linear_excluded)
    nvfp4 = kvplan.simulate(f"{NANO}-NVFP4", gpu="H200-141GB", max_model_len=131072)["budget"]["weights"]
    bf16 = kvplan.simulate(f"{NANO}-BF16", gpu="H200-141GB", max_model_len=131072)["budget"]["weights"]
    assert nvfp4["bytes_by_kind"]["attention"] == bf16["bytes_by_kind"]["attention"] == 280_756_224
