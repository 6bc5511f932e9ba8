"""vLLM's checks before the KV cache: configurations ``vllm serve`` refuses while it builds its
config or the model, predicted as start-up failures (``EngineFailure``; exit 3) with vLLM's own
text, for every command (simulate, fit, check and compare all run ``plan.simulate``).

Each check names where vLLM raises it (file and line in the 0.18.0, 0.33.0 and 0.34.0 wheels)
and the exception the process dies with. vLLM's configs are pydantic
dataclasses: a ``ValueError`` (or, in 0.18.0's DCP checks, an ``AssertionError``) raised while one
validates reaches the user as pydantic's ``ValidationError`` ("1 validation error for ModelConfig /
Value error, <vLLM's text>"), so ``error_type`` is ``ValidationError`` there and ``error`` vLLM's
text; the stage names the check.

Checks run in the order ``EngineArgs.create_engine_config`` meets them (0.18.0, 0.33.0 and
0.34.0 alike): ``ModelConfig`` (max_model_len), ``ParallelConfig`` (TP and decode-context
parallelism), ``SpeculativeConfig`` (num_speculative_tokens, parallel_drafting), ``SchedulerConfig`` (batch sizes),
``VllmConfig.__post_init__`` (the float KV dtype, then ``ModelConfig.verify_with_parallel_config``:
attention heads and TP, KV heads and DCP), then the model's
construction (``get_pp_indices`` and ``VLLM_PP_LAYER_PARTITION``, the attention layer's KV-head
assert) and the drafter's first run (its hidden size). The texts of the config checks were
confirmed by running each release's ``create_engine_config`` on kvplan's cases
(``scripts/golden/precheck_runner.py``, results in ``tests/data/prechecks_vllm.json``).

Not a check in any of the three releases (read): PP larger than the layer count
(``get_pp_indices`` gives the extra stages no layers; ``create_engine_config`` accepts
``-pp 40`` for a 32-layer model), a hidden-size mismatch between target and EAGLE drafter at
config time, and an EAGLE method that does not match the head (``--speculative-method eagle``
with an EAGLE-3 head passes ``create_engine_config``; it fails when vLLM resolves the draft's
architecture, which kvplan does not model).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from kvplan.engines.vllm.runner import PARALLEL_METHODS
from kvplan.engines.vllm.wording import dcp_text, wording
from kvplan.errors import EngineFailure, OptionError

STAGE_MAX_MODEL_LEN = "config.max_model_len"
STAGE_SPECULATIVE = "config.speculative"
STAGE_DCP = "config.decode_context_parallel"
STAGE_SCHEDULER = "config.scheduler"
STAGE_KV_CACHE_DTYPE = "config.kv_cache_dtype"
STAGE_MAMBA_BLOCK_SIZE = "config.mamba_block_size"
STAGE_TENSOR_PARALLEL = "config.tensor_parallel"
STAGE_PP_PARTITION = "model_init.pp_layer_partition"
STAGE_PP_SUPPORT = "config.pipeline_parallel"
STAGE_DRAFTER_PP_SUPPORT = "config.speculative_pipeline_parallel"
STAGE_KV_HEADS = "model_init.tensor_parallel_kv_heads"
STAGE_DRAFTER_HIDDEN = "model_init.drafter_hidden_size"
STAGE_ATTENTION_BACKEND = "model_init.attention_backend"
STAGE_LORA = "config.lora"
STAGE_LORA_VOCAB = "model_init.lora_vocab"
STAGE_EPLB = "config.eplb"
STAGE_CUDAGRAPH_SIZES = "config.cudagraph_sizes"

LONG_MAX_MODEL_LEN_WARNING = (
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position "
    "encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute position "
    "encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error."
)


def before_kv_cache(stage: str | None) -> bool:
    """Whether a failure stage is one of vLLM's config or model-construction checks (no memory
    budget changes it), as opposed to the KV-cache stages (grouping, admission, auto-fit)."""
    return stage is not None and (stage == "config" or stage.startswith(("config.", "model_init.")))


def _fmt(value) -> str:
    """A number as Python's f-string prints it (``131072.0`` after RoPE scaling, ``4096``)."""
    return str(value)


