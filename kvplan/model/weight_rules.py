"""Every weight tensor vLLM loads, from the config alone: shapes, layers, how TP splits them.

Two ways to count, which the tests hold equal on every catalog model transformers knows:

* ``kvplan.model.inventory.analytic_inventory(config)`` (the default, no torch): one ``Weight`` per tensor vLLM
  loads, with its shape, the decoder layer it belongs to and how tensor parallelism splits
  it. One rule per family below, each written from the module shapes of that family's
  transformers and vLLM model files; the model layer's one family registry
  (``kvplan.model.families.FAMILIES``) holds each family's rules.
* ``kvplan.budget.meta.meta_param_counts(config)`` (``--exact-params`` and the tests; needs
  torch): builds the model on torch's meta device through transformers (``with torch.device("meta"):
  AutoModelForCausalLM.from_config(cfg)``: no download, no weights, never remote code) and
  counts ``parameters()``. Tied embeddings count once, as they do in memory.

What the two do not count, on purpose: vision towers of multimodal checkpoints (the meta
count reports them apart as ``vision``; the analytic inventory adds, as kind ``vision``, the towers
of ``VISION_TOWERS`` only: Gemma 4's), and buffers transformers keeps outside
``parameters()`` (DeepSeek/MiniMax ``e_score_correction_bias``: the analytic inventory has
them, flagged ``hf_buffer``, because vLLM loads them as parameters).

Bytes per tensor are ``kvplan.budget.quantization``'s, bytes per rank ``kvplan.budget.weights``'.
"""

from __future__ import annotations

import math
from dataclasses import replace

from kvplan.errors import ConfigError, UnsupportedError
from kvplan.model.hfconfig import HFView, shared_indexer_layers
from kvplan.tensors import Inventory, Weight

# --------------------------------------------------------------------------- config view

class WeightView(HFView):
    """The model layer's view of the (text) config (``HFView``: the transformers attribute
    first, then the raw key, then the default given), with the reads the weight rules share.
    Integer reads are ``HFView``'s, so a bad size fails here as it fails in the model layer."""

    def __init__(self, text: HFView, top_raw: dict, *, sparse_mla: bool = False):
        """``text``: the text config as the family rules read it (``families.config_views``), ``top_raw``: the
        whole config (a multimodal one's vision tower and tied embeddings)."""
        super().__init__(text.raw, text.obj, path=text.path, prefix=text.prefix)
        self.top_raw = top_raw
        self.model_type = str(top_raw.get("model_type") or "")
        self.text_model_type = str(self.raw.get("model_type") or self.model_type)
        self.sparse_mla = sparse_mla

    def v32(self) -> bool:
        """DeepSeek-V3.2's indexer: the family rules' decision (``ModelInfo.sparse_mla``, ``families.is_v32``)."""
        return self.sparse_mla

    def flag(self, key: str, default: bool = False) -> bool:
        v = self.get(key, default)
        return bool(v) if v is not None else default

    def tie(self) -> bool:
        for raw in (self.raw, self.top_raw):
            if "tie_word_embeddings" in raw:
                return bool(raw["tie_word_embeddings"])
        return bool(self.get("tie_word_embeddings", False))

    def head_dim(self, heads_key: str = "num_attention_heads") -> int:
        hd = self.raw.get("head_dim")
        if hd is None:
            hd = self.get("head_dim", None)
        if not hd:
            hd = self.int("hidden_size") // self.int(heads_key)
        return int(hd)

    def layer_types(self) -> list[str]:
        lt = self.get("layer_types", None)
        return list(lt) if lt else []


# --------------------------------------------------------------------------- builder

