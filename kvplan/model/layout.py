"""``build_model_layout()``: a model argument (+ drafter) → the ordered per-layer specs vLLM registers.

Steps: resolve the source → read config.json → transformers view → family → serving
options (dtype, cache dtype, block size) → target layers → drafter / MTP layers → the
pipeline-parallel partition. Mamba page alignment is not done here: it is era-dependent
and belongs to the vLLM engine module (``MambaSpec.block_size`` is the attention block
size and ``page_size_padded`` is None).
"""

from __future__ import annotations

import dataclasses

from typing import Any

from kvplan.frozen import dataclass
from kvplan import bounds
from kvplan.errors import ConfigError, NoLayerRuleError, OptionError, UnsupportedError
from kvplan.model import drafters, families, methods
from kvplan.model.families import Built, Context, FamilyResult, gemma4
from kvplan.model.hfconfig import HFView
from kvplan.model.inventory import ModelInventory, model_inventory
from kvplan.model.options import (
    AttentionFacts,
    ServingOptions,
    config_dtype,
    resolve_block_size,
    resolve_cache_dtype,
    resolve_model_dtype,
    with_quant_config,
)
from kvplan.model.source import ModelSource, quant_config_beside, read_config_json, resolve_model
from kvplan.model.traits import ConfigFacts, config_facts
from kvplan.specs import SLIDING, AttentionSpec, LayerSpec
from kvplan.units import plural


@dataclass(frozen=True)
class ModelInfo:
    source: ModelSource
    config: dict  # the raw config.json
    model_type: str
    architecture: str
    family: str  # the family rule applied (families.FAMILIES key)
    num_hidden_layers: int
    dtype: str  # resolved model dtype (torch name)
    max_position_embeddings: int | None
    attention_chunk_size: int | None  # model_config.attention_chunk_size: vLLM's HMA decision reads it (§5)
    is_hybrid_mamba: bool  # has Mamba / GDN / linear-state layers
    mamba_chunk_size: int | None  # for vLLM's "all"-mode alignment
    provenance: str | None  # "genuine" / "reconstructed" when from the bundled catalog
    # the text decoder's part of ``config`` (its ``text_config`` when multimodal), as vLLM's get_hf_text_config
    # reads it: the budget stage takes it from here rather than reading the config again
    text_config: dict
    # the MTP layers the checkpoint holds, as vLLM counts them (families.mtp_count), and DeepSeek-V3.2's sparse MLA
    # (families.is_v32: the DSA indexer): decided here once, read by the budget stage for the weights they add
    num_mtp_layers: int = 0
    sparse_mla: bool = False


@dataclass(frozen=True)
class ModelLayout:
    target: ModelInfo
    drafter: ModelInfo | None  # --drafter / draft_model; None for MTP (its layers come from the target config)
    speculative_method: str | None
    num_speculative_tokens: int
    layers: tuple[LayerSpec, ...]  # registration order; per-rank (TP-split) specs
    ranks: tuple[tuple[str, ...], ...]  # layer names per PP stage; drafter/MTP layers on the last
    tensor_parallel_size: int  # the TP size the per-rank specs (and weights) were split for
    block_size: int  # attention block size before any Mamba alignment (the engine does that)
    kv_cache_dtype: str  # the option as given ("auto", "fp8", ...)
    kv_sharing_layers: tuple[str, ...]  # layers that reuse another layer's KV (no spec)
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    # what the engine reads from the configs besides the layers (traits, lengths, hidden size, head
    # counts, the drafter's word on its target), worked out once here: the stages after read its fields
    config_facts: ConfigFacts
    # VLLM_PP_LAYER_PARTITION: the layers per stage vLLM uses (None = get_pp_indices' own split),
    # or the ValueError text get_pp_indices raises for it (the engine reports it as a start-up
    # failure; the layout then keeps the default split)
    pp_partition: tuple[int, ...] | None = None
    pp_partition_error: str | None = None
    # a speculative method with neither --num-speculative-tokens nor a default (the draft's
    # n_predict, suffix decoding's): vLLM's SpeculativeConfig refuses it; built with 0
    num_speculative_tokens_missing: bool = False
    # head counts split over TP, ("target" | "drafter", "heads" | "kv_heads", total, config field),
    # in build order; the engine checks that TP divides them (prechecks)
    tp_checks: tuple[tuple[str, str, int, str], ...] = ()
    # the engine's block-size decision (``ModelDraft.attention`` answered by the engine: backend, log lines)
    block_size_decision: object = None
    # each pipeline stage's target decoder layers [start, end) (vLLM's get_pp_indices with pp_partition),
    # read by the budget stage without calling back into this module
    pp_bounds: tuple[tuple[int, int], ...] = ()
    # the weights the budget counts (target, what its checkpoint stores, the drafter): built by the model stage
    # when a budget is asked for (``finish_model_layout(..., inventory=True)``), None otherwise
    inventory: ModelInventory | None = None


