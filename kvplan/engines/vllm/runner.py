"""Which model runner vLLM picks, whether async scheduling stays on, and so how many
batches are in flight (what a sliding or chunked layer reserves beyond its window).

Read in vLLM 0.33.0 (wheel ``vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl``),
``vllm/config/vllm.py``:

* ``VllmConfig.use_v2_model_runner``: ``VLLM_USE_V2_MODEL_RUNNER`` when set; otherwise V2
  unless ``_get_v2_model_runner_unsupported_features`` names something. Of those, the ones
  a kvplan deployment can reach: speculative method ``suffix``/``custom_class``, and
  ``parallel_drafting`` with a method other than ``dflash``/``dspark`` (P-EAGLE) — "V2
  EagleSpeculator does not support parallel_drafting (for P-Eagle)". (Triton missing,
  external_launcher with PP, heterogeneous-vocabulary drafts and dual batch overlap are
  the others.) With the variable forcing V2 on such a deployment,
  ``_validate_v2_model_runner`` raises ``ValueError("Model Runner V2 does not yet
  support: …")``.
* The async-scheduling default (``__post_init__``, "Async scheduling incompatibilities
  specific to the V1 model runner"): on V1, a speculative method outside the EAGLE/MTP,
  ``ngram_gpu``, ``draft_model``, ``dspark``, ``dflash`` families, or pipeline parallelism,
  turns async scheduling off with a warning when it was not given, and raises when it was
  given explicitly.
* ``max_concurrent_batches``: with async scheduling, ``PP + 1`` on V2, ``2`` on V1 with
  ``PP == 1``; otherwise ``PP``. ``max_in_flight_tokens`` = that × ``max_num_batched_tokens``.

``parallel_drafting`` is ``SpeculativeConfig.parallel_drafting`` as vLLM holds it: the user's value,
else False (0.18.0 config/speculative.py line 132, 0.33.0 line 511), True for dflash/dspark (0.33.0
lines 1581-1582). A P-EAGLE head's ``ptd_token_id`` does not switch it on: the proposer reads the
token only once parallel drafting is on (0.33.0 v1/spec_decode/llm_base_proposer.py line 112,
v1/worker/gpu/spec_decode/utils.py ``get_parallel_drafting_token_id``).

0.34.0 removed the V1 model runner (``platforms/interface.py`` ``validate_environ``:
``VLLM_USE_V2_MODEL_RUNNER`` other than 1 is a ValueError, "Model Runner V1 has been removed"):
one runner, on which EAGLE heads (P-EAGLE included) draft sequentially (only the dflash speculator
config sets ``parallel_drafting``: v1/worker/gpu/spec_decode/speculator_config.py line 54,
dflash/config.py line 20); async scheduling stays on by default (also
with PP), ``max_concurrent_batches`` = ``PP + 1`` with it, ``PP`` without (era
``default_model_runner="v2_only"``; found by ``--cross-check`` against the 0.34.0 wheel).

Up to 0.18 (``envs.VLLM_USE_V2_MODEL_RUNNER`` defaults to 0) V1 is the default and the
reservations use ``max_num_batched_tokens`` alone, so the runner does not change the layout.

0.22.0-0.28.0 keep V1 as the default but give V2 to the models ``_is_default_v2_model_runner_model``
picks (era ``v2_runner_by_model``, the architecture list ``V2_RUNNER_ARCHITECTURES``; ``v2_by_model``),
then drop back to V1 where ``_get_v2_model_runner_unsupported_features`` names something, as 0.29+
does. With one pipeline stage the runner changes no KV figure: both keep two batches in flight with
async scheduling (``max_concurrent_batches``); the engine-defaults goldens of 0.23.0-0.28.0 have the same
block sizes, budgets and log lines for the V2 models as for the V1 ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.frozen import dataclass
from kvplan.engines.vllm.eras import Era
from kvplan.engines.vllm.grouping import EngineFailure

if TYPE_CHECKING:  # the model stage's record; the engine only reads its fields
    from kvplan.model.traits import ModelTraits

V2_UNSUPPORTED = "Model Runner V2 does not yet support: {}"
V1_REMOVED = ("VLLM_USE_V2_MODEL_RUNNER=0 is no longer supported: Model Runner V1 has been removed. "
              "Unset this variable.")
V2_FALLBACK_022 = "Model runner v2 does not yet support {}; using the v1 model runner instead."
V2_FALLBACK = "Model Runner V2 does not yet support {}; using the V1 model runner instead."
V1_ASYNC_ERROR = "Async scheduling is not supported by the V1 model runner with {}."
V1_ASYNC_WARNING = "Async scheduling is disabled because the V1 model runner does not support it with {}."
PARALLEL_DRAFTING = "parallel drafting for EAGLE speculative decoding"
# Speculative methods the V1 runner schedules asynchronously (EagleModelTypes incl. MTP,
# NgramGPUTypes, draft_model, dspark, dflash); kvplan's "ngram" is vLLM's CPU n-gram proposer.
V1_ASYNC_METHODS = ("eagle", "eagle3", "mtp", "extract_hidden_states", "ngram_gpu", "draft_model", "dspark", "dflash")


# DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES, by the release that set it (era v2_runner_architectures), read in
# each wheel's vllm/config/vllm.py: 0.22.0 line 69; 0.23.0 lines 69-75; 0.24.0 lines 68-77; 0.25.0 lines 68-74
# (Qwen3, Llama and Mistral left the list: the rule takes every dense model); 0.26.0 lines 68-78; 0.27.0 lines
# 69-79; 0.28.0 lines 69-80. 0.27.0 and 0.28.0 take KimiK3ForConditionalGeneration / DeepseekV4ForCausalLM off
# the list on ROCm (default_v2_model_runner_architectures), which kvplan does not model (it models neither).
_DSV2, _GRANITE_MOE, _QWEN2_MOE = "DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "Qwen2MoeForCausalLM"
_INKLING = ("InklingForCausalLM", "InklingForConditionalGeneration", "LongcatFlashNgramForCausalLM")
V2_RUNNER_ARCHITECTURES: dict[str, frozenset[str]] = {
    "0.22": frozenset({"Qwen3ForCausalLM"}),
    "0.23": frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}),
    "0.24": frozenset({"Qwen3ForCausalLM", _DSV2, _QWEN2_MOE, _GRANITE_MOE, "LlamaForCausalLM",
                       "MistralForCausalLM"}),
    "0.25": frozenset({_DSV2, _QWEN2_MOE, _GRANITE_MOE}),
    "0.26": frozenset({_DSV2, _GRANITE_MOE, *_INKLING, _QWEN2_MOE}),
    "0.27": frozenset({_DSV2, _GRANITE_MOE, *_INKLING, "KimiK3ForConditionalGeneration", _QWEN2_MOE}),
    "0.28": frozenset({_DSV2, "DeepseekV4ForCausalLM", _GRANITE_MOE, *_INKLING, "KimiK3ForConditionalGeneration",
                       _QWEN2_MOE}),
}


def v2_by_model(era: Era, model: ModelTraits) -> bool:
    """``_is_default_v2_model_runner_model`` under the era's rule (for a generate model)."""
    rule = era.v2_runner_by_model
    listed = any(a in V2_RUNNER_ARCHITECTURES[era.v2_runner_architectures] for a in model.architectures)
    if rule == "listed_dense":
        return listed and not model.is_moe and not model.is_quantized
    if rule == "listed":
        return listed
    if (model.is_hybrid and not (rule == "hybrid_if_listed" and listed)) or model.is_attention_free:
        return False
    return listed or not model.is_moe