class Builder:
    def __init__(self) -> None:
        self.weights: list[Weight] = []

    def add(self, name: str, kind: str, shape, layer=None, *, shard=None, linear=False, kv_heads=0, vocab=False,
            hf_buffer=False, stage="layer", expert=False) -> None:
        shape = tuple(int(x) for x in shape)
        if any(x <= 0 for x in shape):
            return
        self.weights.append(Weight(name, kind, shape, layer, shard, linear, kv_heads, vocab, hf_buffer, stage, expert))

    def linear(self, name: str, kind: str, out: int, inp: int, layer=None, *, split: str | None = None,
               bias: bool = False, kv_heads: int = 0, quantizable: bool = True) -> None:
        """A Linear ``[out, inp]``: ``split`` "col" divides rows, "row" divides columns,
        "kv" divides KV heads (replicated past their count), None replicates."""
        shard = 0 if split in ("col", "kv") else 1 if split == "row" else None
        self.add(f"{name}.weight", kind, (out, inp), layer, shard=shard, linear=quantizable,
                 kv_heads=kv_heads if split == "kv" else 0)
        if bias:
            self.add(f"{name}.bias", kind, (out,), layer, shard=0 if split in ("col", "kv") else None,
                     kv_heads=kv_heads if split == "kv" else 0)

    def vec(self, name: str, kind: str, size: int, layer=None, *, split: bool = False, stage="layer",
            hf_buffer=False) -> None:
        self.add(name, kind, (size,), layer, shard=0 if split else None, stage=stage, hf_buffer=hf_buffer)

    def norm(self, name: str, size: int, layer=None, *, bias: bool = False, stage="layer") -> None:
        self.vec(f"{name}.weight", "norm", size, layer, stage=stage)
        if bias:
            self.vec(f"{name}.bias", "norm", size, layer, stage=stage)

    def embed(self, name: str, vocab: int, hidden: int) -> None:
        self.add(name, "embedding", (vocab, hidden), None, vocab=True, stage="first")

    def head(self, name: str, vocab: int, hidden: int, kind: str = "lm_head", stage: str = "last") -> None:
        self.add(name, kind, (vocab, hidden), None, vocab=True, stage=stage)

    def experts(self, prefix: str, E: int, inter: int, hidden: int, layer: int, *, gated: bool = True,
                bias: bool = False, kind: str = "experts") -> None:
        """Routed experts as vLLM's FusedMoE holds them: ``w13 [E, 2I, H]`` (``[E, I, H]``
        ungated) and ``w2 [E, H, I]``; tp divides I (or E under expert parallelism)."""
        up = 2 * inter if gated else inter
        name_up = f"{prefix}.gate_up_proj" if gated else f"{prefix}.up_proj"
        self.add(name_up, kind, (E, up, hidden), layer, shard=1, linear=True, expert=True)
        if bias:
            self.add(f"{name_up}_bias", kind, (E, up), layer, shard=1, expert=True)
        self.add(f"{prefix}.down_proj", kind, (E, hidden, inter), layer, shard=2, linear=True, expert=True)
        if bias:
            self.add(f"{prefix}.down_proj_bias", kind, (E, hidden), layer, expert=True)

    def mlp(self, prefix: str, inter: int, hidden: int, layer, *, gated: bool = True, bias: bool = False,
            kind: str = "mlp") -> None:
        if gated:
            self.linear(f"{prefix}.gate_proj", kind, inter, hidden, layer, split="col", bias=bias)
        self.linear(f"{prefix}.up_proj", kind, inter, hidden, layer, split="col", bias=bias)
        self.linear(f"{prefix}.down_proj", kind, hidden, inter, layer, split="row", bias=bias)

    def attention(self, prefix: str, hidden: int, heads: int, kv_heads: int, head_dim: int, layer: int, *,
                  v_head_dim: int | None = None, qkv_bias: bool = False, o_bias: bool = False,
                  q_mult: int = 1, has_v: bool = True, has_kv: bool = True) -> None:
        vd = v_head_dim or head_dim
        self.linear(f"{prefix}.q_proj", "attention", heads * head_dim * q_mult, hidden, layer, split="col",
                    bias=qkv_bias)
        if has_kv:
            self.linear(f"{prefix}.k_proj", "attention", kv_heads * head_dim, hidden, layer, split="kv",
                        bias=qkv_bias, kv_heads=kv_heads)
            if has_v:
                self.linear(f"{prefix}.v_proj", "attention", kv_heads * vd, hidden, layer, split="kv",
                            bias=qkv_bias, kv_heads=kv_heads)
        self.linear(f"{prefix}.o_proj", "attention", hidden, heads * vd, layer, split="row", bias=o_bias)

    def final(self, cfg: WeightView, vocab: int, hidden: int, *, norm_name: str = "model.norm",
              embed_name: str = "model.embed_tokens.weight", norm_bias: bool = False) -> None:
        self.norm(norm_name, hidden, None, bias=norm_bias, stage="last")
        if not cfg.tie():
            self.head("lm_head.weight", vocab, hidden)


# --------------------------------------------------------------------------- families



def _moe_layers_qwen(cfg: WeightView, n: int) -> set[int]:
    E = cfg.opt_int("num_experts", minimum=0) or 0
    if not E:
        return set()
    step = cfg.opt_int("decoder_sparse_step", minimum=0) or 1
    only_mlp = set(cfg.get("mlp_only_layers", None) or [])
    return {i for i in range(n) if i not in only_mlp and (i + 1) % step == 0}