def check_max_model_len(facts, options, logs: list[str]) -> None:
    """``_get_and_verify_max_len`` (config/model.py, the message at 0.18.0 line 2066, 0.33.0 line
    2664, 0.34.0 line 2708; the same text in all three): a given --max-model-len above the derived
    maximum (and above the config's own model_max_length) is a ValueError, unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN is set, when it is a warning."""
    derived = facts.derived_max_len
    mml = options.max_model_len
    if derived is None or mml in (None, -1) or not mml > derived.value:
        return
    model_max_length = derived.model_max_length
    if model_max_length is not None and mml <= model_max_length:
        return
    msg = (f"User-specified max_model_len ({mml}) is greater than the derived max_model_len ({derived.key}="
           f"{_fmt(derived.value)} or model_max_length={model_max_length} in model's config.json).")
    if options.allow_long_max_model_len:
        logs.append(f"{msg} {LONG_MAX_MODEL_LEN_WARNING}")
        return
    raise EngineFailure("ValidationError", f"{msg} To allow overriding this maximum, set the env var "
                        f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. {LONG_MAX_MODEL_LEN_WARNING}", STAGE_MAX_MODEL_LEN)


def check_pp_partition(facts, era) -> None:
    """``get_pp_indices`` with ``VLLM_PP_LAYER_PARTITION`` (distributed/utils.py: 0.18.0 lines
    110-121, 0.34.0 lines 227-238), called while the model is built: not integers, not one entry
    per stage, or not summing to the layer count is a ValueError; 0.34.0 also refuses negative
    entries. Before 0.34.0 a negative entry gave stages with negative ranges (not modelled)."""
    if facts.pp_partition_error:
        raise EngineFailure("ValueError", facts.pp_partition_error, STAGE_PP_PARTITION)
    parts = facts.pp_partition
    if parts is None or all(p >= 0 for p in parts):
        return
    text = ",".join(map(str, parts))
    if era.pp_partition_negative_check:
        raise EngineFailure("ValueError", f"Negative layer count in partition_list_str={text!r}.", STAGE_PP_PARTITION)
    raise OptionError(f"--env VLLM_PP_LAYER_PARTITION={text}: negative layer counts are not modelled for "
                      f"{era.release or era.name} (vLLM 0.34.0 refuses them); give each stage 0 or more layers")


def _heads_error(heads: int, tp: int) -> str:
    return f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})."


def _split(facts, source: str, kind: str) -> list[int]:
    return [total for src, k, total, _ in facts.tp_checks if src == source and k == kind]


# SpeculativeConfig._verify_args, the same text in 0.18.0 (config/speculative.py lines 762-767),
# 0.33.0 (lines 1946-1951) and 0.34.0 (lines 1653-1658): a method without a draft model (ngram;
# MTP, whose draft config vLLM builds only once num_speculative_tokens is given) and no
# num_speculative_tokens. Run in each release (tests/data/prechecks_vllm.json).
SPEC_TOKENS_REQUIRED = ("num_speculative_tokens must be provided with speculative model unless the draft model "
                        "config contains an n_predict parameter.")
NO_DRAFT_MODEL_METHODS = ("mtp", "ngram")


def speculative_tokens_error(method: str | None, missing: bool, era) -> str | None:
    """vLLM's text for a speculative method without num_speculative_tokens (None when given or
    defaulted): a draft model (EAGLE heads, draft models) is refused while its config is read
    (``wording.spec_tokens_missing``: 0.18.0 config/speculative.py line 566, 0.33.0 line 1615,
    0.34.0 v1/worker/gpu/spec_decode/speculator_config.py line 223); ngram and MTP by
    ``_verify_args`` (``SPEC_TOKENS_REQUIRED``)."""
    if not missing:
        return None
    if method in NO_DRAFT_MODEL_METHODS:
        return SPEC_TOKENS_REQUIRED
    return wording(era).spec_tokens_missing


def check_speculative(facts, options, era, logs: list[str]) -> None:
    """``SpeculativeConfig``: a speculative method with neither ``num_speculative_tokens`` nor a
    default (the draft config's ``n_predict``; suffix decoding's), in every family
    (``speculative_tokens_error``). Then the draft model's own ``verify_with_parallel_config``
    (``_verify_args``; the draft runs at the target's TP), the same text as the target's; then
    ``parallel_drafting`` (``check_parallel_drafting``)."""
    error = speculative_tokens_error(facts.speculative_method, facts.num_speculative_tokens_missing, era)
    if error:
        raise EngineFailure("ValidationError", error, STAGE_SPECULATIVE)
    tp = options.tensor_parallel_size
    for heads in _split(facts, "drafter", "heads"):
        if heads % tp:
            raise EngineFailure("ValidationError", _heads_error(heads, tp), STAGE_SPECULATIVE)
    check_drafter_pp_support(facts, options, era)
    check_parallel_drafting(facts, options, era, logs)


# SpeculativeConfig._verify_args in 0.34.0 (config/speculative.py lines 1688-1697), after the draft
# model's verify_with_parallel_config: parallel_drafting is deprecated. Run in 0.34.0
# (tests/data/prechecks_vllm.json); 0.18.0 and 0.33.0 accept the key (a bool, default False).
PARALLEL_DRAFTING_REFUSED = "parallel_drafting is only supported by the dflash and dspark methods, not {method!r}."
PARALLEL_DRAFTING_DEPRECATED = ("parallel_drafting is deprecated and has no effect: dflash and dspark always draft "
                                "in parallel, and no other method supports it. It will be removed in a future release.")