# The speculative methods the V2 runner drafts with in 0.22.0-0.28.0 (_get_v2_model_runner_unsupported_features):
# eagle, eagle3, mtp (0.22.0 vllm/config/vllm.py:2002); dflash from 0.24.0 (line 2031); dspark from 0.25.0
# (0.25.1 lines 2072-2078), by the era's rule.
_V2_METHODS = {"listed_dense": ("eagle", "eagle3", "mtp"), "listed": ("eagle", "eagle3", "mtp", "dflash")}
_V2_METHODS_LATER = ("eagle", "eagle3", "mtp", "dflash", "dspark")


def v2_unsupported_by_model(era: Era, speculative_method: str | None, parallel_drafting: bool,
                            pp: int) -> list[str]:
    """``_get_v2_model_runner_unsupported_features`` of 0.22.0-0.28.0 for the inputs kvplan models:
    n-gram and other methods the V2 speculator lacks, parallel drafting (0.24.0+: except dflash/dspark,
    which draft in parallel natively), and EAGLE-3 with PP (0.22.0 lines 2000-2013; 0.24.0 lines 2029-2049;
    0.25.1 lines 2070-2087)."""
    if speculative_method is None:
        return []
    methods = _V2_METHODS.get(era.v2_runner_by_model or "", _V2_METHODS_LATER)
    out = []
    if speculative_method in ("ngram", "ngram_gpu"):
        out.append("ngram/ngram_gpu speculative decoding")
    elif speculative_method not in methods:
        out.append(f"speculative method '{speculative_method}'")
    if parallel_drafting and not (speculative_method in methods and speculative_method in PARALLEL_METHODS):
        out.append("parallel drafting for speculative decoding" if era.v2_runner_by_model == "listed_dense"
                   else PARALLEL_DRAFTING)
    if speculative_method == "eagle3" and pp > 1:
        out.append("EAGLE3 with pipeline parallelism")
    return out