def llama_like(cfg: WeightView, b: Builder) -> None:
    """Llama, Mistral, Mixtral, Phi-3, MiniMax-M2, Qwen2/Qwen3 (+MoE) and EAGLE-free Llama
    drafters used as draft models: ``q/k/v/o`` attention (optional biases and q/k norms),
    a gated MLP or routed experts, two RMSNorms per layer."""
    mt = cfg.text_model_type
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    qkv_bias = mt in ("qwen2", "qwen2_moe") or cfg.flag("attention_bias")
    o_bias = cfg.flag("attention_bias") and mt not in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe")
    mlp_bias = cfg.flag("mlp_bias")
    b.embed("model.embed_tokens.weight", V, H)
    moe_layers: set[int] = set()
    E = 0
    if mt in ("mixtral", "minimax_m2"):
        E = cfg.int("num_local_experts")
        moe_layers = set(range(n))
    elif mt in ("qwen2_moe", "qwen3_moe"):
        E = cfg.int("num_experts")
        moe_layers = _moe_layers_qwen(cfg, n)
    for i in range(n):
        p = f"model.layers.{i}"
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=qkv_bias, o_bias=o_bias)
        if mt in ("qwen3", "qwen3_moe"):
            b.norm(f"{p}.self_attn.q_norm", hd, i)
            b.norm(f"{p}.self_attn.k_norm", hd, i)
        if mt == "minimax_m2" and cfg.flag("use_qk_norm"):
            b.norm(f"{p}.self_attn.q_norm", heads * hd, i)
            b.norm(f"{p}.self_attn.k_norm", kv * hd, i)
        if i in moe_layers:
            b.linear(f"{p}.mlp.gate", "router", E, H, i, quantizable=False)
            if mt == "minimax_m2" and cfg.flag("use_routing_bias"):
                b.vec(f"{p}.mlp.e_score_correction_bias", "router", E, i, hf_buffer=True)
            inter = cfg.int("moe_intermediate_size") if mt in ("qwen2_moe", "qwen3_moe") else cfg.int("intermediate_size")
            b.experts(f"{p}.mlp.experts", E, inter, H, i)
            shared = cfg.opt_int("shared_expert_intermediate_size", minimum=0) or 0
            if shared:
                b.mlp(f"{p}.mlp.shared_expert", shared, H, i)
                b.linear(f"{p}.mlp.shared_expert_gate", "router", 1, H, i, quantizable=False)
        else:
            b.mlp(f"{p}.mlp", cfg.int("intermediate_size"), H, i, bias=mlp_bias)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


def gpt_oss(cfg: WeightView, b: Builder) -> None:
    """gpt-oss: biased q/k/v/o, one attention sink per head, a biased router and 32/128
    biased experts with a fused ``gate_up`` (reference: transformers ``modeling_gpt_oss``)."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads, kv, hd = cfg.int("num_attention_heads"), cfg.int("num_key_value_heads"), cfg.head_dim()
    E, inter = cfg.int("num_local_experts"), cfg.int("intermediate_size")
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        b.vec(f"{p}.self_attn.sinks", "attention", heads, i, split=True)
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=True, o_bias=True)
        b.linear(f"{p}.mlp.router", "router", E, H, i, bias=True, quantizable=False)
        b.experts(f"{p}.mlp.experts", E, inter, H, i, bias=True)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


def gemma(cfg: WeightView, b: Builder) -> None:
    """Gemma 2 and Gemma 3 text decoders: four RMSNorms per layer (input, post-attention,
    pre- and post-feed-forward), Gemma 3 adds per-head q/k norms; embeddings tied."""
    mt = cfg.text_model_type
    if mt not in ("gemma2", "gemma3", "gemma3_text"):
        raise UnsupportedError(f"weight count for model type {mt!r} is not modelled; pass --weights-memory")
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    bias = cfg.flag("attention_bias")
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=bias, o_bias=bias)
        if mt != "gemma2":
            b.norm(f"{p}.self_attn.q_norm", hd, i)
            b.norm(f"{p}.self_attn.k_norm", hd, i)
        b.mlp(f"{p}.mlp", cfg.int("intermediate_size"), H, i)
        for nm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm"):
            b.norm(f"{p}.{nm}", H, i)
    b.final(cfg, V, H)


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
            E = int(raw.get("num_experts"))
            b.linear(f"{p}.router.proj", "router", E, H, i, quantizable=False)
            b.vec(f"{p}.router.scale", "router", H, i)
            b.vec(f"{p}.router.per_expert_scale", "router", E, i)
            b.experts(f"{p}.experts", E, int(raw.get("moe_intermediate_size")), H, i)
            for nm in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"):
                b.norm(f"{p}.{nm}", H, i)
    b.final(cfg, V, H)


def llama4(cfg: WeightView, b: Builder) -> None:
    """Llama 4 text decoder: MoE layers every ``interleave_moe_layer_step`` (experts of
    ``intermediate_size`` plus one shared expert), dense layers of ``intermediate_size_mlp``;
    the q/k norm is a weightless L2 norm."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    bias = cfg.flag("attention_bias")
    E = cfg.int("num_local_experts")
    step = cfg.opt_int("interleave_moe_layer_step", minimum=0) or 1
    moe_layers = cfg.get("moe_layers", None)
    moe = set(moe_layers) if moe_layers is not None else {i for i in range(n) if (i + 1) % step == 0}
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=bias, o_bias=bias)
        if i in moe:
            b.linear(f"{p}.feed_forward.router", "router", E, H, i, quantizable=False)
            b.experts(f"{p}.feed_forward.experts", E, cfg.int("intermediate_size"), H, i)
            b.mlp(f"{p}.feed_forward.shared_expert", cfg.int("intermediate_size"), H, i)
        else:
            b.mlp(f"{p}.feed_forward", cfg.int("intermediate_size_mlp"), H, i)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