@dataclass
class _Parsed:
    source: ModelSource
    raw: dict
    top: HFView
    text: HFView
    architecture: str
    model_type: str
    family: str
    speculators: dict | None = None  # the speculators-format config.json as read (raw is its layer config)
    quant_file: str | None = None  # hf_quant_config.json read beside config.json (raw's quantization_config)


@dataclass(frozen=True)
class ModelDraft:
    """A model read up to the block size (``draft_model_layout``): the config parsed, the served
    speculators checkpoint resolved, the model and cache dtypes decided; ``attention()`` is what the
    engine reads to decide the block size, which ``finish_model_layout`` then takes as a value."""

    model: str
    drafter: str | None
    options: ServingOptions
    download: bool
    source: ModelSource
    parsed: _Parsed
    served: _Parsed | None
    served_method: str | None
    dtype: str
    cache_str: str
    cache_dtype: str
    notes: tuple[str, ...]
    warnings: tuple[str, ...]
    use_mla: bool
    sparse_mla: bool  # DeepSeek-V3.2's sparse MLA
    # the layers whose KV keeps the model dtype (attention.py 0.34.0 lines 321-336): the user's
    # --kv-cache-dtype-skip-layers and, for TurboQuant/UltraQuant caches, the boundary layers
    # create_engine_config adds (engine/arg_utils.py lines 2370-2385)
    skip_layers: tuple[str, ...] = ()

    def attention(self) -> AttentionFacts:
        """The facts an engine's block-size rule reads (the head size read only when asked: a config
        view without ``head_dim`` would ask transformers)."""
        p = self.parsed
        head = families.selector_head_size(p.text)
        # read only for a quantized cache: the shipped config views (catalog_resolved.json) hold what the
        # model dtype's runs read
        latent, kv, _ = families.kv_dtype_counts(p.text) if self.cache_str != "auto" else (None, None, 0)
        if self.use_mla and latent:
            head = latent  # ModelConfig.get_head_size for MLA: the latent, 576 for DeepSeek-V3
        return AttentionFacts(use_mla=self.use_mla, use_sparse=self.sparse_mla, head_size=head,
                              has_sink=p.model_type == "gpt_oss", kv_cache_dtype=self.cache_str,
                              model_dtype=self.dtype, head_size_v=head,
                              num_kv_heads=max(1, kv // self.options.tensor_parallel_size) if kv else None,
                              has_skip_layers=bool(self.skip_layers) and self.cache_str != "auto",
                              release=self.options.release,
                              kv_tensor_dtype=self.cache_dtype if self.cache_str != "auto" else None,
                              architecture=p.architecture,
                              head_sizes=tuple(sorted(set(gemma4.head_sizes(p.text)))) if p.family == "gemma4"
                              else ())


# ------------------------------------------------------------------ parsing

def apply_hf_overrides(raw: dict, overrides: dict | None) -> dict:
    """vLLM's ``--hf-overrides`` on a config (ModelConfig.__post_init__ / _apply_dict_overrides,
    vLLM 0.34.0): a mapping value updates a nested sub-config (``text_config``, ``vision_config``,
    ... key by key); any other value replaces the key (a ``rope_scaling`` mapping included)."""
    if not overrides:
        return raw
    out = dict(raw)
    for key, value in overrides.items():
        nested = isinstance(value, dict) and isinstance(out.get(key), dict) and key.endswith("_config") \
            and key != "quantization_config"
        out[key] = apply_hf_overrides(out[key], value) if nested else value
    return out


def _parse(source: ModelSource, hf_overrides: dict | None = None) -> _Parsed:
    path = source.path
    raw = read_config_json(path)
    speculators = None
    if drafters.is_speculators(raw):
        speculators, raw = raw, drafters.speculators_pretrained_config(raw, path)
    raw, quant_file = with_quant_config(raw, path, quant_config_beside(raw, path))
    raw = apply_hf_overrides(raw, hf_overrides)
    archs = raw.get("architectures")
    model_type = raw.get("model_type")
    if archs is not None and (not isinstance(archs, list) or not all(isinstance(a, str) for a in archs) or not archs):
        raise ConfigError(path, "architectures", "expected a non-empty list of strings", 'write e.g. ["LlamaForCausalLM"]')
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigError(path, "model_type", "expected a string", 'write e.g. "llama"')
    if archs is None and model_type is None:
        raise ConfigError(path, "architectures", "neither 'architectures' nor 'model_type' is set",
                          "this is not a Hugging Face model config")
    arch = archs[0] if archs else ""
    family = families.family_of(arch, model_type)
    if family is None:
        field = "architectures" if archs else "model_type"
        why, fix = families.refusal(arch, model_type, bool(raw.get("auto_map")))
        raise NoLayerRuleError(path, field, why, fix, raw)
    if not arch:
        arch = {v: k for k, v in reversed(families.ARCH_FAMILY.items())}.get(family, "")
    model_type = model_type or ""
    _check_bounds(path, raw)
    # Validate the raw fields we read before transformers does (its errors are not one-liners).
    top, text = families.config_views(raw, path)
    return _Parsed(source, raw, top, text, arch, model_type, family, speculators, quant_file)


def _check_bounds(path: str, raw: dict) -> None:
    """Refuse values above kvplan's plausibility bounds (kvplan/bounds.py) before any work that
    grows with them, transformers' config classes included (they build per-layer lists)."""
    for cfg, prefix in ((raw, ""), (raw.get("text_config"), "text_config.")):
        hit = bounds.config_out_of_bounds(cfg) if isinstance(cfg, dict) else None
        if hit is not None:
            raise ConfigError(path, prefix + hit[0], hit[1], "no released model comes near it (docs/reference.md: Plausibility "
                                                             "bounds); fix the value")


def _check_spec_bounds(path: str, layers: tuple[LayerSpec, ...]) -> None:
    """The same bounds on what the family rules derived (a head size is hidden_size // heads)."""
    for ls in {id(ls.spec): ls for ls in layers}.values():
        s = ls.spec
        for field, bound in (("num_kv_heads", bounds.MAX_HEADS), ("head_size", bounds.MAX_HEAD_SIZE),
                             ("head_size_v", bounds.MAX_HEAD_SIZE), ("sliding_window", bounds.MAX_TOKENS),
                             ("attention_chunk_size", bounds.MAX_TOKENS)):
            v = getattr(s, field, None)
            if isinstance(v, int) and v > bound:
                raise ConfigError(path, None, f"layer {ls.name}: {field} {v:,} is above kvplan's plausibility bound "
                                              f"of {bound:,}", "fix the config (docs/reference.md: Plausibility bounds)")


def _info(p: _Parsed, dtype: str, res: families.FamilyResult | None = None) -> ModelInfo:
    facts = families.text_facts(p.text, p.family, res)
    return ModelInfo(
        source=p.source,
        config=p.raw,
        model_type=p.model_type,
        architecture=p.architecture,
        family=p.family,
        num_hidden_layers=facts.num_hidden_layers,
        dtype=dtype,
        max_position_embeddings=facts.max_position_embeddings,
        attention_chunk_size=facts.attention_chunk_size,
        is_hybrid_mamba=facts.is_hybrid_mamba,
        mamba_chunk_size=facts.mamba_chunk_size,
        provenance=p.source.provenance,
        text_config=p.text.raw,
        num_mtp_layers=families.mtp_count(p.text, p.family, p.architecture),
        sparse_mla=_sparse_mla(p),
    )


def _sparse_mla(p: _Parsed) -> bool:
    """DeepSeek-V3.2's sparse MLA (vLLM's ``hasattr(hf_config, "index_topk")`` on a DeepSeek config)."""
    return p.family == "deepseek" and families.is_v32(p.text, None)


def _model_dtype(p: _Parsed, options: ServingOptions) -> tuple[str, str]:
    return resolve_model_dtype(options.dtype, p.model_type, config_dtype(p.raw, p.text.raw))


def load_model_info(model: str, *, revision: str | None = None, download: bool = False,
                    options: ServingOptions = ServingOptions()) -> ModelInfo:
    """Resolve and parse one model (no layer specs)."""
    p = _parse(resolve_model(model, revision=revision, download=download))
    dtype, _ = _model_dtype(p, options)
    return _info(p, dtype)


# ------------------------------------------------------------------ PP partition

def get_pp_indices(num_hidden_layers: int, pp_rank: int, pp_size: int,
                   partition: tuple[int, ...] | None = None) -> tuple[int, int]:
    """vllm/distributed/utils.py ``get_pp_indices``: ``partition`` (a checked
    ``VLLM_PP_LAYER_PARTITION``, see ``parse_pp_partition``) when given; otherwise
    ``num_hidden_layers // pp_size`` each, the remainder one layer each to the partitions
    before the last (``partitions[-2], partitions[-3], ...``), the last keeps the final norm."""
    if partition is not None:
        parts = list(partition)
    else:
        per = num_hidden_layers // pp_size
        parts = [per] * pp_size
        for i in range(2, num_hidden_layers % pp_size + 2):
            parts[-i] += 1
    start = sum(parts[:pp_rank])
    return start, start + parts[pp_rank]


def parse_pp_partition(text: str, num_hidden_layers: int, pp_size: int) -> tuple[tuple[int, ...] | None, str | None]:
    """``VLLM_PP_LAYER_PARTITION`` as ``get_pp_indices`` reads it (vLLM 0.18.0 distributed/utils.py
    lines 110-121, 0.34.0 lines 227-238): ``(partition, None)``, or ``(None, the ValueError text)``
    when it is not integers, has not pp_size entries or does not sum to the layer count. Negative
    entries pass here (0.34.0 refuses them: the engine's ``pp_partition_negative_check``)."""
    try:
        parts = tuple(int(layer) for layer in text.split(","))
    except ValueError:
        return None, f"Invalid partition string: {text}"
    if len(parts) != pp_size:
        return None, f"len(partitions)={len(parts)} does not match pp_size={pp_size}."
    if sum(parts) != num_hidden_layers:
        return None, f"sum(partitions)={sum(parts)} does not match num_hidden_layers={num_hidden_layers}."
    return parts, None


def _check_parallel(options: ServingOptions) -> None:
    for name, v in (("--tensor-parallel-size", options.tensor_parallel_size),
                    ("--pipeline-parallel-size", options.pipeline_parallel_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise OptionError(f"{name} must be a positive integer, got {v!r}")
    if options.num_speculative_tokens is not None and (
        isinstance(options.num_speculative_tokens, bool) or not isinstance(options.num_speculative_tokens, int)
        or options.num_speculative_tokens < 1
    ):
        raise OptionError(f"--num-speculative-tokens must be a positive integer, got {options.num_speculative_tokens!r}")


# ------------------------------------------------------------------ the public entry

def build_model_layout(model: str, drafter: str | None = None, options: ServingOptions = ServingOptions(),
                       **read) -> ModelLayout:
    """The ordered per-layer specs vLLM registers for ``model`` (+ ``drafter``) under ``options``;
    ``read``: ``draft_model_layout``'s ``revision``, ``download`` and ``hf_overrides`` (which changes the
    target's config as vLLM's ``--hf-overrides`` does). The block size is ``options``'
    (``resolve_block_size``); an engine that decides it from the model's attention runs
    ``draft_model_layout``, decides, and passes its decision to ``finish_model_layout``."""
    return finish_model_layout(draft_model_layout(model, drafter, options, **read))


def draft_model_layout(
    model: str,
    drafter: str | None = None,
    options: ServingOptions = ServingOptions(),
    *,
    revision: str | None = None,
    download: bool = False,
    hf_overrides: dict | None = None,
) -> ModelDraft:
    """``build_model_layout`` up to the block size: the config read, the dtypes decided, and the
    attention facts an engine's block-size rule reads (``ModelDraft.attention()``)."""
    _check_parallel(options)
    notes: list[str] = []
    warnings: list[str] = []
    source = resolve_model(model, revision=revision, download=download)
    p = _parse(source, hf_overrides)
    if p.source.note:
        warnings.append(p.source.note)
    served: _Parsed | None = None  # a speculators checkpoint served as the model (it becomes the drafter)
    served_method = None
    if p.speculators is not None:
        # vLLM's maybe_override_with_speculators (transformers_utils/config.py, 0.34.0 lines 833-925, run by
        # create_engine_config before the model config): the verifier named in the checkpoint is served,
        # the checkpoint is the drafter; --hf-overrides and the rest apply to the verifier.
        served = p if not hf_overrides else _parse(source)
        served_method, _, verifier = drafters.speculators_spec(_speculators(served), source.path)
        notes.append(f"{source.model_id} is a speculators checkpoint: vLLM serves its verifier {verifier} with it "
                     f"as the {served_method} drafter")
        p = _parse(resolve_model(verifier, download=download), hf_overrides)
        if p.source.note:
            warnings.append(p.source.note)
    dtype, dtype_how = _model_dtype(p, options)
    notes.append(f"model dtype {dtype} ({dtype_how})")

    # DeepSeek-V3.2 (DeepseekV32ForCausalLM.verify_and_update_config): fp8* → fp8_ds_mla, bfloat16 → auto.
    sparse_mla = _sparse_mla(p)
    cache_opt = options.kv_cache_dtype
    if sparse_mla and (cache_opt or "").lower().startswith("fp8") and cache_opt.lower() != "fp8_ds_mla":
        notes.append(f"DeepSeek-V3.2: --kv-cache-dtype {cache_opt} becomes fp8_ds_mla (656 bytes per token)")
        cache_opt = "fp8_ds_mla"
    elif sparse_mla and (cache_opt or "").lower() == "bfloat16":
        cache_opt = "auto"
    quant = p.raw.get("quantization_config")
    cache_str, cache_dtype, cache_note = resolve_cache_dtype(cache_opt, dtype, quant if isinstance(quant, dict) else None,
                                                             options.release)
    if cache_note:
        notes.append(cache_note + (" (read from hf_quant_config.json beside config.json, as vLLM does)"
                                   if p.quant_file and "resolves" in cache_note else ""))

    skip = tuple(options.kv_cache_dtype_skip_layers)
    if cache_str.startswith("turboquant_") or cache_str == "ultraquant_4bit":
        # TurboQuantConfig.get_boundary_skip_layers (turboquant/config.py lines 178-214): the first and
        # last 2 layers of a model that is not a Mamba hybrid keep the model dtype
        n = families.kv_dtype_counts(p.text)[2]
        boundary = () if p.family in families.HYBRID_FAMILIES else \
            tuple(str(i) for i in sorted({*range(min(2, n // 2)), *range(n - min(2, n // 2), n)}))
        if boundary:
            notes.append(f"--kv-cache-dtype {cache_str}: layers {', '.join(boundary)} keep {dtype} "
                         "(vLLM's boundary layers, TurboQuantConfig.get_boundary_skip_layers)")
        skip = tuple(sorted(set(skip) | set(boundary), key=lambda x: (not x.isdigit(), int(x) if x.isdigit() else 0, x)))
    return ModelDraft(model=model, drafter=drafter, options=options, download=download, source=source, parsed=p,
                      served=served, served_method=served_method, dtype=dtype, cache_str=cache_str,
                      cache_dtype=cache_dtype, notes=tuple(notes), warnings=tuple(warnings),
                      use_mla=p.family == "deepseek", sparse_mla=sparse_mla, skip_layers=skip)


def _kv_cache_dtype_per_layer(built: list, draft: ModelDraft, block_decision) -> list:
    """Each attention layer's KV as vLLM 0.34.0's layer builds it: a skipped layer (its index in
    ``draft.skip_layers``, or ``sliding_window`` named there for a windowed layer: attention.py lines
    321-336, mla_attention.py lines 505-512) keeps the model dtype (``auto``); the others get the
    engine's packing of the cache dtype (``block_decision.packing``: the backend's ``customize_spec``)."""
    skip = set(draft.skip_layers)
    pack = getattr(block_decision, "packing", None)
    if draft.cache_str == "auto" or (not skip and pack is None):
        return built
    out = []
    for b, src in built:
        spec = b.spec
        if isinstance(spec, AttentionSpec):
            windowed = spec.kind == SLIDING
            if str(b.layer_index) in skip or (windowed and "sliding_window" in skip):
                changes: dict[str, Any] = {"dtype": draft.dtype}
                if hasattr(spec, "cache_dtype_str"):
                    changes["cache_dtype_str"] = "auto"
                spec = dataclasses.replace(spec, **changes)
                shared = getattr(block_decision, "skipped_sliding", None)
                if windowed and shared is not None:
                    block, padded = shared.block(spec.real_page_size_bytes // spec.block_size)
                    spec = dataclasses.replace(spec, block_size=block, page_size_padded=padded)
            elif pack is not None:
                slots, content = pack.of(spec.num_kv_heads, spec.head_size, spec.head_size_v)
                if slots is not None or content is not None:
                    spec = dataclasses.replace(spec, num_head_slots=slots, state_content_bytes=content)
            b = dataclasses.replace(b, spec=spec)
        out.append((b, src))
    return out


def _sliding_refusal(built: list, draft: ModelDraft, block_decision):
    """The engine's decision with its ``sliding_refusal`` as the refusal when a sliding-window layer keeps
    the quantized cache dtype and comes before any full layer that does (vLLM builds the layers in order;
    the first whose backend the selector cannot find stops the start-up)."""
    refusal = getattr(block_decision, "sliding_refusal", None)
    if refusal is None or block_decision.refusal is not None and not _first_quantized_sliding(built, draft):
        return block_decision
    if any(isinstance(b.spec, AttentionSpec) and b.spec.kind == SLIDING and b.spec.dtype != draft.dtype
           for b, _ in built):
        return dataclasses.replace(block_decision, refusal=refusal)
    return block_decision


def _first_quantized_sliding(built: list, draft: ModelDraft) -> bool:
    first = next((b for b, _ in built if isinstance(b.spec, AttentionSpec) and b.spec.dtype != draft.dtype), None)
    return first is not None and first.spec.kind == SLIDING


def _block_size(draft: ModelDraft, block_decision, notes: list[str]) -> tuple[int, str]:
    """The block size: the engine's decision (its note appended), else the options' (``resolve_block_size``);
    fp8_ds_mla refused on a model without sparse MLA where the engine does not model the selector."""
    if draft.cache_str == "fp8_ds_mla" and not draft.sparse_mla and getattr(block_decision, "refusal", None) is None:
        # where the engine models the selector (0.34.0), no backend takes it and vLLM's error is the result
        raise OptionError("--kv-cache-dtype fp8_ds_mla is DeepSeek-V3.2's sparse-MLA layout; use fp8 for this model")
    if block_decision is not None:
        if getattr(block_decision, "note", None):
            notes.append(block_decision.note)
        return block_decision.block_size, block_decision.how
    return resolve_block_size(draft.options, use_mla=draft.use_mla, sparse_mla=draft.sparse_mla)


def _speculators(parsed: _Parsed) -> dict:
    """The speculators config of a checkpoint served as the model (only such a checkpoint is ``served``)."""
    assert parsed.speculators is not None, "served is set for a speculators checkpoint only"
    return parsed.speculators


def _served_method(draft: ModelDraft, served: _Parsed, method: str | None, options: ServingOptions,
                   warnings: list[str]) -> tuple[str | None, _Parsed, ServingOptions]:
    """A served speculators checkpoint: its method and drafter replace the user's (vLLM locks them)."""
    if draft.drafter is not None:
        warnings.append(f"--drafter {draft.drafter} is replaced by the served speculators checkpoint {draft.model}: "
                        "vLLM sets speculative_config.model to it")
    if method not in (None, draft.served_method):
        warnings.append(f"--speculative-method {method} is replaced by the checkpoint's {draft.served_method}: vLLM "
                        "locks the method a speculators checkpoint names")
    if not options.speculators_user_config and options.num_speculative_tokens is not None:
        served_tokens = drafters.speculators_spec(_speculators(served), served.source.path)[1]
        warnings.append(f"--num-speculative-tokens {options.num_speculative_tokens} is dropped: this vLLM "
                        "release replaces the user's speculative config with the speculators checkpoint's "
                        f"({served_tokens} tokens)")
        options = dataclasses.replace(options, num_speculative_tokens=None)
    return draft.served_method, served, options


def _drafter_method(draft: ModelDraft, drafter: str, method: str | None, notes: list[str],
                    warnings: list[str]) -> tuple[str | None, _Parsed]:
    """A ``--drafter``: parsed, its method inferred when not given."""
    if method == "mtp":
        raise OptionError("--speculative-method mtp uses the target's own MTP layers; drop --drafter")
    if method == "dspark":
        raise UnsupportedError("--speculative-method dspark with a separate draft checkpoint (Qwen3, Gemma 4, "
                               "MiniMax DSpark drafters) is not modelled yet; kvplan models DeepSeek-V4's DSpark, "
                               "whose stages ship in the target checkpoint (drop --drafter)")
    if method in methods.NO_LAYER_METHODS:
        raise OptionError(f"--speculative-method {method} has no draft model; drop --drafter")
    draft_p = _parse(resolve_model(drafter, revision=None, download=draft.download))
    if draft_p.source.note:
        warnings.append("drafter: " + draft_p.source.note)
    if method is None:
        method, why = drafters.infer_method(draft_p.text, draft_p.architecture)
        notes.append(f"speculative method {method} inferred: {why}")
    return method, draft_p


def _own_method(p: _Parsed, method: str | None, options: ServingOptions, notes: list[str]) -> str | None:
    """No drafter: MTP when the model has MTP layers and tokens are asked for; methods that need a drafter
    refused."""
    has_mtp = families.mtp_count(p.text, p.family, p.architecture) > 0
    if method is None and options.num_speculative_tokens is not None:
        if not has_mtp:
            raise OptionError(
                "--num-speculative-tokens needs a --drafter, --speculative-method ngram, or a model with MTP layers"
            )
        method = "mtp"
        notes.append("speculative method mtp inferred: no drafter and the model has MTP layers")
    if method in ("eagle", "eagle3", "draft_model"):
        raise OptionError(f"--speculative-method {method} needs --drafter (the draft model)")
    if method == "mtp" and not has_mtp:
        raise OptionError(f"{p.source.path}: --speculative-method mtp needs MTP layers, and this model has none")
    if method == "dspark" and p.family != "deepseek_v4":
        raise UnsupportedError(f"--speculative-method dspark: vLLM's DSpark drafter for {p.architecture} is not "
                               "modelled yet; kvplan models DeepSeek-V4's (its stages in the target checkpoint)")
    return method


def _speculative_method(draft: ModelDraft, notes: list[str], warnings: list[str]
                        ) -> tuple[str | None, _Parsed | None, ServingOptions]:
    """Speculative decoding's method, the drafter's parsed config and the options (a served speculators
    checkpoint drops the user's token count): needed before the Mamba specs."""
    options = draft.options
    method = drafters.check_method(options.speculative_method)
    if draft.served is not None:
        return _served_method(draft, draft.served, method, options, warnings)
    if draft.drafter is not None:
        method, draft_p = _drafter_method(draft, draft.drafter, method, notes, warnings)
        return method, draft_p, options
    return _own_method(draft.parsed, method, options, notes), None, options


def _num_speculative_tokens(draft: ModelDraft, method: str | None, options: ServingOptions,
                            draft_p: _Parsed | None, notes: list[str]) -> tuple[int, bool]:
    """``(num_speculative_tokens, missing)``. vLLM's SpeculativeConfig (0.18.0, 0.33.0, 0.34.0): a draft model's
    config n_predict is the default (a served speculators checkpoint: its speculators config's, which
    maybe_override_with_speculators copies); suffix decoding has its own; every other method (EAGLE, draft
    models, ngram and MTP, whose draft config is only built once num_speculative_tokens is given) is refused at
    start-up (prechecks.check_speculative). The layers are then built with 0."""
    num_spec = options.num_speculative_tokens
    if method is None or num_spec is not None:
        return num_spec or 0, False
    n_predict, n_source = None, "the draft config's n_predict"
    if draft.served is not None:
        n_predict, n_source = drafters.served_speculators_tokens(_speculators(draft.served), draft.served.source.path)
    elif draft_p is not None:
        n_predict = families.draft_n_predict(draft_p.text)
    elif method == "dspark":
        n_predict, n_source = families.dspark_block_size(draft.parsed.text), "the checkpoint's dspark_block_size"
    if n_predict:
        notes.append(f"num_speculative_tokens {n_predict} (vLLM's default: {n_source})")
        return n_predict, False
    if method == "suffix":
        notes.append(f"num_speculative_tokens {options.suffix_default_tokens} (vLLM's default for suffix decoding)")
        return options.suffix_default_tokens, False
    return 0, True


def _drafter_layers(draft_p: _Parsed, method: str | None, dctx: Context, res: FamilyResult, n: int,
                    last: int) -> tuple[list[Built], list[str]]:
    """A drafter's layers (an EAGLE head's, named after the target's, or a draft model's own) and its
    KV-sharing layers."""
    if method not in ("eagle", "eagle3"):  # draft_model
        d_res = families.draft_model_layers(draft_p.text, dctx, draft_p.family, last)
        return d_res.layers, list(d_res.kv_sharing)
    if draft_p.family != "llama":
        raise ConfigError(
            draft_p.source.path, "architectures",
            f"{draft_p.architecture!r} is not a Llama-style EAGLE head kvplan models",
            "use an EAGLE/EAGLE-3/P-EAGLE Llama drafter, or --speculative-method draft_model",
        )
    d_layers = families.eagle_layers(draft_p.text, dctx, target_layers=n, target_window=res.model_window,
                                     last_index=last)
    n_sw = sum(1 for b in d_layers if b.spec.kind == "sliding_window")
    dctx.notes.append(
        f"{method} drafter: {plural(len(d_layers), 'layer')} named model.layers.{n}..{n + len(d_layers) - 1}"
        + (f", {n_sw} sliding" if n_sw else ", all full")
        + (f" (inherits the target's model-wide window {res.model_window})" if res.model_window and n_sw else "")
    )
    return d_layers, []


def _pp_stages(built: list[tuple[Built, str]], n: int, options: ServingOptions, notes: list[str]
               ) -> tuple[list[tuple[str, ...]], list[tuple[int, int]], tuple[int, ...] | None, str | None]:
    """Each pipeline stage's layer names (drafter layers on the last), its decoder-layer bounds and the
    ``VLLM_PP_LAYER_PARTITION`` read (or its error)."""
    pp = options.pipeline_parallel_size
    partition, partition_error = (None, None)
    if options.pp_layer_partition is not None:  # vLLM reads it for every stage count, 1 included
        partition, partition_error = parse_pp_partition(options.pp_layer_partition, n, pp)
        if partition is not None:
            notes.append(f"VLLM_PP_LAYER_PARTITION={options.pp_layer_partition}: layers per stage "
                         + ", ".join(map(str, partition)))
    ranks = []
    bounds = [get_pp_indices(n, r, pp, partition) for r in range(pp)]
    for r, (start, end) in enumerate(bounds):
        stage = [b.name for b, src in built if src == "target" and start <= b.layer_index < end]
        if r == pp - 1:
            stage += [b.name for b, src in built if src == "drafter"]
        ranks.append(tuple(stage))
    if pp > 1:
        notes.append("PP partition (vLLM get_pp_indices): " + ", ".join(f"stage {r}: layers {s}-{e - 1}"
                                                                         for r, (s, e) in enumerate(bounds)))
    return ranks, bounds, partition, partition_error


def _canonical(layers: tuple[LayerSpec, ...]) -> tuple[LayerSpec, ...]:
    """One object per distinct spec: the engine buckets layers by spec equality, and a dict lookup on the same
    object skips the field-by-field comparison."""
    canonical: dict = {}
    return tuple(
        ls if canonical.setdefault(ls.spec, ls.spec) is ls.spec else dataclasses.replace(ls, spec=canonical[ls.spec])
        for ls in layers
    )


def finish_model_layout(draft: ModelDraft, block_decision=None, *, inventory: bool = False) -> ModelLayout:
    """The layout of a ``ModelDraft`` with the engine's block-size decision (an object with
    ``block_size``, ``how`` and an optional ``note``, decided from ``draft.attention()``); None: the
    options' block size (``resolve_block_size``). ``inventory``: count the weights too (``ModelLayout.inventory``,
    for a budget), from the config views the family rules read."""
    p, dtype, cache_str, cache_dtype = draft.parsed, draft.dtype, draft.cache_str, draft.cache_dtype
    notes, warnings = list(draft.notes), list(draft.warnings)
    block_size, block_how = _block_size(draft, block_decision, notes)
    notes.append(f"block size {block_size} ({block_how})")
    method, draft_p, options = _speculative_method(draft, notes, warnings)
    num_spec, num_spec_missing = _num_speculative_tokens(draft, method, options, draft_p, notes)

    target_cache = (cache_dtype, cache_str)
    if p.architecture in families.CACHE_CONFIG_NOT_PASSED and cache_str != "auto":
        target_cache = (dtype, "auto")
        warnings.append(f"--kv-cache-dtype {cache_str} does not reach {p.architecture}'s attention layers: vLLM builds "
                        "them without the cache config, so they keep the model dtype")
    ctx = Context(
        path=p.source.path, architecture=p.architecture, model_type=p.model_type, tp=options.tensor_parallel_size,
        block_size=block_size, cache_dtype=target_cache[0], cache_dtype_str=target_cache[1], model_dtype=dtype,
        disable_sliding_window=options.disable_sliding_window, num_spec=num_spec if method else 0,
        notes=notes, warnings=warnings, nemotron_h_ssm_cache_dtype=options.nemotron_h_ssm_cache_dtype,
    )
    res = families.FAMILIES[p.family].layers(p.text, ctx)
    target_info = _info(p, dtype, res)
    n = res.num_hidden_layers
    last = n  # PP index for drafter/MTP layers: past the last target layer → last stage

    built: list[tuple[Built, str]] = [(b, "target") for b in res.layers]
    kv_sharing = list(res.kv_sharing)
    drafter_info: ModelInfo | None = None
    dctx: Context | None = None

    if method == "mtp":
        mtp = families.mtp_layers(p.text, ctx, p.family, n, last, p.architecture)
        built += [(b, "drafter") for b in mtp]
        ctx.notes.append(f"MTP: {plural(len(mtp), 'layer')} from the target config, after the target's layers")
    elif method == "dspark" and not num_spec_missing:  # missing: vLLM refuses before it builds the drafter
        stages = families.dspark_layers(p.text, p.family, n, last)
        built += [(b, "drafter") for b in stages]
        ctx.notes.append(f"DSpark: {plural(len(stages), 'stage')} from the target checkpoint (model.layers.{n}.."
                         f"{n + len(stages) - 1}), each a sliding-window cache only")
    elif draft_p is not None:
        dctx = Context(
            path=draft_p.source.path, architecture=draft_p.architecture, model_type=draft_p.model_type,
            tp=options.tensor_parallel_size, block_size=block_size, cache_dtype=cache_dtype,
            cache_dtype_str=cache_str, model_dtype=dtype, disable_sliding_window=options.disable_sliding_window,
            num_spec=num_spec, notes=notes, warnings=warnings,
        )
        d_layers, d_sharing = _drafter_layers(draft_p, method, dctx, res, n, last)
        kv_sharing += d_sharing
        built += [(b, "drafter") for b in d_layers]
        drafter_info = _info(draft_p, dtype)

    built = _kv_cache_dtype_per_layer(built, draft, block_decision)
    block_decision = _sliding_refusal(built, draft, block_decision)
    layers = tuple(LayerSpec(name=b.name, spec=b.spec, source=src, index=i) for i, (b, src) in enumerate(built))
    _check_spec_bounds(p.source.path, layers)
    names = [b.name for b, _ in built]
    if len(set(names)) != len(names):  # pragma: no cover - a naming bug, never a user error
        raise AssertionError("duplicate layer names")
    ranks, bounds, partition, partition_error = _pp_stages(built, n, options, notes)
    layers = _canonical(layers)
    counted = model_inventory(p.text, target_info, method,
                              (draft_p.text, drafter_info) if drafter_info is not None and draft_p is not None else None) \
        if inventory else None
    return ModelLayout(
        target=target_info,
        drafter=drafter_info,
        speculative_method=method,
        num_speculative_tokens=num_spec if method else 0,
        layers=layers,
        ranks=tuple(ranks),
        tensor_parallel_size=options.tensor_parallel_size,
        block_size=block_size,
        block_size_decision=block_decision,
        kv_cache_dtype=options.kv_cache_dtype,
        kv_sharing_layers=tuple(kv_sharing),
        warnings=tuple(warnings),
        notes=tuple(notes),
        config_facts=config_facts(p.raw, p.architecture, layers, method,
                                  drafter_info.config if drafter_info else None),
        pp_partition=partition,
        pp_partition_error=partition_error,
        pp_bounds=tuple(bounds),
        num_speculative_tokens_missing=num_spec_missing,
        inventory=counted,
        tp_checks=tuple(dict.fromkeys([("target", *c) for c in ctx.tp_checks]
                                      + [("drafter", *c) for c in (dctx.tp_checks if dctx else [])])),
    )