def _by_model_reason(era: Era, model: ModelTraits | None, v2: bool) -> str:
    if model is None:
        return f"model runner V1 ({era.name}'s default; the model's architecture is not known to pick V2 by model)"
    arch = ", ".join(model.architectures) or "no architecture"
    if v2:
        why = ("on its DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES"
               if any(a in V2_RUNNER_ARCHITECTURES[era.v2_runner_architectures] for a in model.architectures)
               else "neither MoE, hybrid nor attention-free")
        return f"model runner V2 ({era.name} gives it to {arch}: {why})"
    return f"model runner V1 ({era.name}'s default; {arch} is not one it gives V2)"


@dataclass(frozen=True)
class RunnerChoice:
    runner: str  # "v1" | "v2"
    async_scheduling: bool
    reason: str  # why this runner (and async setting), in words


PARALLEL_METHODS = ("dflash", "dspark")  # the methods that always draft in parallel


def effective_parallel_drafting(era: Era, speculative_method: str | None, given: bool | None) -> bool:
    """``speculative_config.parallel_drafting`` as the release holds it: True for dflash/dspark,
    the user's value up to 0.33 (default False), False for every other method from 0.34.0 (an
    explicit True is refused there: ``prechecks.check_parallel_drafting``)."""
    if speculative_method is None:
        return False
    if speculative_method in PARALLEL_METHODS:
        return True
    return bool(given) if era.parallel_drafting_option == "opt_in" else False


def parallel_drafting_note(era: Era, speculative_method: str | None, given: bool | None,
                           ptd_head: bool) -> str | None:
    """A note when a P-EAGLE head (its config carries ``ptd_token_id``) drafts sequentially."""
    if not ptd_head or effective_parallel_drafting(era, speculative_method, given):
        return None
    if era.parallel_drafting_option == "opt_in":
        return ("the drafter is a P-EAGLE head (ptd_token_id in its config), but vLLM drafts with it sequentially "
                "unless speculative_config.parallel_drafting is set (--parallel-drafting)")
    return ("the drafter is a P-EAGLE head (ptd_token_id in its config); vLLM 0.34.0 drafts EAGLE heads "
            "sequentially (parallel_drafting is only for the dflash and dspark methods)")


def v2_unsupported(speculative_method: str | None, parallel_drafting: bool) -> list[str]:
    """``_get_v2_model_runner_unsupported_features`` for the inputs kvplan models."""
    out = []
    if speculative_method in ("suffix", "custom_class"):
        out.append(f"speculative method '{speculative_method}'")
    if parallel_drafting and speculative_method not in PARALLEL_METHODS:
        out.append(PARALLEL_DRAFTING)
    return out