def _gdn_mixer(cfg: WeightView, b: Builder, p: str, i: int, H: int) -> None:
    """Gated DeltaNet (Qwen3-Next fuses ``in_proj_qkvz``/``in_proj_ba``; Qwen3.5 splits them)."""
    kh, kd = cfg.int("linear_num_key_heads"), cfg.int("linear_key_head_dim")
    vh, vd = cfg.int("linear_num_value_heads"), cfg.int("linear_value_head_dim")
    K = cfg.int("linear_conv_kernel_dim", 4)
    key, value = kh * kd, vh * vd
    if cfg.text_model_type == "qwen3_next":
        b.linear(f"{p}.in_proj_qkvz", "mixer", 2 * key + 2 * value, H, i, split="col")
        b.linear(f"{p}.in_proj_ba", "mixer", 2 * vh, H, i, split="col")
    else:
        b.linear(f"{p}.in_proj_qkv", "mixer", 2 * key + value, H, i, split="col")
        b.linear(f"{p}.in_proj_z", "mixer", value, H, i, split="col")
        b.linear(f"{p}.in_proj_b", "mixer", vh, H, i, split="col")
        b.linear(f"{p}.in_proj_a", "mixer", vh, H, i, split="col")
    b.add(f"{p}.conv1d.weight", "mixer", (2 * key + value, 1, K), i, shard=0)
    b.vec(f"{p}.dt_bias", "mixer", vh, i, split=True)
    b.vec(f"{p}.A_log", "mixer", vh, i, split=True)
    b.norm(f"{p}.norm", vd, i)
    b.linear(f"{p}.out_proj", "mixer", H, value, i, split="row")


def _gdn_moe_or_mlp(cfg: WeightView, b: Builder, p: str, i: int, H: int, moe: bool) -> None:
    if moe:
        E = cfg.int("num_experts")
        b.linear(f"{p}.mlp.gate", "router", E, H, i, quantizable=False)
        b.experts(f"{p}.mlp.experts", E, cfg.int("moe_intermediate_size"), H, i)
        shared = cfg.opt_int("shared_expert_intermediate_size", minimum=0) or 0
        if shared:
            b.mlp(f"{p}.mlp.shared_expert", shared, H, i)
            b.linear(f"{p}.mlp.shared_expert_gate", "router", 1, H, i, quantizable=False)
    else:
        b.mlp(f"{p}.mlp", cfg.int("intermediate_size"), H, i)


def _gdn_full_attention(cfg: WeightView, b: Builder, p: str, i: int, H: int) -> None:
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    gate = cfg.flag("attn_output_gate", True)
    b.attention(f"{p}.self_attn", H, heads, kv, hd, i, qkv_bias=cfg.flag("attention_bias"), q_mult=2 if gate else 1)
    b.norm(f"{p}.self_attn.q_norm", hd, i)
    b.norm(f"{p}.self_attn.k_norm", hd, i)


def gdn(cfg: WeightView, b: Builder) -> None:
    """Qwen3-Next and Qwen3.5 (dense and MoE) text decoders: ``layer_types`` picks Gated
    DeltaNet or gated full attention (q doubled for the output gate); MoE layers as Qwen2-MoE."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    types = cfg.layer_types()
    if len(types) != n:
        interval = cfg.opt_int("full_attention_interval", minimum=0) or 4
        types = ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(n)]
    moe = _moe_layers_qwen(cfg, n) if cfg.opt_int("num_experts", minimum=0) else set()
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        if types[i] == "linear_attention":
            _gdn_mixer(cfg, b, f"{p}.linear_attn", i, H)
        else:
            _gdn_full_attention(cfg, b, p, i, H)
        _gdn_moe_or_mlp(cfg, b, p, i, H, i in moe)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    b.final(cfg, V, H)


def gdn_mtp(cfg: WeightView, b: Builder, k: int) -> None:
    """Qwen3-Next / Qwen3.5 MTP (vLLM ``qwen3_next_mtp.py``): ``fc [H, 2H]`` after two input
    norms, ``k`` full-attention MoE/MLP layers (``families.mtp_count``: Qwen3.5's
    ``mtp_num_hidden_layers``, Qwen3-Next's ``num_nextn_predict_layers``, vLLM's default 1),
    a final norm; the embedding and lm_head are the target's (vLLM shares them)."""
    H = cfg.int("hidden_size")
    moe = bool(cfg.opt_int("num_experts", minimum=0))
    base = cfg.int("num_hidden_layers")
    sub = Builder()
    sub.norm("mtp.pre_fc_norm_embedding", H, base)
    sub.norm("mtp.pre_fc_norm_hidden", H, base)
    sub.linear("mtp.fc", "mtp", H, 2 * H, base, split="col", quantizable=False)
    for j in range(k):
        p = f"mtp.layers.{j}"
        _gdn_full_attention(cfg, sub, p, base, H)
        _gdn_moe_or_mlp(cfg, sub, p, base, H, moe)
        sub.norm(f"{p}.input_layernorm", H, base)
        sub.norm(f"{p}.post_attention_layernorm", H, base)
    sub.norm("mtp.norm", H, base)
    b.weights += [replace(w, kind="mtp", stage="last", layer=None) for w in sub.weights]


