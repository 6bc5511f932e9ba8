#!/usr/bin/env python3
"""Write the catalog's speculators-format EAGLE-3 heads and the quantized
NVIDIA-Nemotron-3-Nano-30B-A3B checkpoints, with their configs/INDEX.json entries.

- ``RedHatAI/*-speculator.eagle3``: the checkpoints vLLM's docs and recipes serve as EAGLE-3
  drafters, in the speculators format (``speculators_model_type``, ``transformer_layer_config``,
  ``speculators_config``). Their config.json files were not obtainable; each is written from cited
  public facts only (``sources``), the fields that are not public listed in ``left_out``.
- ``nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4``: genuine, config.json and hf_quant_config.json
  copied byte for byte from the ai-dynamo/aiconfigurator git blobs (themselves copies of the HF files).
- ``nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8``: reconstructed from the NVFP4 sibling (the ModelOpt
  export of the same BF16 source): the same config.json, an hf_quant_config.json whose quant_algo is FP8.

Run after changing an entry (``--aiconfigurator`` points at a clone of ai-dynamo/aiconfigurator; the
genuine files are only re-copied when it is given)::

    python scripts/catalog_speculators.py [--aiconfigurator PATH]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
INDEX = CONFIGS / "INDEX.json"

VLLM_SPECULATORS = ("vllm 0.34.0 vllm/transformers_utils/configs/speculators/base.py lines 47-137 and algos.py "
                    "lines 15-50 (how vLLM reads the format)")
SPECULATORS_REPO = "vllm-project/speculators@c05b95b303f7d4f21e8d7624e0ffa1c2d9b4d73b"
FORMAT = {
    "fields": ["architectures", "speculators_model_type", "speculators_config.algorithm",
               "speculators_config.default_proposal_method", "speculators_config.proposal_methods",
               "draft_vocab_size", "no top-level model_type"],
    "fact": "speculators EAGLE-3 checkpoints: architectures ['Eagle3Speculator'], speculators_model_type eagle3, "
            "no top-level model_type (Eagle3SpeculatorConfig.to_dict strips it), a greedy proposal method with "
            "speculative_tokens 3 (the default the speculators converter writes; vLLM's recipe and the "
            "speculators blog example use 3), draft_vocab_size 32000 (Eagle3SpeculatorConfig default)",
    "cite": f"{SPECULATORS_REPO}:src/speculators/models/eagle3/config.py (Eagle3SpeculatorConfig fields), "
            "src/speculators/config.py (to_dict drops model_type), src/speculators/convert/eagle/eagle3_converter.py "
            "(GreedyTokenProposalConfig speculative_tokens=3); vllm-project/recipes@8959cf64:"
            "models/meta-llama/Llama-3.1-8B-Instruct.yaml line 39 (num_speculative_tokens 3)",
}
LAYER_FROM_VERIFIER = (
    "speculators trains an EAGLE-3 head with transformer_layer_config = the verifier's config "
    "(Eagle3DraftModel.from_training_args) and one decoder layer, so the head's attention geometry is the verifier's"
)


def _eagle3(verifier_arch: str, verifier: str, layer: dict, *, draft_vocab: int = 32000, tokens: int = 3,
            extra: dict | None = None, architectures: tuple[str, ...] = ("Eagle3Speculator",)) -> dict:
    cfg = {
        "architectures": list(architectures),
        "draft_vocab_size": draft_vocab,
        **(extra or {}),
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": tokens}],
            "verifier": {"architectures": [verifier_arch], "name_or_path": verifier},
        },
        "speculators_model_type": "eagle3",
        "transformer_layer_config": layer,
    }
    return cfg


LAYER_KEYS = ("hidden_act", "hidden_size", "intermediate_size", "max_position_embeddings", "num_attention_heads",
              "num_key_value_heads", "rms_norm_eps", "rope_scaling", "rope_theta", "vocab_size")


def _layer_from(verifier: str) -> dict:
    """The draft layer config speculators trains for ``verifier``: the verifier's config (its bundled genuine
    values, the ones above that are set), one llama-type decoder layer, head_dim written out."""
    cfg = json.loads((CONFIGS / verifier / "config.json").read_text())
    layer = {k: cfg[k] for k in LAYER_KEYS if cfg.get(k) is not None}
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return dict(sorted({**layer, "head_dim": head_dim, "model_type": "llama", "num_hidden_layers": 1}.items()))


def _entry(verifier: str, verifier_arch: str, sources: list[dict], left_out: list[str], *, layer: dict | None = None,
           model_id: str | None = None, **eagle3) -> dict:
    """A speculator entry for ``verifier`` (``RedHatAI/<verifier name>-speculator.eagle3``), its layer config
    the verifier's unless given, its layer mix and note derived from the layer."""
    model_id = model_id or f"RedHatAI/{verifier.split('/')[1]}-speculator.eagle3"
    layer = layer or _layer_from(verifier)
    geometry = f"{layer['num_key_value_heads']} KV x {layer['head_dim']}"
    return dict(model_id=model_id, target=verifier, config=_eagle3(verifier_arch, verifier, layer, **eagle3),
                layer_mix=f"1 full; {geometry} (speculators format; verifier {verifier})",
                sources=sources, left_out=left_out,
                note=f"Reconstructed: {model_id} config.json not obtained; written from the cited public facts in "
                     f"the speculators format. KV: 1 full layer, {geometry}, which joins {verifier}'s full layers.")


