"""The weight rules' shared half: the config view they read (``WeightView``), the ``Builder`` of
``Weight`` records (one per tensor vLLM loads: shape, layer, how TP splits it), and the EAGLE heads'
inventory."""

from __future__ import annotations

from dataclasses import replace

from kvplan.model.hfconfig import HFView
from kvplan.tensors import Inventory, Weight


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


class Builder:
    def __init__(self) -> None:
        self.weights: list[Weight] = []

    def add(self, name: str, kind: str, shape, layer=None, *, shard=None, linear=False, kv_heads=0, vocab=False,
            hf_buffer=False, stage="layer", expert=False, dtype: str | None = None) -> None:
        """``dtype``: the tensor's own dtype where the model class fixes it (None: the model dtype)."""
        shape = tuple(int(x) for x in shape)
        if any(x <= 0 for x in shape):
            return
        self.weights.append(Weight(name, kind, shape, layer, shard, linear, kv_heads, vocab, hf_buffer, stage, expert,
                                   dtype))

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
