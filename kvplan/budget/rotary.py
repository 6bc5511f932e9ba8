"""The rotary embedding's cos/sin cache a text decoder holds on every rank: part of vLLM's "Model loading took".

vLLM builds each attention layer's rotary embedding through ``get_rope`` (model_executor/layers/rotary_embedding/
__init__.py, 0.19.0 lines 29-340), which keeps one instance per distinct key (head size, rotary dim, max position,
RoPE parameters, dtype: ``_ROPE_DICT``), so a model holds one table per distinct RoPE setting, not one per layer.
``RotaryEmbedding.__init__`` computes the table and registers it as the non-persistent buffer ``cos_sin_cache``
(``[rows, rotary_dim]``: cos and sin halves side by side), cast to the model dtype (``cache.to(dtype)``, base.py
0.19.0 lines 58-63; the same lines from 0.10.1 to 0.34.0). The model is built under ``with target_device:``
(model_loader/base_loader.py 0.19.0 ``load_model``), so the buffer is allocated on the card, inside the
``DeviceMemoryProfiler`` block whose difference is logged as "Model loading took". It is not TP-split: every rank
holds it whole.

The rows each RoPE type computes (0.19.0):

* ``default``: ``max_position_embeddings`` (base.py ``_compute_cos_sin_cache``: ``arange(max_position_embeddings)``);
  with ``mrope_section`` (``MRotaryEmbedding``) 4 × that (mrope.py line 238, ``cache_max_position_num =
  max_position_embeddings * 4``; 0.32 made the factor a parameter some models set, mrope.py 0.34.0 line 350: not
  derived there);
* ``llama3``: ``max_position_embeddings`` (llama3_rope.py: the base table, other frequencies);
* ``linear``: ``max_position_embeddings × factor`` (linear_scaling_rope.py lines 86-90);
* ``dynamic`` with ``factor``: ``max_position_embeddings × factor`` (dynamic_ntk_scaling_rope.py line 56);
* ``yarn`` (no mrope): ``original_max_position_embeddings × factor`` (yarn_scaling_rope.py line 78; get_rope passes
  the original length);
* ``proportional`` (Gemma 4's full-attention layers): ``max_position_embeddings`` rows over the whole head, whatever
  the partial rotary factor: ``Gemma4RotaryEmbedding`` hands the base class ``head_size`` as its rotary dim and pads
  the frequencies past the factor with zeros (rotary_embedding/gemma4_rope.py, 0.19.0 to 0.34.0 lines 30-55). Run on
  0.29.0's build of gemma-4-26B-A4B-it (``--weights-all``, tests/golden/profile_terms/weights/0.29.0.json): a
  ``cos_sin_cache`` [262144, 512] bf16 beside the sliding layers' [262144, 256].

A layer type's head size is its own: Gemma 4's full-attention layers take ``global_head_dim`` (the
``gemma4_layer_config`` of transformers_utils/configs/gemma4.py, 0.29.0 lines 27-28), the others ``head_dim``.

The rotary dim is ``head_dim × partial_rotary_factor`` (get_rope's ``int(head_size * partial_rotary_factor)``).
Gemma 3's sliding-window layers use their own table: ``rope_type "default"`` with ``rope_local_base_freq`` when
the config's RoPE parameters are not per layer type (models/gemma3.py 0.19.0 lines 168-179), the same rows.

Other RoPE types (DeepSeek's MLA scaling, which keeps its table in float32 from 0.24; longrope's two tables;
dual-chunk; NTK; Fourier), attentions with their own RoPE width (``qk_rope_head_dim``: MLA, DeepSeek-V4) and model
files that set the width their own way (``OTHER_WIDTH_KEYS``) are not derived: ``rotary_cache`` says which, and
counts nothing for them.

Checked against the release's own build (``scripts/golden/profile_terms.py --weights-all``,
``tests/golden/profile_terms/weights/0.19.0.json``): Gemma 3 4B/12B, Llama-4-Scout (TP 1 and 4), Qwen3.5-27B (TP 1
and 4): the text decoder's tables are the buffers' bytes to the byte, less the towers' own small tables and
position ids (under 1 MiB, not counted).
"""

from __future__ import annotations

from dataclasses import dataclass

# config keys of model files that pass get_rope a rotary width of their own (GPT-NeoX's rotary_pct, ChatGLM's
# rotary_emb_fraction, MiniMax's rotary_dim): not derived
OTHER_WIDTH_KEYS = ("rotary_pct", "rotary_emb_fraction", "rotary_dim")
# Model classes that build their table in float32 whatever the model dtype: gpt-oss's attention calls
# ``get_rope(..., dtype=torch.float32)`` (models/gpt_oss.py 0.11.0 line 60, 0.19.0 line 85, 0.34.0 line 114;
# tests/golden/quant_weights/models/0.19.0/: ``cos_sin_cache`` [131072, 64] float32 on every rank at TP 1, 2, 4).
FLOAT32_TABLES = ("GptOssForCausalLM",)


