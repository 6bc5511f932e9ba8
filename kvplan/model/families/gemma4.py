"""Gemma 4 (vLLM ``gemma4.py``, ``gemma4_mm.py``): sliding and global layers of different head sizes, KV
sharing, per-layer embeddings, the optional MoE block and the vision tower."""

from __future__ import annotations

from kvplan.model.families.base import (
    FULL, SLIDING, Context, FamilyResult, attn_spec, check_attention_heads, kv_heads_per_rank, layer_types,
    model_wide_window, n_layers, window_value,
)
from kvplan.model.families.gemma import gemma_layers
from kvplan.model.families.record import Family
from kvplan.model.families.weights import Builder, WeightView
from kvplan.model.hfconfig import HFView


# the multimodal wrappers whose decoder vLLM builds under ``language_model``
LANGUAGE_MODEL_ARCHS = frozenset(("Gemma4ForConditionalGeneration",))


def head_sizes(view: HFView) -> tuple[int, int]:
    """The sliding and the full layers' head sizes as ``build_gemma4`` reads them (``head_dim``, default 256;
    ``global_head_dim``, default 512): what vLLM's ``Gemma4Config`` compares to pick the attention backend."""
    return view.int("head_dim", 256), view.check_int("global_head_dim", view.raw.get("global_head_dim", 512))


def build_gemma4(view: HFView, ctx: Context) -> FamilyResult:
    """Gemma 4 (reference §12.7): sliding layers use ``head_dim``/``num_key_value_heads`` and
    ``sliding_window`` (default 512); full layers use ``global_head_dim`` (default 512) and,
    only with ``attention_k_eq_v``, ``num_global_key_value_heads``; K and V are both cached."""
    n = n_layers(view)
    check_attention_heads(view, ctx, view.int("num_attention_heads"))
    total_kv = view.int("num_key_value_heads")
    kv_sw = kv_heads_per_rank(view, ctx, total_kv)
    # transformers pops global_head_dim and num_global_key_value_heads into per_layer_config, so read them raw.
    hd, g_hd = head_sizes(view)
    g_kv_total = total_kv
    g_key = "num_key_value_heads"
    if view.get("attention_k_eq_v", False) and view.raw.get("num_global_key_value_heads") is not None:
        g_kv_total = view.check_int("num_global_key_value_heads", view.raw["num_global_key_value_heads"])
        g_key = "num_global_key_value_heads"
    kv_full = kv_heads_per_rank(view, ctx, g_kv_total, g_key)
    lt = layer_types(view, n, {SLIDING, FULL}) or [SLIDING if (i + 1) % 6 else FULL for i in range(n)]
    w = None if ctx.disable_sliding_window else window_value(view)
    if w is None and not ctx.disable_sliding_window and "sliding_window" not in view.raw:
        w = 512
    layers, shared = gemma_layers(
        view, ctx, n,
        lambda i: attn_spec(ctx, num_kv_heads=kv_sw, head_size=hd, window=w) if lt[i] == SLIDING
        else attn_spec(ctx, num_kv_heads=kv_full, head_size=g_hd),
        LANGUAGE_MODEL_ARCHS,
    )
    n_sw = sum(1 for t in lt[:n] if t == SLIDING)
    ctx.notes.append(
        f"gemma4: {n_sw} sliding ({kv_sw} KV x {hd}, window {w}) + {n - n_sw} full "
        f"({kv_full} KV x global_head_dim {g_hd}, from {g_key})"
    )
    return FamilyResult(layers, shared, model_window=model_wide_window(view, ctx), num_hidden_layers=n)