def nemotron_h(cfg: WeightView, b: Builder) -> None:
    """Nemotron-H: ``hybrid_override_pattern`` ``M`` Mamba2, ``*`` attention, ``-`` MLP
    (squared ReLU, no gate), ``E`` MoE; one norm per block, ``norm_f`` at the end."""
    H, V = cfg.int("hidden_size"), cfg.int("vocab_size")
    pattern = str(cfg.get("hybrid_override_pattern", ""))
    n = len(pattern)
    if n == 0:
        raise ConfigError(cfg.path, "hybrid_override_pattern", "required key is missing", "add it to the config")
    nh, hdim = cfg.int("mamba_num_heads"), cfg.int("mamba_head_dim")
    inner = nh * hdim
    G, N = cfg.int("n_groups"), cfg.int("ssm_state_size")
    K = cfg.int("conv_kernel", 4)
    conv_dim = inner + 2 * G * N
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.opt_int("head_dim", minimum=0) or H // heads
    b.embed("model.embeddings.weight", V, H)
    for i, c in enumerate(pattern):
        p = f"model.layers.{i}"
        b.norm(f"{p}.norm", H, i)
        m = f"{p}.mixer"
        if c == "M":
            b.linear(f"{m}.in_proj", "mixer", 2 * inner + 2 * G * N + nh, H, i, split="col",
                     bias=cfg.flag("use_bias"))
            b.add(f"{m}.conv1d.weight", "mixer", (conv_dim, 1, K), i, shard=0)
            if cfg.flag("use_conv_bias", True):
                b.vec(f"{m}.conv1d.bias", "mixer", conv_dim, i, split=True)
            for nm in ("dt_bias", "A_log", "D"):
                b.vec(f"{m}.{nm}", "mixer", nh, i, split=True)
            b.vec(f"{m}.norm.weight", "mixer", inner, i, split=True)
            b.linear(f"{m}.out_proj", "mixer", H, inner, i, split="row", bias=cfg.flag("use_bias"))
        elif c == "*":
            bias = cfg.flag("attention_bias")
            b.attention(m, H, heads, kv, hd, i, qkv_bias=bias, o_bias=bias)
        elif c == "-":
            b.mlp(m, cfg.int("intermediate_size"), H, i, gated=False, bias=cfg.flag("mlp_bias"))
        elif c == "E":
            E = cfg.int("n_routed_experts")
            b.linear(f"{m}.gate", "router", E, H, i, quantizable=False)
            b.vec(f"{m}.gate.e_score_correction_bias", "router", E, i, hf_buffer=True)
            b.experts(f"{m}.experts", E, cfg.int("moe_intermediate_size"), H, i, gated=False)
            shared = ((cfg.opt_int("moe_shared_expert_intermediate_size", minimum=0) or 0)
                      * (cfg.opt_int("n_shared_experts", minimum=0) or 1))
            if shared:
                b.mlp(f"{m}.shared_experts", shared, H, i, gated=False)
        else:
            raise ConfigError(cfg.path, "hybrid_override_pattern", f"unknown block {c!r}", "use M, *, - or E")
    b.norm("model.norm_f", H, None, stage="last")
    if not cfg.tie():
        b.head("lm_head.weight", V, H)