def check_parallel_drafting(facts, options, era, logs: list[str]) -> None:
    """An explicit ``speculative_config.parallel_drafting`` where the era deprecated it (0.34.0):
    True with a method other than dflash/dspark is a ValueError, any other explicit value a
    warning. Not a check before 0.34 (``Era.parallel_drafting_option``)."""
    given, method = options.parallel_drafting, facts.speculative_method
    if era.parallel_drafting_option != "deprecated" or given is None or method is None:
        return
    if given and method not in PARALLEL_METHODS:
        raise EngineFailure("ValidationError", PARALLEL_DRAFTING_REFUSED.format(method=method), STAGE_SPECULATIVE)
    logs.append(PARALLEL_DRAFTING_DEPRECATED)


def check_dcp_parallel(options, era) -> None:
    """``ParallelConfig._validate_parallel_config``: decode-context parallelism reuses the TP ranks,
    so TP must divide by DCP (texts: ``wording.DCP_TEXTS``)."""
    dcp, tp = options.decode_context_parallel_size, options.tensor_parallel_size
    if dcp > 1 and tp % dcp:
        raise EngineFailure("ValidationError", dcp_text(era, "tp", tp=tp, dcp=dcp), STAGE_DCP)


def check_dcp_kv_heads(facts, options, era) -> None:
    """``ModelConfig.verify_with_parallel_config`` for GQA/MQA (MLA is exempt): with DCP each rank
    must hold a replica of a KV head, so TP must exceed the KV heads, DCP is at most TP // KV heads,
    and the query heads per KV head must divide by DCP (texts: ``wording.DCP_TEXTS``)."""
    dcp, tp, kv = options.decode_context_parallel_size, options.tensor_parallel_size, facts.total_num_kv_heads
    if dcp <= 1 or facts.use_mla or not kv:
        return
    if tp <= kv:
        raise EngineFailure("ValidationError", dcp_text(era, "tp_gt_kv", tp=tp, kv=kv), STAGE_DCP)
    max_dcp = tp // kv
    if dcp > max_dcp:
        raise EngineFailure("ValidationError", dcp_text(era, "max", tp=tp, kv=kv, max_dcp=max_dcp, dcp=dcp),
                            STAGE_DCP)
    heads = facts.total_num_attention_heads
    if heads and (heads // kv) % dcp:
        raise EngineFailure("ValidationError", dcp_text(era, "q_per_kv", q=heads // kv, dcp=dcp), STAGE_DCP)


def check_scheduler(options, max_model_len: int) -> None:
    """``SchedulerConfig.verify_max_model_len`` (config/scheduler.py: 0.18.0 lines 251-270,
    0.33.0 lines 317-336, 0.34.0 lines 361-380; the same texts), on the batch sizes vLLM settled
    on (``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``) and the length the
    config holds (the given one, or the derived one for ``auto``)."""
    tokens, seqs = options.max_num_batched_tokens, options.max_num_seqs
    if tokens < max_model_len and options.enable_chunked_prefill is False:
        raise EngineFailure("ValidationError", (
            f"max_num_batched_tokens ({tokens}) is smaller than max_model_len ({max_model_len}). This effectively "
            "limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. "
            "Please increase max_num_batched_tokens or decrease max_model_len."), STAGE_SCHEDULER)
    if tokens < seqs:
        raise EngineFailure("ValidationError", f"max_num_batched_tokens ({tokens}) must be greater than or equal "
                            f"to max_num_seqs ({seqs}).", STAGE_SCHEDULER)


def check_float_kv_cache(facts, era) -> None:
    """``VllmConfig._reject_mismatched_float_kv_cache`` (config/vllm.py: 0.33.0 line 1492, 0.34.0
    line 1431): an explicit float16/bfloat16 KV dtype that is not the model's. Not in 0.18.0,
    whose ``create_engine_config`` accepts it (``Era.float_kv_cache_check``)."""
    cache, model = facts.kv_cache_dtype, facts.model_dtype
    if not era.float_kv_cache_check or cache not in ("float16", "bfloat16") or model == cache:
        return
    allowed = f"`auto` or `{model}`" if model in ("float16", "bfloat16") else "`auto`"
    raise EngineFailure("ValidationError", f'kv_cache_dtype="{cache}" is incompatible with dtype="{model}". '
                        f"Please set `--kv-cache-dtype` to {allowed}.", STAGE_KV_CACHE_DTYPE)


def check_attention_heads(facts, options, era) -> None:
    """``ModelConfig.verify_with_parallel_config`` (config/model.py: 0.18.0 line 1073, 0.33.0 line
    1561, 0.34.0 line 1581; the same text), called from ``VllmConfig.__post_init__``; its
    pipeline-parallel check (``check_pp_support``) and decode-context-parallel checks follow
    (``check_dcp_kv_heads``)."""
    tp = options.tensor_parallel_size
    for heads in _split(facts, "target", "heads")[:1] or [facts.total_num_attention_heads]:
        if heads and heads % tp:
            raise EngineFailure("ValidationError", _heads_error(heads, tp), STAGE_TENSOR_PARALLEL)
    check_pp_support(facts, options, era)
    check_dcp_kv_heads(facts, options, era)


# Which registered architectures' classes lack SupportsPP, release by release: generated from the goldens
# tests/golden/pp_support/<release>.json (scripts/golden/pp_support.py, read from each release's registry and
# model files, cross-checked against the release's own supports_pp) by ``scripts/regenerate.py pp-support``.
PP_SUPPORT_TABLE = Path(__file__).with_name("pp_support.json")


@cache
def _pp_table() -> dict:
    return json.loads(PP_SUPPORT_TABLE.read_text())


def _stands_for(era) -> str:
    """``Era.stands_for`` read from its fields (``kvplan.version.stands_for``): the check reads the era's data only."""
    from kvplan.version import stands_for

    return stands_for(era.release, era.releases, era.first_release)


def lacks_pp(architecture: str, release: str) -> bool:
    """Whether vLLM ``release`` registers ``architecture`` with a class that fails its ``supports_pp`` (False
    for an architecture it does not register: kvplan then says nothing about PP)."""
    return _within(_pp_table()["lacking"].get(architecture, ()), release)


def _within(runs, release: str) -> bool:
    """Whether ``release`` falls in one of ``runs`` (``pp_support.json``'s inclusive [first, last] release pairs)."""
    from kvplan.version import version_key

    k = version_key(release)
    return any(version_key(a) <= k <= version_key(b) for a, b in runs)


def next_pp_release(architecture: str, release: str) -> str | None:
    """The first golden release after ``release`` whose class for ``architecture`` supports PP (None: none)."""
    from kvplan.version import version_key

    k = version_key(release)
    later = [a for a, _ in _pp_table()["supported"].get(architecture, ()) if version_key(a) > k]
    return min(later, key=version_key, default=None)


def check_pp_support(facts, options, era) -> None:
    """``ModelConfig.verify_with_parallel_config`` (0.10.1-0.10.2 config/__init__.py lines 1318/1368, 0.11.0+
    config/model.py, 0.34.0 line 1594; the same text in every release, ``pp_support.json`` "checks"): with
    --pipeline-parallel-size above 1, ``registry.is_pp_supported_model`` must hold for the model's class
    (``supports_pp``: SupportsPP in its MRO and a ``forward`` taking ``intermediate_tensors``), else
    ``NotImplementedError``; e.g. GptOssForCausalLM lacks SupportsPP in 0.10.1 and 0.10.1.1 (gpt_oss.py line
    229: ``class GptOssForCausalLM(nn.Module):``) and has it from 0.10.2 (line 616). Raised inside the config's
    validation, it reaches the user as the NotImplementedError itself (pydantic wraps only ValueError and
    AssertionError): run, 0.10.1's ``create_engine_config`` refuses gpt-oss-20b at -pp 2 so and 0.10.2's
    accepts it (tests/data/prechecks_vllm.json). The drafter's own check (``SpeculativeConfig._verify_args`` verifies the draft config with
    the target's PP up to 0.29.0) is ``check_drafter_pp_support``."""
    pp, architecture = options.pipeline_parallel_size, facts.architecture
    if pp <= 1 or not architecture or not lacks_pp(architecture, _stands_for(era)):
        return
    raise EngineFailure("NotImplementedError", _pp_table()["text"], STAGE_PP_SUPPORT)


# EAGLEConfig (transformers_utils/configs/eagle.py: 0.10.1 lines 48-62, 0.29.0 lines 42-73) renames the draft
# config's architectures so that the registry finds the head's class: LlamaForCausalLM -> Eagle3LlamaForCausalLM
# (method: the prefix, and the names kept as they are: starting with it, or for eagle3/dflash ending with it)
_DRAFT_PREFIX = {"eagle": ("Eagle", False), "eagle3": ("Eagle3", True), "dflash": ("DFlash", True)}
# create_draft_parallel_config: the draft runs at the target's PP up to 0.29.0 (config/speculative.py 0.29.0 line
# 1690; 0.10.1 config/__init__.py line 2309), at PP 1 from 0.30.0 (line 1755)
DRAFT_PP_ONE_FROM = (0, 30)


def draft_architecture(method: str | None, architecture: str | None) -> str | None:
    """The architecture vLLM looks a draft model up by: the EAGLE rename for eagle/eagle3/dflash heads, the
    config's own for draft_model; None where kvplan does not know it (the speculators format's, ngram and suffix
    decoding, which have no draft config) and for MTP, whose draft is the target's config rewritten per release
    (``mtp_draft_architecture``)."""
    if not architecture or architecture.endswith("Speculator"):
        return None
    if method == "draft_model":
        return architecture
    if method not in _DRAFT_PREFIX:
        return None
    prefix, suffix_too = _DRAFT_PREFIX[method]
    kept = architecture.startswith(prefix) or (suffix_too and architecture.endswith(prefix))
    return architecture if kept else prefix + architecture


def mtp_draft_architecture(model_type: str | None, architecture: str | None, release: str) -> str | None:
    """The architecture vLLM looks an MTP draft up by in ``release``: with ``method: mtp`` the draft config is the
    target's own config rewritten by ``SpeculativeConfig.hf_config_override`` (0.29.0 config/speculative.py line
    643), which picks the MTP class by the target's model_type (e.g. deepseek_v3 -> DeepSeekMTPModel, lines
    661-676; qwen3_5_moe -> Qwen3_5MoeMTP, lines 882-899) or, for a few, by its architectures[0] (e.g.
    Glm4MoeForCausalLM -> Glm4MoeMTPModel, line 754; MiMoV2FlashForCausalLM -> MiMoV2MTPModel, line 737); the
    model_type's answer first (an architecture branch compares architectures[0], which a model_type branch above
    it has already replaced). The release's own function, run on stand-in configs (``pp_support.json``
    "mtp_draft", from tests/golden/pp_support/<release>.json "mtp_override"). None: the release maps neither."""
    table = _pp_table()["mtp_draft"]
    for key, name in (("model_type", model_type), ("architecture", architecture)):
        for arch, runs in table[key].get(name or "", {}).items():
            if _within(runs, release):
                return arch
    return None


def _draft_class(facts, release: str) -> str | None:
    """The architecture the drafter's SupportsPP check looks up (``draft_architecture``,
    ``mtp_draft_architecture``)."""
    if facts.speculative_method == "mtp":
        return mtp_draft_architecture(facts.model_type, facts.architecture, release)
    return draft_architecture(facts.speculative_method, facts.drafter_architecture)


def check_drafter_pp_support(facts, options, era) -> None:
    """``SpeculativeConfig._verify_args`` verifies the draft model's config with its own parallel config
    (``draft_model_config.verify_with_parallel_config``: 0.10.1 config/__init__.py line 2338, 0.29.0
    config/speculative.py line 1749; ``pp_support.json`` "draft_checks"), the same SupportsPP check as the
    target's; up to 0.29.0 the draft runs at the target's PP (``create_draft_parallel_config``:
    "draft_pp_target"), so an EAGLE head (whose ``forward`` takes no ``intermediate_tensors``) or an MTP draft
    class without SupportsPP (e.g. DeepSeekMTPModel and Qwen3_5MoeMTP up to 0.29.0) refuses PP > 1. Run:
    Llama-3.1-8B with the EAGLE3-LLaMA3.1 head at -pp 2 is refused by 0.19.0 and 0.29.0 and accepted by 0.30.0;
    Qwen3.5-35B-A3B with MTP at -pp 2 likewise (tests/data/prechecks_vllm.json)."""
    from kvplan.version import version_key

    pp, release = options.pipeline_parallel_size, _stands_for(era)
    if pp <= 1 or version_key(release) >= DRAFT_PP_ONE_FROM:
        return
    arch = _draft_class(facts, release)
    if arch and lacks_pp(arch, release):
        raise EngineFailure("NotImplementedError", _pp_table()["text"], STAGE_DRAFTER_PP_SUPPORT)


def drafter_pp_support_fix(facts, release: str) -> str:
    """The one-line fix for ``check_drafter_pp_support``: a release whose draft runs at PP 1, or no drafter (for
    MTP, whose draft is the target's own layers: no MTP speculative decoding)."""
    first = ".".join(map(str, DRAFT_PP_ONE_FROM)) + ".0"
    drop = "serve without MTP" if facts.speculative_method == "mtp" else "drop the drafter"
    return (f"--policy vllm=={first} (the draft model runs at PP 1 from {first}; "
            f"{_draft_class(facts, release)} lacks SupportsPP), "
            f"or {drop}, or --pipeline-parallel-size 1")


def pp_support_fix(architecture: str, release: str, tp: int, pp: int) -> str:
    """The one-line fix for ``check_pp_support``: the same GPUs as tensor parallelism, or the next release whose
    class supports PP (when one does)."""
    nxt = next_pp_release(architecture, release)
    return (f"--tensor-parallel-size {tp * pp} --pipeline-parallel-size 1 ({architecture} lacks SupportsPP in "
            f"vllm=={release})" + (f", or --policy vllm=={nxt} (the first release after it whose {architecture} "
                                   "supports PP)" if nxt else ""))


def check_kv_heads(facts, options) -> None:
    """The attention layer's own split (e.g. ``LlamaAttention.__init__``, model_executor/models/
    llama.py: 0.34.0 lines 148-155): with at least TP KV heads they must divide by TP, with fewer
    TP must be a multiple of them (each rank then holds a replica). A bare ``assert``: vLLM prints
    no text, so the message is kvplan's. The families record the counts they split (MLA's latent
    is not split)."""
    tp = options.tensor_parallel_size
    for source in ("target", "drafter"):
        for kv in _split(facts, source, "kv_heads"):
            if kv >= tp and kv % tp:
                why = f"total_num_kv_heads ({kv}) % tp_size ({tp}) != 0"
            elif kv < tp and tp % kv:
                why = f"tp_size ({tp}) % total_num_kv_heads ({kv}) != 0"
            else:
                continue
            raise EngineFailure("AssertionError", f"(vLLM's assert has no message; kvplan:) the {source}'s {why}: "
                                "each rank must hold whole KV heads, or TP must be a multiple of them", STAGE_KV_HEADS)


def check_drafter_hidden_size(facts) -> None:
    """EAGLE/EAGLE-3 heads read the target's hidden states: ``llama_eagle3.py`` sizes its ``fc``
    for ``target_hidden_size`` (the draft config's, else its own ``hidden_size``) times the
    auxiliary layers (0.34.0 lines 218-221), EAGLE-1 for its own hidden size. A target with
    another hidden size fails when the drafter first runs (torch: "mat1 and mat2 shapes cannot be
    multiplied"), before the KV cache; vLLM checks nothing earlier, so the message is kvplan's."""
    expected, actual = facts.drafter_target_hidden_size, facts.target_hidden_size
    if expected is None or actual is None or expected == actual:
        return
    raise EngineFailure("RuntimeError", f"(kvplan:) the {facts.speculative_method} drafter was trained on hidden "
                        f"states of size {expected}, but the target's are {actual}: its fc layer cannot take them "
                        "(torch: mat1 and mat2 shapes cannot be multiplied); use a drafter trained for this target",
                        STAGE_DRAFTER_HIDDEN)


def check_config_stage(facts, options, era, logs: list[str], max_model_len: int) -> None:
    """The checks ``create_engine_config`` runs before vLLM builds a layer (no layer rule needed), in
    vLLM's order: the length, DCP against TP, the speculative config, the scheduler's batch sizes, the
    attention heads against TP (and the GQA DCP checks when the KV heads are known). For a model
    kvplan has no layer rule for: vLLM refuses these before it would meet the model class."""
    check_max_model_len(facts, options, logs)
    check_dcp_parallel(options, era)
    check_speculative(facts, options, era, logs)
    check_scheduler(options, max_model_len)
    check_attention_heads(facts, options, era)


def check_nvfp4_mla(facts, era) -> None:
    """``VllmConfig.validate_nvfp4_kv_cache_with_mla`` (config/vllm.py 0.34.0 lines 3553-3580, a model
    validator run after ``__post_init__``): a plain NVFP4 cache (``nvfp4``, ``nvfp4_4over6``) on an MLA model.
    Read in 0.34.0 only (``Era.kv_cache_packing``)."""
    cache = facts.kv_cache_dtype
    if era.kv_cache_packing and facts.use_mla and cache.startswith("nvfp4") and not cache.endswith("_ds_mla"):
        raise EngineFailure("ValidationError", (
            "nvfp4 KV cache is not supported with MLA (Multi-head Latent Attention) backends. Please use a "
            "different --kv-cache-dtype (e.g., 'fp8', 'auto', or 'nvfp4_ds_mla' with a sparse MLA backend) for "
            "MLA models such as DeepSeek."), STAGE_KV_CACHE_DTYPE)


def check_mamba_block_size(facts, options, era, max_model_len: int) -> None:
    """``VllmConfig.validate_mamba_block_size`` (config/vllm.py 0.34.0 lines 3582-3594, a model validator run after
    ``__post_init__``, after ``validate_nvfp4_kv_cache_with_mla``; the same check since 0.11.2, the release that added
    ``--mamba-block-size``): a Mamba block size given, other than the length the config holds, needs prefix caching
    as resolved. The default (``EngineArgs`` 0.34.0 lines 3112-3113: ``ModelConfig.is_prefix_caching_supported``,
    config/model.py lines 2283-2335): on for a generative decoder, off for an attention-free model, the era's
    default for a hybrid one (``Era.hybrid_prefix_caching_default``). Where it is accepted, the value reaches the
    Mamba alignment of the releases with ``mamba_cache_mode='all'`` (``hybrid.align_hybrid_mamba``: 0.31.0
    platforms/interface.py lines 942-975 align the attention block to it instead of the model's chunk size); from
    0.32.0 align mode sets it to the block size, and the KV cache does not change."""
    given = options.mamba_block_size
    if given is None or given == max_model_len:
        return
    prefix = options.enable_prefix_caching
    if prefix is None:
        traits = facts.traits
        if traits is not None and traits.is_attention_free:
            prefix = False
        else:
            prefix = era.hybrid_prefix_caching_default if traits is not None and traits.is_hybrid else True
    if not prefix:
        raise EngineFailure("ValidationError", "--mamba-block-size can only be set with --enable-prefix-caching",
                            STAGE_MAMBA_BLOCK_SIZE)


def check_attention_backend(facts) -> None:
    """The attention layer's ``get_attn_backend`` (model_executor/layers/attention/attention.py 0.34.0
    lines 364-373): when no backend of the GPU takes the layer's --kv-cache-dtype, the selector raises
    ``ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(...)`` while the
    model is built (``block_size.select_backend``: the text, each backend's reasons)."""
    decision = facts.block_size_decision
    refusal = getattr(decision, "refusal", None)
    if refusal:
        raise EngineFailure("ValueError", refusal, STAGE_ATTENTION_BACKEND)


def check_lora(facts, options, era) -> None:
    """``LoRAConfig``'s validation with ``--enable-lora`` (without it vLLM makes no LoRAConfig and ignores the
    LoRA flags: ``EngineArgs.create_engine_config``): the rank one of the release's allowed values (0.11.x
    ``possible_max_ranks``, config/lora.py lines 103-108, a ValueError; 0.12+ the ``MaxLoRARanks`` Literal, a
    ValidationError), ``max_cpu_loras`` at least ``max_loras`` (``_validate_lora_config``, 0.19.0 lines 100-107);
    then, while the model is wrapped, ``LogitsProcessorWithLoRA.create_lora_weights`` refuses a vocabulary over
    257,024 (up to 0.15) or 258,048 (0.17+) where the class wraps lm_head (kvplan.budget.lora), and a class that
    does not implement SupportsLoRA is refused (``load_lora_model``: "does not support LoRA yet")."""
    if not options.enable_lora:
        return
    from kvplan.budget.lora import allowed_ranks, class_support, max_vocab

    release = _stands_for(era)
    rank = options.max_lora_rank or 16
    ranks = allowed_ranks(release)
    if rank not in ranks:
        if ranks[0] == 1:
            raise EngineFailure("ValidationError", f"1 validation error for LoRAConfig\nmax_lora_rank\n  Input should "
                                f"be {', '.join(map(str, ranks[:-1]))} or {ranks[-1]} [input_value={rank}]", STAGE_LORA)
        raise EngineFailure("ValueError", f"max_lora_rank ({rank}) must be one of {ranks}.", STAGE_LORA)
    loras = options.max_loras or 1
    if options.max_cpu_loras is not None and options.max_cpu_loras < loras:
        raise EngineFailure("ValueError", f"max_cpu_loras ({options.max_cpu_loras}) must be >= max_loras ({loras})"
                            + ("" if release.startswith("0.11") or release.startswith("0.10") else "."), STAGE_LORA)
    supports, _, head = class_support(facts.architecture or "", release)
    if supports is False:
        raise EngineFailure("ValueError", f"{facts.architecture} does not support LoRA yet.", STAGE_LORA)
    limit = max_vocab(release)
    if head and facts.vocab_size and facts.vocab_size > limit:
        text = ("When using LoRA, vocab size must be <= 258048" if limit == 258048 else
                "When using LoRA, vocab size must be 32000 >= vocab_size <= 257024")
        raise EngineFailure("ValueError", text, STAGE_LORA_VOCAB)


def check_eplb(options, era) -> None:
    """``ParallelConfig``'s EPLB checks (config/parallel.py: 0.11.0 lines 422-446, 0.34.0 lines 601-633): EPLB
    needs expert parallelism and TP × DP > 1; redundant experts need EPLB."""
    redundant = options.num_redundant_experts
    if options.enable_eplb:
        if not options.enable_expert_parallel:
            raise EngineFailure("ValueError", "enable_expert_parallel must be True to use EPLB.", STAGE_EPLB)
        tp, dp = options.tensor_parallel_size, options.data_parallel_size
        if tp * dp <= 1:
            if _stands_for(era).startswith(("0.10", "0.11")):
                text = ("EPLB requires tensor_parallel_size or data_parallel_size to be greater than 1, but got "
                        f"TP={tp},DP={dp}.")
            else:
                text = f"EPLB requires tensor, prefill-context, or data parallelism, but got TP={tp}, PCP=1, DP={dp}."
            raise EngineFailure("ValueError", text, STAGE_EPLB)
    elif redundant:
        raise EngineFailure("ValueError", f"num_redundant_experts is set to {redundant} but EPLB is not enabled. "
                            "Either enable EPLB or unset num_redundant_experts.", STAGE_EPLB)


def _release_key(era) -> tuple[int, ...]:
    """The release the era stands for, as a sortable tuple (one without a number sorts as the newest)."""
    from kvplan.version import version_key

    return version_key(_stands_for(era)) or (99,)


def check_cudagraph_sizes(options, era) -> None:
    """``--max-cudagraph-capture-size`` exists from 0.11.2 (``CompilationConfig.max_cudagraph_capture_size``, 0.11.2
    config/compilation.py:448, engine/arg_utils.py:1123-1126; before, the scheduler's one-value ``--cuda-graph-sizes``
    set the grid's top): refused in one line before. Given with ``--cudagraph-capture-sizes``, it must be the largest
    size at most max_num_batched_tokens (``_set_cudagraph_sizes``'s ValueError: 0.11.2 config/vllm.py:911, 0.29.0
    config/vllm.py:2171, 0.34.0 config/vllm.py:2519; run on CPU in tests/golden/cudagraph/capture_sizes.json)."""
    cap, sizes = options.max_cudagraph_capture_size, options.cudagraph_capture_sizes
    if cap is None:
        return
    release = _stands_for(era)
    if _release_key(era) < (0, 11, 2):
        raise OptionError(f"--max-cudagraph-capture-size: vllm=={release} has no such flag (from 0.11.2); drop it or "
                          "give --cuda-graph-sizes N (one value: the capture grid's top there)")
    if sizes is None:
        return
    valid = max((s for s in sizes if s <= options.max_num_batched_tokens), default=0)
    if cap != valid:
        raise EngineFailure("ValueError", f"customized max_cudagraph_capture_size(={cap}) should be consistent with "
                            f"the max value of cudagraph_capture_sizes(={valid})", STAGE_CUDAGRAPH_SIZES)


def check_optimization_level(options, era) -> None:
    """``--optimization-level`` exists from 0.12.0 (``VllmConfig.optimization_level``, 0.12.0 config/vllm.py:233;
    0.11.x's ``-O`` is the compilation config's level, another field): refused in one line before. -O0 with a
    cudagraph_mode other than NONE: refused from 0.30.0 (``cudagraph.resolved_mode``)."""
    if options.optimization_level is None:
        return
    release = _stands_for(era)
    if _release_key(era) < (0, 12):
        raise OptionError(f"--optimization-level: vllm=={release} has no such flag (from 0.12.0); drop it, or give "
                          "--cudagraph-memory 0 for -O0's no CUDA graphs")
    mode = options.cudagraph_mode
    if options.optimization_level == 0 and mode not in (None, "NONE") and _release_key(era) >= (0, 30):
        raise OptionError(f"--optimization-level 0 with cudagraph_mode {mode}: not modelled for vllm=={release} "
                          "(from 0.30.0 -O0 keeps the mode's full part, _normalize_piecewise_cudagraph_mode, or all "
                          "of it with breakable CUDA graphs); drop one of them")


def check_performance_mode(options, era) -> None:
    """``--performance-mode`` exists from 0.17.0 (``VllmConfig.performance_mode``, 0.17.0 config/vllm.py:320; not in
    0.16.0's): refused in one line before."""
    if options.performance_mode is None:
        return
    release = _stands_for(era)
    if _release_key(era) < (0, 17):
        raise OptionError(f"--performance-mode: vllm=={release} has no such flag (from 0.17.0); drop it")


def check_config(facts, options, era, logs: list[str], max_model_len: int) -> None:
    """Every check, in vLLM's order; raises ``EngineFailure`` at the first that fails.
    ``max_model_len``: the length vLLM's config holds (the given one, or the derived one)."""
    check_max_model_len(facts, options, logs)
    check_dcp_parallel(options, era)
    check_speculative(facts, options, era, logs)
    check_scheduler(options, max_model_len)
    check_lora(facts, options, era)
    check_eplb(options, era)
    check_cudagraph_sizes(options, era)
    check_optimization_level(options, era)
    check_performance_mode(options, era)
    check_float_kv_cache(facts, era)
    check_attention_heads(facts, options, era)
    check_nvfp4_mla(facts, era)
    check_mamba_block_size(facts, options, era, max_model_len)
    check_pp_partition(facts, era)
    check_kv_heads(facts, options)
    check_attention_backend(facts)
    check_drafter_hidden_size(facts)
