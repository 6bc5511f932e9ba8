#!/usr/bin/env python3
"""Write the catalog's reconstructed variants (instruct / -it / chat releases of bundled
bases that vLLM's recipes and model cards serve) from their genuine siblings, and their
configs/INDEX.json entries.

A variant is its sibling's config.json with the fields listed in ``changes`` replaced, each
change backed by a cited public fact; nothing else is invented. Run after changing a variant:

    python scripts/catalog_variants.py

Quantized checkpoints whose quantization lives in a separate hf_quant_config.json (the
NVIDIA-Nemotron-3-Nano-30B-A3B FP8 and NVFP4 releases) and the speculators-format EAGLE-3 heads
are written by scripts/catalog_speculators.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
INDEX = CONFIGS / "INDEX.json"

LLAMA_INSTRUCT_EOS = {
    "fields": ["eos_token_id"],
    "fact": "the Llama 3.1 instruct checkpoints stop on <|end_of_text|>, <|eom_id|> and <|eot_id|> "
            "(eos_token_id [128001, 128008, 128009]); nvidia/Llama-3.1-70B-Instruct-FP8's config.json, a "
            "derivative of meta-llama/Llama-3.1-70B-Instruct, carries exactly this list and otherwise the "
            "base's values",
    "cite": "ai-dynamo/aiconfigurator @ 095f58a51c4ca8e61b66ec108d86f223f8d559ce, "
            "aic-core/src/aiconfigurator_core/model_configs/nvidia--Llama-3.1-70B-Instruct-FP8_config.json "
            "(blob from commit 0b077da5e017cb8ceac1ad14e91eb6e26c40207a)",
}
SAME_ARCHITECTURE = "the instruct release is a fine-tune of the base: same architecture, layer count and attention geometry"

def _llama_instruct(size: str, layer_mix: str, fact: str, cite: str) -> dict:
    """Llama-3.1-{size}-Instruct: the genuine base config with the instruct eos_token_id list."""
    model_id, base = f"meta-llama/Llama-3.1-{size}-Instruct", f"meta-llama/Meta-Llama-3.1-{size}"
    return dict(model_id=model_id, sibling=base, changes={"eos_token_id": [128001, 128008, 128009]}, family="llama",
                layer_mix=layer_mix,
                sources=[LLAMA_INSTRUCT_EOS, {"fields": ["every other field"], "fact": f"{SAME_ARCHITECTURE} ({fact})",
                                              "cite": f"{cite}; configs/{base}/config.json (genuine)"}],
                note=f"Reconstructed: {model_id} config.json (gated) not obtained. The base's genuine config with the "
                     "instruct eos_token_id list; KV layout identical to the base.")


VARIANTS = [
    _llama_instruct("8B", "32 full; 8 KV x 128",
                    "vLLM's EAGLE-3 docs serve it with yuhuili/EAGLE3-LLaMA3.1-Instruct-8B and "
                    "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
                    "https://docs.vllm.ai/en/latest/features/speculative_decoding/eagle/"),
    _llama_instruct("70B", "80 full; 8 KV x 128",
                    "the nvidia FP8 derivative's config matches the base in every KV field: 80 layers, 64 heads, "
                    "8 KV heads, hidden 8192", "the aiconfigurator blob above"),
    dict(model_id="Qwen/Qwen3-Next-80B-A3B-Instruct", sibling="Qwen/Qwen3-Next-80B-A3B-Thinking",
         changes={}, family="qwen3-next",
         layer_mix="12 full (every 4th) + 36 linear (Gated DeltaNet); 2 KV x 256",
         sources=[{"fields": ["every field"],
                   "fact": "Instruct and Thinking are the two post-trained releases of Qwen3-Next-80B-A3B with the "
                           "same architecture (transformers' Qwen3NextConfig docstring and model doc); the Instruct "
                           "config's published values seen (full_attention_interval 4, head_dim 256, hidden 2048, "
                           "linear 16 key / 32 value heads x 128, conv kernel 4, max_position_embeddings 262144) "
                           "equal the Thinking config's",
                   "cite": "huggingface/transformers docs/source/en/model_doc/qwen3_next.md; "
                           "https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json (excerpt); "
                           "vLLM recipe https://docs.vllm.ai/projects/recipes/en/latest/Qwen/Qwen3-Next.html"}],
         note="Reconstructed: a byte copy of the genuine Qwen3-Next-80B-A3B-Thinking config; the Instruct file's "
              "non-KV fields (token ids, transformers_version) may differ."),
    dict(model_id="google/gemma-4-26B-A4B-it", sibling="google/gemma-4-26B-A4B",
         changes={}, family="gemma4", layer_mix="25 sliding(1024, 8 KV x 256) + 5 full (2 KV x 512)",
         sources=[{"fields": ["every field"], "fact": SAME_ARCHITECTURE + " (-it is the instruction-tuned "
                   "checkpoint of the same model)",
                   "cite": "configs/google/gemma-4-26B-A4B/config.json (genuine, aiconfigurator HEAD)"}],
         note="Reconstructed: a byte copy of the genuine google/gemma-4-26B-A4B config; the -it file was not obtained."),
    dict(model_id="mistralai/Mixtral-8x7B-Instruct-v0.1", sibling="mistralai/Mixtral-8x7B-v0.1",
         changes={}, family="mixtral", layer_mix="32 full (sliding_window null); 8 KV x 128",
         sources=[{"fields": ["every field"], "fact": SAME_ARCHITECTURE,
                   "cite": "configs/mistralai/Mixtral-8x7B-v0.1/config.json (genuine, aiconfigurator HEAD)"}],
         note="Reconstructed: a byte copy of the genuine Mixtral-8x7B-v0.1 config; the Instruct file was not obtained."),
]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main() -> None:
    index = json.loads(INDEX.read_text())
    by_id = {e["model_id"]: e for e in index}
    for v in VARIANTS:
        sibling_path = CONFIGS / v["sibling"] / "config.json"
        raw = sibling_path.read_bytes()
        if v["changes"]:
            config = json.loads(raw)
            config.update(v["changes"])
            raw = (json.dumps(config, indent=2) + "\n").encode()
        out = CONFIGS / v["model_id"] / "config.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(raw)
        entry = {
            "model_id": v["model_id"], "file": f"{v['model_id']}/config.json", "provenance": "reconstructed",
            "family": v["family"], "role": "target", "layer_mix": v["layer_mix"], "sha256": _sha(raw),
            "bytes": len(raw), "confidence": "high (KV geometry: the sibling's genuine values)",
            "reconstructed_from": v["sibling"], "sources": v["sources"], "note": v["note"],
        }
        if v["model_id"] in by_id:
            index[index.index(by_id[v["model_id"]])] = entry
        else:
            index.append(entry)
        print(f"wrote {out.relative_to(CONFIGS.parent)} ({len(raw)} bytes, from {v['sibling']})")
    INDEX.write_text(json.dumps(index, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