def gemma4(cfg: WeightView, b: Builder) -> None:
    """Gemma 4 text decoder (transformers ``modeling_gemma4``): sliding layers use
    ``head_dim``/``num_key_value_heads``, global layers ``global_head_dim``/
    ``num_global_key_value_heads`` and, with ``attention_k_eq_v``, no ``v_proj``; KV-shared
    layers have no k/v; MoE layers add a router and experts beside the dense MLP; per-layer
    embeddings (PLE) when ``hidden_size_per_layer_input``."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    raw = cfg.raw
    hd_s = int(raw.get("head_dim") or cfg.head_dim())
    kv_s = int(raw.get("num_key_value_heads") or heads)
    hd_g = int(raw.get("global_head_dim") or hd_s)
    kv_g = int(raw.get("num_global_key_value_heads") or kv_s)
    k_eq_v = bool(raw.get("attention_k_eq_v", False))
    bias = bool(raw.get("attention_bias", False))
    types = cfg.layer_types() or ["full_attention"] * n
    shared = int(raw.get("num_kv_shared_layers") or 0)
    first_shared = n - shared
    ple = int(raw.get("hidden_size_per_layer_input") or 0)
    moe = bool(raw.get("enable_moe_block", False))
    inter = cfg.int("intermediate_size")
    double_wide = bool(raw.get("use_double_wide_mlp", False))
    b.embed("model.embed_tokens.weight", V, H)
    if ple:
        vp = int(raw.get("vocab_size_per_layer_input") or V)
        b.add("model.embed_tokens_per_layer.weight", "embedding", (vp, n * ple), None, vocab=True, stage="first")
        b.linear("model.per_layer_model_projection", "other", n * ple, H, None, quantizable=False)
        b.norm("model.per_layer_projection_norm", ple, None, stage="first")
    for i in range(n):
        p = f"model.layers.{i}"
        sliding = types[i] == "sliding_attention"
        hd, kv = (hd_s, kv_s) if sliding else (hd_g, kv_g)
        kv_shared = i >= first_shared
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=bias, o_bias=bias,
                    has_v=sliding or not k_eq_v, has_kv=not kv_shared)
        b.norm(f"{p}.self_attn.q_norm", hd, i)
        if not kv_shared:
            b.norm(f"{p}.self_attn.k_norm", hd, i)
        width = inter * 2 if (double_wide and kv_shared) else inter
        b.mlp(f"{p}.mlp", width, H, i)
        for nm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm"):
            b.norm(f"{p}.{nm}", H, i)
        if ple:
            b.linear(f"{p}.per_layer_input_gate", "other", ple, H, i, quantizable=False)
            b.linear(f"{p}.per_layer_projection", "other", H, ple, i, quantizable=False)
            b.norm(f"{p}.post_per_layer_input_norm", H, i)
        if moe:
            E = int(raw["num_experts"])
            b.linear(f"{p}.router.proj", "router", E, H, i, quantizable=False)
            b.vec(f"{p}.router.scale", "router", H, i)
            b.vec(f"{p}.router.per_expert_scale", "router", E, i)
            b.experts(f"{p}.experts", E, int(raw["moe_intermediate_size"]), H, i)
            for nm in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"):
                b.norm(f"{p}.{nm}", H, i)
    b.final(cfg, V, H)


def gemma4_vision(v: HFView, text: WeightView, b: Builder) -> None:
    """Gemma 4's vision tower and its projector, as vLLM 0.22.0-0.34.0 builds them
    (``models/gemma4_mm.py`` Gemma4ForConditionalGeneration.__init__, 0.22.0 l.958-964):
    ``vision_tower = AutoModel.from_config(config.vision_config)`` — transformers'
    ``Gemma4VisionModel``, plain ``nn.Linear`` layers, so every TP rank holds it whole and no
    quantization method converts it — and ``embed_vision`` = Gemma4MultimodalEmbedder, a
    ``ReplicatedLinear(vision hidden, text hidden)`` (l.894). The modules are built in
    ``__init__`` with no pipeline-stage test, so every stage holds them.

    Shapes of transformers 5.x ``modeling_gemma4`` (Gemma4VisionModel on the meta device; the test
    holds the count equal): the patch embedder's ``position_embedding_table [2, P, h]`` and
    ``input_proj [h, 3·patch²]``; per encoder layer q/k/v/o ``[heads·hd, h]`` (each wrapped as
    ``.linear``), q/k norms ``[hd]``, a gated MLP (gate/up ``[I, h]``, down ``[h, I]``) and four
    ``[h]`` norms; with ``standardize`` the ``std_bias``/``std_scale`` buffers ``[h]``, which the
    checkpoint holds and vLLM loads."""
    h, n = v.int("hidden_size"), v.int("num_hidden_layers")
    heads = v.int("num_attention_heads")
    kv = v.opt_int("num_key_value_heads", minimum=0) or heads
    hd = v.opt_int("head_dim", minimum=0) or h // heads
    inter, patch = v.int("intermediate_size"), v.int("patch_size")
    pos = v.int("position_embedding_size")
    p = "model.vision_tower"

    def add(name, shape, *, buffer=False):
        b.add(name, "vision", shape, None, stage="every", hf_buffer=buffer)

    add(f"{p}.patch_embedder.position_embedding_table", (2, pos, h))
    add(f"{p}.patch_embedder.input_proj.weight", (h, 3 * patch * patch))
    for i in range(n):
        q = f"{p}.encoder.layers.{i}"
        for proj, rows in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd)):
            add(f"{q}.self_attn.{proj}_proj.linear.weight", (rows, h))
        add(f"{q}.self_attn.o_proj.linear.weight", (h, heads * hd))
        add(f"{q}.self_attn.q_norm.weight", (hd,))
        add(f"{q}.self_attn.k_norm.weight", (hd,))
        for proj in ("gate", "up"):
            add(f"{q}.mlp.{proj}_proj.linear.weight", (inter, h))
        add(f"{q}.mlp.down_proj.linear.weight", (h, inter))
        for nm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm"):
            add(f"{q}.{nm}.weight", (h,))
    if v.get("standardize", False):
        add(f"{p}.std_bias", (h,), buffer=True)
        add(f"{p}.std_scale", (h,), buffer=True)
    add("model.embed_vision.embedding_projection.weight", (text.int("hidden_size"), h))


FAMILY = Family(
    "gemma4", build_gemma4,
    weights=gemma4,
    architectures=(
        "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "DiffusionGemmaForBlockDiffusion",
    ),
    model_types=("gemma4", "gemma4_text"),
    config_keys=(
        "attention_bias", "attention_k_eq_v", "enable_moe_block", "global_head_dim", "head_dim", "hidden_size",
        "hidden_size_per_layer_input", "intermediate_size", "moe_intermediate_size", "num_attention_heads",
        "num_experts", "num_global_key_value_heads", "num_hidden_layers", "num_key_value_heads",
        "num_kv_shared_layers", "patch_size", "position_embedding_size", "standardize", "use_double_wide_mlp",
        "vocab_size", "vocab_size_per_layer_input",
    ),
    language_model_archs=LANGUAGE_MODEL_ARCHS,
    vision=(("Gemma4ForConditionalGeneration", gemma4_vision,
             "vision tower and projector counted (kvplan's formula of transformers' Gemma4VisionModel, which vLLM "
             "builds with AutoModel.from_config: whole on every rank, never quantized; gemma4_mm.py)"),),
)