def resolve_model_runner(era: Era, use_v2: bool | None, async_scheduling: bool | None, *, pp: int,
                         speculative_method: str | None, parallel_drafting: bool,
                         logs: list[str], model: ModelTraits | None = None) -> RunnerChoice:
    """The runner and the async-scheduling setting vLLM ends up with (raises EngineFailure
    where vLLM refuses the combination at config time). ``model``: what the by-model rule of
    0.22-0.28 reads (None: not known, the release's default runner)."""
    if async_scheduling is None and not era.async_scheduling_by_default:
        async_scheduling = False  # off unless asked for, up to 0.13 (eras.async_scheduling_by_default)
    if era.default_model_runner == "v1" and era.v2_runner_by_model and use_v2 is None:
        # 0.22.0 vllm/config/vllm.py:493-516: the by-model rule, then the features V2 does not support
        v2 = model is not None and v2_by_model(era, model)
        unsupported = v2_unsupported_by_model(era, speculative_method, parallel_drafting, pp) if v2 else []
        reason = (f"model runner V1: V2 does not yet support {', '.join(unsupported)}" if unsupported
                  else _by_model_reason(era, model, v2))
        if unsupported:  # logger.warning_once (0.22.0 line 510; "Model Runner V2", "V1" from 0.23.0 line 536)
            text = V2_FALLBACK_022 if era.v2_runner_by_model == "listed_dense" and era.messages == "0.22" \
                else V2_FALLBACK
            logs.append(text.format(", ".join(unsupported)))
        return RunnerChoice("v2" if v2 and not unsupported else "v1", async_scheduling is not False, reason)
    if era.default_model_runner == "v1":
        runner = "v2" if use_v2 else "v1"
        how = "given" if use_v2 is not None else f"{era.name}'s default"
        return RunnerChoice(runner, async_scheduling is not False, f"model runner {runner.upper()} ({how})")
    if era.default_model_runner == "v2_only":
        if use_v2 is False:
            raise EngineFailure("ValueError", V1_REMOVED, "config")
        return RunnerChoice("v2", async_scheduling is not False,
                            f"model runner V2 ({'given' if use_v2 else 'the only one: V1 was removed in 0.34.0'})")
    unsupported = v2_unsupported(speculative_method, parallel_drafting)
    if use_v2 is None:
        runner = "v1" if unsupported else "v2"
        reason = (f"model runner V1: V2 does not yet support {', '.join(unsupported)}" if unsupported
                  else "model runner V2 (the release's default)")
    else:
        runner = "v2" if use_v2 else "v1"
        reason = f"model runner {runner.upper()} (given)"
        if runner == "v2" and unsupported:
            raise EngineFailure("ValueError", V2_UNSUPPORTED.format(", ".join(unsupported)), "config")
    incompat = None
    if runner == "v1":
        if speculative_method is not None and speculative_method not in V1_ASYNC_METHODS:
            incompat = f"{speculative_method}-based speculative decoding"
        elif pp > 1:
            incompat = "pipeline parallelism"
    if incompat is None:
        return RunnerChoice(runner, async_scheduling is not False, reason)
    if async_scheduling:
        raise EngineFailure("ValueError", V1_ASYNC_ERROR.format(incompat), "config")
    if async_scheduling is None:
        logs.append(V1_ASYNC_WARNING.format(incompat))
        reason += f"; async scheduling off (V1 does not support it with {incompat})"
    return RunnerChoice(runner, False, reason)


def max_concurrent_batches(era: Era, choice: RunnerChoice, pp: int) -> int:
    """Batches whose tokens a sliding/chunked layer must hold at once (0.32+; 1 before)."""
    if not era.in_flight_batches:
        return 1
    if choice.async_scheduling:
        if choice.runner == "v2":
            return pp + 1
        if pp <= 1:
            return 2
    return pp


DCP_SLIDING = "DCP not support sliding window."