NOT_PUBLIC = ("not public for this checkpoint; none changes the KV cache (vLLM runs the drafter in the target's "
              "dtype with the target's cache dtype)")

SPECULATORS = [
    _entry("meta-llama/Llama-3.1-8B-Instruct", "LlamaForCausalLM", [
        FORMAT,
        {"fields": ["speculators_config.verifier"],
         "fact": "verifier meta-llama/Llama-3.1-8B-Instruct (LlamaForCausalLM); vLLM's EAGLE-3 example and its "
                 "Llama-3.1-8B-Instruct recipe serve this checkpoint as that model's drafter",
         "cite": "vllm-project/vllm docs/features/speculative_decoding/eagle.md (EAGLE-3 example); "
                 "vllm-project/recipes@8959cf64:models/meta-llama/Llama-3.1-8B-Instruct.yaml lines 39, 227-232; "
                 f"{SPECULATORS_REPO}:README.md line 80"},
        {"fields": ["transformer_layer_config"],
         "fact": f"{LAYER_FROM_VERIFIER}: Llama-3.1-8B's 32 heads, 8 KV heads, hidden 4096 (head_dim 128), "
                 "intermediate 14336, vocab 128256, max_position_embeddings 131072, llama3 RoPE; "
                 "num_hidden_layers 1 (an EAGLE-3 head, as the EAGLE authors' Llama-3.1-8B head)",
         "cite": f"{SPECULATORS_REPO}:src/speculators/models/eagle3/core.py line 402 "
                 "(transformer_layer_config=verifier_config); configs/meta-llama/Meta-Llama-3.1-8B/config.json "
                 "(genuine); configs/yuhuili/EAGLE3-LLaMA3.1-Instruct-8B/config.json (genuine, 1 layer, 8 KV)"},
    ], [f"norm_before_residual, target_hidden_size, eagle_aux_hidden_state_layer_ids, torch_dtype, "
        f"speculators_version, verifier_accept_k/accept_tolerance: {NOT_PUBLIC}"]),
    _entry("Qwen/Qwen3-8B", "Qwen3ForCausalLM", [
        FORMAT,
        {"fields": ["speculators_config.verifier"],
         "fact": "verifier Qwen/Qwen3-8B; `vllm serve RedHatAI/Qwen3-8B-speculator.eagle3` is the speculators "
                 "quick start (the verifier is served, this checkpoint drafts); a published-config fixture "
                 "records architectures ['Eagle3Speculator'] and no eagle_aux_hidden_state_layer_ids",
         "cite": f"{SPECULATORS_REPO}:docs/user_guide/getting_started.md line 12, "
                 "docs/user_guide/algorithms/eagle3.md line 26; public code index excerpt 62484527907 "
                 "('The published RedHatAI speculators as they actually sit in the HF cache')"},
        {"fields": ["transformer_layer_config", "norm_before_residual"],
         "fact": "RedHat's Qwen3 EAGLE-3 speculators carry a llama-type layer config with the Qwen3 verifier's "
                 "geometry (a Qwen/Qwen3-32B speculator fixture: model_type llama, 1 layer, head_dim 128, "
                 "8 KV heads, rope_theta 1e6, vocab 151936, draft_vocab_size 32000, norm_before_residual true); "
                 "the Qwen3-8B values (32 heads, 8 KV, head_dim 128, hidden 4096, intermediate 12288, "
                 "max_position_embeddings 40960, rms_norm_eps 1e-6) are the verifier's",
         "cite": "sgl-project/sglang CPU test TestEagle3SpeculatorConfigLoading (public code index excerpt "
                 "55943594487); configs/Qwen/Qwen3-8B/config.json (genuine); "
                 f"{SPECULATORS_REPO}:src/speculators/models/eagle3/core.py line 402"},
    ], [f"target_hidden_size, torch_dtype, speculators_version: {NOT_PUBLIC}. Whether the layer's model_type is "
        "llama or qwen3 is not verified for this exact checkpoint: vLLM 0.33.0+ builds Eagle3LlamaForCausalLM or "
        "Eagle3Qwen3ForCausalLM from it, both a full-attention layer with the same 8 KV x 128 cache"],
        extra={"norm_before_residual": True}),
    _entry("Qwen/Qwen3-32B", "Qwen3ForCausalLM", [
        FORMAT,
        {"fields": ["speculators_config.verifier", "transformer_layer_config", "norm_before_residual"],
         "fact": "a public fixture of a Qwen/Qwen3-32B Eagle3Speculator config (speculators_version 1): "
                 "verifier Qwen/Qwen3-32B (Qwen3ForCausalLM), draft_vocab_size 32000, norm_before_residual "
                 "true, a llama-type layer with hidden 5120, intermediate 25600, 64 heads, 8 KV heads, "
                 "head_dim 128, max_position_embeddings 40960, rope_theta 1e6, rms_norm_eps 1e-6, vocab "
                 "151936, 1 layer: every value the bundled Qwen3-32B config's (test_catalog_files checks it)",
         "cite": "sgl-project/sglang CPU test TestEagle3SpeculatorConfigLoading (public code index excerpt "
                 f"55943594487); configs/Qwen/Qwen3-32B/config.json (genuine); {SPECULATORS_REPO}:README.md "
                 "line 101"},
    ], [f"target_hidden_size, torch_dtype, speculators_version, the fixture's LlamaConfig defaults "
        f"(attention_bias, initializer_range, pretraining_tp ...): {NOT_PUBLIC}"],
        extra={"norm_before_residual": True}),
    _entry("meta-llama/Llama-3.3-70B-Instruct", "LlamaForCausalLM", [
        FORMAT,
        {"fields": ["speculators_config.verifier", "transformer_layer_config"],
         "fact": f"an EAGLE-3 speculator for meta-llama/Llama-3.3-70B-Instruct; {LAYER_FROM_VERIFIER}: "
                 "64 heads, 8 KV heads, hidden 8192 (head_dim 128), intermediate 28672, vocab 128256, "
                 "max_position_embeddings 131072, llama3 RoPE, one layer",
         "cite": f"{SPECULATORS_REPO}:README.md line 85, src/speculators/models/eagle3/core.py line 402; "
                 "configs/meta-llama/Llama-3.3-70B-Instruct/config.json (genuine)"},
    ], [f"norm_before_residual, target_hidden_size, eagle_aux_hidden_state_layer_ids, torch_dtype, "
        f"speculators_version: {NOT_PUBLIC}"]),
    _entry("openai/gpt-oss-20b", "GptOssForCausalLM", [
        {**FORMAT, "fields": [f for f in FORMAT["fields"] if f not in ("architectures", "draft_vocab_size")]},
        {"fields": ["architectures", "draft_vocab_size", "norm_before_fc", "norm_before_residual",
                    "transformer_layer_config", "eagle_aux_hidden_state_layer_ids", "speculators_config.verifier"],
         "fact": "two independent public fixtures describe this checkpoint: architectures ['Eagle3DraftModel'], "
                 "draft_vocab_size 64000, norm_before_fc true, norm_before_residual true, a llama layer with "
                 "hidden 2880, 1 layer, 64 heads, 8 KV heads, head_dim 64, intermediate 2880, vocab 201088, "
                 "rms_norm_eps 1e-5, rope_theta 10000; eagle_aux_hidden_state_layer_ids null; verifier "
                 "openai/gpt-oss-20b. The related nm-testing gpt-oss-20b EAGLE-3 test checkpoint agrees "
                 "(1 layer, hidden 2880, 64 heads, 8 KV, head_dim 64)",
         "cite": "public code index excerpts 70897692798 (a Rust EAGLE-3 mapper test citing "
                 "RedHatAI/gpt-oss-20b-speculator.eagle3) and 62484527907; shared/reference/configs-catalog.md "
                 "line 69; the speculators docs name it (docs/user_guide/algorithms/eagle3.md line 28)"},
    ], ["speculative_tokens: not public for this checkpoint (3, the speculators default, is written; it matters "
        f"only when the checkpoint itself is served); rope scaling, max_position_embeddings, target_hidden_size, "
        f"torch_dtype: {NOT_PUBLIC}"],
        layer={"head_dim": 64, "hidden_size": 2880, "intermediate_size": 2880, "model_type": "llama",
               "num_attention_heads": 64, "num_hidden_layers": 1, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
               "rope_theta": 10000.0, "vocab_size": 201088}, draft_vocab=64000,
        extra={"eagle_aux_hidden_state_layer_ids": None, "norm_before_fc": True, "norm_before_residual": True},
        architectures=("Eagle3DraftModel",)),
]