def table_dtype_bytes(config: dict, model_dtype_bytes: int) -> int:
    """The bytes per element of ``config``'s rotary tables: 4 for a model class that builds them in float32
    (``FLOAT32_TABLES``), else the model dtype's."""
    archs = config.get("architectures") or []
    return 4 if isinstance(archs, list) and archs and archs[0] in FLOAT32_TABLES else model_dtype_bytes


@dataclass(frozen=True)
class RotaryCache:
    bytes: int  # every table, one rank
    tables: tuple[tuple[int, int], ...]  # (rows, rotary_dim) of each distinct table
    not_derived: str = ""  # a RoPE type whose table is not counted, and why


def _rope_sets(cfg: dict) -> list[tuple[str, dict]]:
    """The RoPE parameter sets the decoder's layers use, each with the layer type it is for ("" for every layer) and
    with ``rope_theta`` where the config gives it."""
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    theta = cfg.get("rope_theta")
    if isinstance(rope, dict) and rope and all(isinstance(v, dict) for v in rope.values()):
        return [(str(k), dict(v)) for k, v in rope.items()]  # transformers 5: one set per layer type
    sets = [("", {**({"rope_theta": theta} if theta is not None else {}), **(rope if isinstance(rope, dict) else {})})]
    local = cfg.get("rope_local_base_freq")
    if local is not None and "sliding_attention" in (cfg.get("layer_types") or ()) \
            and str(cfg.get("model_type", "")).startswith("gemma3"):
        sets.append(("sliding_attention", {"rope_type": "default", "rope_theta": local}))  # gemma3.py: its own table
    return sets


def _rows(rp: dict, max_pos: int, release_key: tuple) -> int | None:
    kind = rp.get("rope_type", rp.get("type", "default"))
    factor = rp.get("factor")
    if kind in ("default", "proportional"):
        if kind == "proportional":
            return max_pos
        if "mrope_section" in rp:
            return max_pos * 4 if release_key < (0, 32) else None
        return max_pos
    if kind == "llama3":
        return max_pos
    if kind in ("linear", "dynamic") and isinstance(factor, (int, float)) and "alpha" not in rp:
        return int(max_pos * factor)
    if kind == "yarn" and "mrope_section" not in rp and isinstance(factor, (int, float)):
        original = rp.get("original_max_position_embeddings")
        return int(original * factor) if isinstance(original, int) else None
    return None


def rotary_cache(cfg: dict, dtype_bytes: int, release_key: tuple = (0, 19)) -> RotaryCache:
    """The cos/sin tables of the text decoder ``cfg`` (its raw config, the text part of a multimodal one) on one
    rank, at the model dtype's ``dtype_bytes``. A config with no RoPE parameters (ALiBi, learned positions, no
    attention) or an MLA decoder (``kv_lora_rank``) counts nothing."""
    if cfg.get("kv_lora_rank") or cfg.get("qk_rope_head_dim"):
        return RotaryCache(0, (), "the rotary table of an attention with its own RoPE width (qk_rope_head_dim: MLA, "
                                  "DeepSeek-V4) is not counted")
    if any(cfg.get(k) is not None for k in OTHER_WIDTH_KEYS):
        return RotaryCache(0, (), "the rotary table of a model that sets its rotary width its own way ("
                                  + ", ".join(k for k in OTHER_WIDTH_KEYS if cfg.get(k) is not None)
                                  + ") is not counted")
    has_rope = any(cfg.get(k) is not None for k in ("rope_parameters", "rope_scaling", "rope_theta"))
    max_pos = cfg.get("max_position_embeddings")
    if not has_rope or not isinstance(max_pos, int):
        return RotaryCache(0, ())
    heads = cfg.get("num_attention_heads")
    head = cfg.get("head_dim") or (cfg["hidden_size"] // heads if heads and cfg.get("hidden_size") else None)
    if not isinstance(head, int):
        return RotaryCache(0, ())
    tables: dict[tuple, tuple[int, int]] = {}
    missing = []
    for layer_type, rp in _rope_sets(cfg):
        own = cfg.get("global_head_dim") if layer_type == "full_attention" else None
        size = own if isinstance(own, int) else head
        partial = rp.get("partial_rotary_factor", cfg.get("partial_rotary_factor")) or 1.0
        proportional = rp.get("rope_type", rp.get("type")) == "proportional"
        dim = size if proportional else int(size * partial)
        rows = _rows(rp, max_pos, release_key)
        if rows is None:
            missing.append(str(rp.get("rope_type", rp.get("type", "default"))))
            continue
        key = (dim, rows, tuple(sorted((k, str(v)) for k, v in rp.items())))
        tables[key] = (rows, dim)
    why = f"RoPE type {', '.join(sorted(set(missing)))}: its rotary table is not counted" if missing else ""
    return RotaryCache(sum(r * d for r, d in tables.values()) * dtype_bytes, tuple(tables.values()), why)