def jamba(cfg: WeightView, b: Builder) -> None:
    """Jamba: attention every ``attn_layer_period`` (from ``attn_layer_offset``), Mamba1
    elsewhere; MoE feed-forward every ``expert_layer_period`` (from its offset)."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = H // heads
    a_per, a_off = cfg.int("attn_layer_period", 8), cfg.int("attn_layer_offset", 4, minimum=0)
    e_per, e_off = cfg.int("expert_layer_period", 2), cfg.int("expert_layer_offset", 1, minimum=0)
    E = cfg.int("num_experts", 16)
    inner = cfg.int("mamba_expand", 2) * H
    N, K = cfg.int("mamba_d_state", 16), cfg.int("mamba_d_conv", 4)
    dt_rank = cfg.get("mamba_dt_rank", "auto")
    dt_rank = math.ceil(H / 16) if dt_rank in (None, "auto") else int(dt_rank)
    proj_bias = cfg.flag("mamba_proj_bias")
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        if i % a_per == a_off:
            b.attention(f"{p}.self_attn", H, heads, kv, hd, i)
        else:
            m = f"{p}.mamba"
            b.linear(f"{m}.in_proj", "mixer", 2 * inner, H, i, split="col", bias=proj_bias)
            b.add(f"{m}.conv1d.weight", "mixer", (inner, 1, K), i, shard=0)
            if cfg.flag("mamba_conv_bias", True):
                b.vec(f"{m}.conv1d.bias", "mixer", inner, i, split=True)
            b.linear(f"{m}.x_proj", "mixer", dt_rank + 2 * N, inner, i, split="row")
            b.linear(f"{m}.dt_proj", "mixer", inner, dt_rank, i, split="col", bias=True)
            b.add(f"{m}.A_log", "mixer", (inner, N), i, shard=0)
            b.vec(f"{m}.D", "mixer", inner, i, split=True)
            b.linear(f"{m}.out_proj", "mixer", H, inner, i, split="row", bias=proj_bias)
            b.norm(f"{m}.dt_layernorm", dt_rank, i)
            b.norm(f"{m}.b_layernorm", N, i)
            b.norm(f"{m}.c_layernorm", N, i)
        if E > 1 and i % e_per == e_off:
            b.linear(f"{p}.feed_forward.router", "router", E, H, i, quantizable=False)
            b.experts(f"{p}.feed_forward.experts", E, cfg.int("intermediate_size"), H, i)
        else:
            b.mlp(f"{p}.feed_forward", cfg.int("intermediate_size"), H, i)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.pre_ff_layernorm", H, i)
    b.norm("model.final_layernorm", H, None, stage="last")
    if not cfg.tie():
        b.head("lm_head.weight", V, H)


def _deepseek_layer(cfg: WeightView, b: Builder, p: str, i: int, H: int, *, moe: bool, v32: bool) -> None:
    heads = cfg.int("num_attention_heads")
    q_lora = cfg.opt_int("q_lora_rank", minimum=0)
    kv_lora, rope = cfg.int("kv_lora_rank"), cfg.int("qk_rope_head_dim")
    nope, vd = cfg.int("qk_nope_head_dim"), cfg.int("v_head_dim")
    a = f"{p}.self_attn"
    if q_lora:
        b.linear(f"{a}.q_a_proj", "attention", q_lora, H, i)  # replicated (fused_qkv_a_proj)
        b.norm(f"{a}.q_a_layernorm", q_lora, i)
        b.linear(f"{a}.q_b_proj", "attention", heads * (nope + rope), q_lora, i, split="col")
    else:
        b.linear(f"{a}.q_proj", "attention", heads * (nope + rope), H, i, split="col")
    b.linear(f"{a}.kv_a_proj_with_mqa", "attention", kv_lora + rope, H, i)  # replicated
    b.norm(f"{a}.kv_a_layernorm", kv_lora, i)
    b.linear(f"{a}.kv_b_proj", "attention", heads * (nope + vd), kv_lora, i, split="col")
    b.linear(f"{a}.o_proj", "attention", H, heads * vd, i, split="row")
    if v32:  # the lightning indexer: replicated in vLLM, weights_proj never quantized
        ih, idim = cfg.int("index_n_heads"), cfg.int("index_head_dim")
        b.linear(f"{a}.indexer.wq_b", "attention", ih * idim, q_lora or H, i)
        b.linear(f"{a}.indexer.wk", "attention", idim, H, i)
        b.norm(f"{a}.indexer.k_norm", idim, i, bias=True)
        b.linear(f"{a}.indexer.weights_proj", "attention", ih, H, i, quantizable=False)
    if moe:
        E = cfg.int("n_routed_experts")
        b.linear(f"{p}.mlp.gate", "router", E, H, i, quantizable=False)
        if cfg.get("topk_method", None) == "noaux_tc":
            b.vec(f"{p}.mlp.gate.e_score_correction_bias", "router", E, i, hf_buffer=True)
        inter = cfg.int("moe_intermediate_size")
        b.experts(f"{p}.mlp.experts", E, inter, H, i)
        shared = cfg.opt_int("n_shared_experts", minimum=0) or 0
        if shared:
            b.mlp(f"{p}.mlp.shared_experts", inter * shared, H, i)
    else:
        b.mlp(f"{p}.mlp", cfg.int("intermediate_size"), H, i)
    b.norm(f"{p}.input_layernorm", H, i)
    b.norm(f"{p}.post_attention_layernorm", H, i)


def _deepseek_is_moe(cfg: WeightView, i: int) -> bool:
    first = cfg.opt_int("first_k_dense_replace", minimum=0) or 0
    freq = cfg.opt_int("moe_layer_freq", minimum=0) or 1
    return bool(cfg.opt_int("n_routed_experts", minimum=0)) and i >= first and i % freq == 0


def deepseek(cfg: WeightView, b: Builder) -> None:
    """DeepSeek-V2/V3/R1/V3.2 and Kimi-K2: MLA attention (low-rank q and kv projections),
    dense MLP for the first ``first_k_dense_replace`` layers, then routed + shared experts."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    v32 = cfg.v32()
    # a layer that shares the preceding indexer builds none; vLLM's load_weights drops its checkpoint weights
    shared = shared_indexer_layers(cfg, n) if v32 else frozenset()
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        _deepseek_layer(cfg, b, f"model.layers.{i}", i, H, moe=_deepseek_is_moe(cfg, i), v32=v32 and i not in shared)
    b.final(cfg, V, H)