AIC = "ai-dynamo/aiconfigurator"
AIC_COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
AIC_DIR = "aic-core/src/aiconfigurator_core/model_configs"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B"
NANO_MIX = "6 attention (full, 2 KV x 128) + 23 mamba2 (+ 23 MoE blocks without cache), 52 blocks"
NVFP4_FILES = {"config.json": ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4_config.json",
                               "6b2510909bcc6a25c83b9c54092c011d6dcc31f4"),
               "hf_quant_config.json": ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4_hf_quant_config.json",
                                        "8fe27a960d79870a052e8cd994c62400521add3f")}


def git_blob_sha1(data: bytes) -> str:
    """The git blob id of ``data`` (what ``git hash-object`` prints): upstream files are checked by it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _write(rel: str, data: bytes) -> None:
    out = CONFIGS / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    print(f"wrote configs/{rel} ({len(data)} bytes)")


def _json_bytes(obj: dict) -> bytes:
    return (json.dumps(obj, indent=2) + "\n").encode()


def nvfp4_entries(aic: Path | None) -> list[dict]:
    model = f"{NANO}-NVFP4"
    files = {}
    for name, (upstream, blob) in NVFP4_FILES.items():
        if aic is not None:
            data = subprocess.run(["git", "-C", str(aic), "show", f"{AIC_COMMIT}:{AIC_DIR}/{upstream}"],
                                  check=True, capture_output=True).stdout
            assert git_blob_sha1(data) == blob, f"{upstream}: blob {git_blob_sha1(data)} != {blob}"
            _write(f"{model}/{name}", data)
        files[name] = (CONFIGS / model / name).read_bytes()
    genuine = {
        "model_id": model, "file": f"{model}/config.json", "source_repo": AIC, "commit": AIC_COMMIT,
        "path": f"{AIC_DIR}/{NVFP4_FILES['config.json'][0]}", "git_blob": NVFP4_FILES["config.json"][1],
        "sha256": _sha(files["config.json"]), "bytes": len(files["config.json"]),
        "fidelity": "byte-exact copy of the git blob (the blob itself is a copy of the HF file)",
        "confidence": "medium-high",
        "note": "ModelOpt 0.29.0 export: config.json carries no quantization_config (its values equal the BF16 "
                "sibling's); the quantization (NVFP4 weights, FP8 KV cache) is in hf_quant_config.json, which vLLM "
                "reads beside config.json",
        "url": None, "provenance": "genuine", "family": "nemotron-h", "role": "target", "layer_mix": NANO_MIX,
        "hf_quant_config": {
            "file": f"{model}/hf_quant_config.json", "path": f"{AIC_DIR}/{NVFP4_FILES['hf_quant_config.json'][0]}",
            "git_blob": NVFP4_FILES["hf_quant_config.json"][1], "sha256": _sha(files["hf_quant_config.json"]),
            "bytes": len(files["hf_quant_config.json"]),
        },
    }
    fp8 = f"{NANO}-FP8"
    quant = json.loads(files["hf_quant_config.json"])
    quant["quantization"]["quant_algo"] = "FP8"
    del quant["quantization"]["group_size"]
    _write(f"{fp8}/config.json", files["config.json"])
    qbytes = _json_bytes(quant)
    _write(f"{fp8}/hf_quant_config.json", qbytes)
    reconstructed = {
        "model_id": fp8, "file": f"{fp8}/config.json", "provenance": "reconstructed", "family": "nemotron-h",
        "role": "target", "layer_mix": NANO_MIX, "sha256": _sha(files["config.json"]),
        "bytes": len(files["config.json"]), "confidence": "high (config.json, KV geometry); medium (hf_quant_config)",
        "reconstructed_from": model,
        "hf_quant_config": {"file": f"{fp8}/hf_quant_config.json", "sha256": _sha(qbytes), "bytes": len(qbytes),
                            "changed": ["quantization.quant_algo", "quantization.group_size"]},
        "sources": [
            {"fields": ["every config.json field"],
             "fact": "the FP8 and NVFP4 checkpoints are ModelOpt exports of the same BF16 source; ModelOpt 0.29 keeps "
                     "config.json as the source's (the genuine NVFP4 config.json has exactly the BF16 config's values) "
                     "and writes the quantization to hf_quant_config.json",
             "cite": f"{AIC}@{AIC_COMMIT}:{AIC_DIR}/{NVFP4_FILES['config.json'][0]} and "
                     f"nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16_config.json; TensorRT-LLM Nemotron Nano V3 doc "
                     "('ModelOpt was employed to derive FP8 and NVFP4 checkpoints from the source checkpoint')"},
            {"fields": ["hf_quant_config.json quantization.quant_algo", "hf_quant_config.json quantization.group_size"],
             "fact": "FP8 weights (quant_algo FP8; group_size is NVFP4's block of 16 and is dropped)",
             "cite": "vllm-project/recipes@8959cf64:models/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.yaml lines "
                     "55-59 (variant fp8: 'FP8 weights + FP8 KV cache')"},
            {"fields": ["hf_quant_config.json quantization.kv_cache_quant_algo"],
             "fact": "FP8 KV cache (kept from the NVFP4 sibling, which has kv_cache_quant_algo FP8)",
             "cite": "the recipe line above; the genuine NVFP4 hf_quant_config.json"},
        ],
        "left_out": ["the FP8 checkpoint's exclude_modules list and producer version are taken from the NVFP4 sibling "
                     "unverified; neither changes the KV cache"],
        "note": "Reconstructed: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8 files not obtained. config.json is the "
                "genuine NVFP4 sibling's (byte copy); hf_quant_config.json differs from the sibling's only in "
                "quant_algo FP8 (group_size dropped).",
    }
    return [genuine, reconstructed]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aiconfigurator", type=Path, help="a clone of ai-dynamo/aiconfigurator (re-copy genuine files)")
    args = ap.parse_args()
    index = json.loads(INDEX.read_text())
    entries = []
    for s in SPECULATORS:
        data = _json_bytes(s["config"])
        _write(f"{s['model_id']}/config.json", data)
        entries.append({
            "model_id": s["model_id"], "file": f"{s['model_id']}/config.json", "provenance": "reconstructed",
            "family": "eagle3-drafter", "role": "drafter", "target": s["target"], "layer_mix": s["layer_mix"],
            "sha256": _sha(data), "bytes": len(data),
            "confidence": "medium (format and KV geometry); low for non-KV fields",
            "sources": s["sources"] + [{"fields": ["(reading)"], "fact": "how vLLM turns the format into a draft "
                                        "config and a speculative config", "cite": VLLM_SPECULATORS}],
            "left_out": s["left_out"], "note": s["note"],
        })
    entries += nvfp4_entries(args.aiconfigurator)
    by_id = {e["model_id"]: i for i, e in enumerate(index)}
    for e in entries:
        if e["model_id"] in by_id:
            index[by_id[e["model_id"]]] = e
        else:
            index.append(e)
    INDEX.write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