def deepseek_mtp(cfg: WeightView, b: Builder, k: int) -> None:
    """DeepSeek MTP (``num_nextn_predict_layers``): per layer ``enorm``, ``hnorm``,
    ``eh_proj [H, 2H]`` (a plain nn.Linear in vLLM: replicated, unquantized), one decoder
    layer and ``shared_head.norm``; its embedding and head are the target's (vLLM shares
    them; the checkpoint stores copies, which the published 685B counts)."""
    H = cfg.int("hidden_size")
    n = cfg.int("num_hidden_layers")
    v32 = cfg.v32()
    sub = Builder()
    for j in range(k):
        i = n + j
        p = f"model.layers.{i}"
        sub.norm(f"{p}.enorm", H, i)
        sub.norm(f"{p}.hnorm", H, i)
        sub.linear(f"{p}.eh_proj", "mtp", H, 2 * H, i, quantizable=False)
        _deepseek_layer(cfg, sub, p, i, H, moe=_deepseek_is_moe(cfg, i), v32=v32)
        sub.norm(f"{p}.shared_head.norm", H, i)
    b.weights += [replace(w, kind="mtp", stage="last", layer=None) for w in sub.weights]


def mimo_v2(cfg: WeightView, b: Builder) -> None:
    """MiMo-V2-Flash: sliding layers (``hybrid_layer_pattern`` 1) use the ``swa_*`` heads
    and sizes and carry attention sinks; ``moe_layer_freq`` 1 marks MoE layers (sigmoid
    router with a correction bias), 0 a dense MLP."""
    H, V, n = cfg.int("hidden_size"), cfg.int("vocab_size"), cfg.int("num_hidden_layers")
    raw = cfg.raw
    types = cfg.layer_types()
    if len(types) != n:
        pattern = raw.get("hybrid_layer_pattern") or [0] * n
        types = ["sliding_attention" if x == 1 else "full_attention" for x in pattern]
    freq = raw.get("moe_layer_freq")
    moe = [bool(x) for x in freq] if isinstance(freq, list) else [True] * n
    heads = int(raw["num_attention_heads"])
    bias = bool(raw.get("attention_bias", False))
    E = int(raw.get("n_routed_experts") or 0)
    b.embed("model.embed_tokens.weight", V, H)
    for i in range(n):
        p = f"model.layers.{i}"
        sw = types[i] == "sliding_attention"
        if sw:
            h = int(raw.get("swa_num_attention_heads") or heads)
            kv = int(raw.get("swa_num_key_value_heads") or raw["num_key_value_heads"])
            hd = int(raw.get("swa_head_dim") or raw.get("head_dim"))
            vd = int(raw.get("swa_v_head_dim") or raw.get("v_head_dim") or hd)
        else:
            h, kv = heads, int(raw["num_key_value_heads"])
            hd = int(raw.get("head_dim"))
            vd = int(raw.get("v_head_dim") or hd)
        b.attention(f"{p}.self_attn", H, h, kv, hd, i, v_head_dim=vd, qkv_bias=bias)
        if (sw and raw.get("add_swa_attention_sink_bias")) or (not sw and raw.get("add_full_attention_sink_bias")):
            b.vec(f"{p}.self_attn.sinks", "attention", h, i, split=True)
        if moe[i] and E:
            b.linear(f"{p}.mlp.gate", "router", E, H, i, quantizable=False)
            b.vec(f"{p}.mlp.gate.e_score_correction_bias", "router", E, i, hf_buffer=True)
            b.experts(f"{p}.mlp.experts", E, int(raw["moe_intermediate_size"]), H, i)
        else:
            b.mlp(f"{p}.mlp", int(raw["intermediate_size"]), H, i)
        b.norm(f"{p}.input_layernorm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
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


def eagle_inventory(cfg: WeightView, method: str, target: HFView) -> Inventory:
    """An EAGLE / EAGLE-3 / P-EAGLE head's own weights (vLLM ``llama_eagle3.py``/``llama_eagle.py``): the
    decoder layers (EAGLE-3's first layer takes ``2·H`` inputs: embedding and hidden state, with an extra
    ``hidden_norm``), the ``fc`` fusing the target's hidden states (EAGLE-3: ``k·H_target → H`` over its
    ``eagle_aux_hidden_state_layer_ids``, 3 by default; EAGLE: ``2·H → H``), a final norm and, for EAGLE-3,
    its own lm_head over ``draft_vocab_size``. The embedding (and EAGLE's lm_head) are the target's: vLLM
    shares them when the checkpoint has none, as published heads do. Every tensor sits on the last stage.
    ``target``: the target's text config, whose ``hidden_size`` the ``fc`` reads."""
    H, n = cfg.int("hidden_size"), cfg.int("num_hidden_layers")
    heads = cfg.int("num_attention_heads")
    kv = cfg.opt_int("num_key_value_heads", minimum=0) or heads
    hd = cfg.head_dim()
    inter = cfg.int("intermediate_size")
    b = Builder()
    for i in range(n):
        p = f"model.layers.{i}"
        in_dim = 2 * H if (method == "eagle3" and i == 0) else H
        b.linear(f"{p}.self_attn.q_proj", "drafter", heads * hd, in_dim, i, split="col")
        b.linear(f"{p}.self_attn.k_proj", "drafter", kv * hd, in_dim, i, split="kv", kv_heads=kv)
        b.linear(f"{p}.self_attn.v_proj", "drafter", kv * hd, in_dim, i, split="kv", kv_heads=kv)
        b.linear(f"{p}.self_attn.o_proj", "drafter", H, heads * hd, i, split="row")
        b.mlp(f"{p}.mlp", inter, H, i, kind="drafter")
        b.norm(f"{p}.input_layernorm", H, i)
        if method == "eagle3" and i == 0:
            b.norm(f"{p}.hidden_norm", H, i)
        b.norm(f"{p}.post_attention_layernorm", H, i)
    if method == "eagle3":
        aux = cfg.top_raw.get("eagle_aux_hidden_state_layer_ids")
        k = len(aux) if isinstance(aux, list) and aux else 3
        b.linear("model.fc", "drafter", H, k * target.int("hidden_size"), None, quantizable=False)
    else:
        b.linear("model.fc", "drafter", H, 2 * H, None, quantizable=False)
    b.norm("model.norm", H, None)
    notes = ["embedding shared with the target (vLLM shares it when the head ships none)"]
    if method == "eagle3":
        dv = cfg.opt_int("draft_vocab_size", minimum=0) or cfg.int("vocab_size")
        b.head("lm_head.weight", dv, H, kind="drafter")
    else:
        notes.append("lm_head shared with the target")
    weights = tuple(replace(w, kind="drafter" if w.kind != "norm" else "norm", stage="last", layer=None)
                    for w in b.weights)
    return Inventory("eagle", cfg.text_model_type, weights, n, False, tuple(notes))


# Multimodal checkpoints whose vision tower kvplan counts (by the served architecture), and the note.
VISION_TOWERS = {"Gemma4ForConditionalGeneration": gemma4_vision}
VISION_NOTES = {"Gemma4ForConditionalGeneration": (
    "vision tower and projector counted (kvplan's formula of transformers' Gemma4VisionModel, which vLLM "
    "builds with AutoModel.from_config: whole on every rank, never quantized; gemma4_mm.py)")}


def inventory_of(cfg: WeightView, family: str, weights, mtp_weights=None, num_mtp_layers: int = 0, *,
                 include_mtp: bool = True) -> tuple[Inventory, Inventory]:
    """The weights of the config ``cfg`` reads, by the family's rules (``families.Family``: ``weights``, and
    ``mtp_weights`` for ``num_mtp_layers`` MTP layers), with the vision tower of ``VISION_TOWERS`` when the
    config is a multimodal one: ``(loaded, stored)``, what vLLM loads (the MTP layers when ``include_mtp``) and
    what the checkpoint stores (every MTP layer), from one pass of the rules (an MTP rule only appends)."""
    b = Builder()
    weights(cfg, b)
    decoder = list(b.weights)
    if mtp_weights is not None and num_mtp_layers:
        mtp_weights(cfg, b, num_mtp_layers)
    mtp = b.weights[len(decoder):]
    notes, tail = [], Builder()
    config = cfg.top_raw
    if cfg.raw is not config:
        arch = (config.get("architectures") or [""])[0]
        tower = VISION_TOWERS.get(arch)
        vision = config.get("vision_config")
        if tower is not None and isinstance(vision, dict):
            tower(HFView(vision, None, path=cfg.path, prefix="vision_config."), cfg, tail)
            notes.append(VISION_NOTES[arch])
        else:
            notes.append("text decoder only: the vision tower of this multimodal checkpoint is not counted")
    n = cfg.opt_int("num_hidden_layers", minimum=0) or len(str(cfg.get("hybrid_override_pattern", "")))

    def inventory(with_mtp: bool) -> Inventory:
        note = ["MTP weights included (embedding and lm_head shared with the target, as vLLM loads them)"]
        return Inventory(family, cfg.text_model_type, tuple(decoder + (mtp if with_mtp else []) + tail.weights), n,
                         cfg.tie(), tuple((note if with_mtp and mtp else []) + notes))

    stored = inventory(True)
    return (stored if include_mtp or not mtp else inventory(False)), stored
