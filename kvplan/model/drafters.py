"""Speculative decoding's configuration: the method a drafter implies, the methods vLLM accepts, speculators
checkpoints. The drafter's layers are the family rules' (``families.eagle_layers``, ``draft_model_layers``,
``mtp_layers``).

vLLM loads the drafter with the target's ``VllmConfig`` (reference §6, §12.10): same cache
config, so the same block size and cache dtype (``auto`` → the target's model dtype). Its
attention layers register after the target's, so they come last in registration order.
"""

from __future__ import annotations

import re
from pathlib import Path

from kvplan.errors import ConfigError, OptionError, UnsupportedError
from kvplan.model.families import EAGLE1_ARCHS, EAGLE3_ARCHS
from kvplan.model.hfconfig import HFView
from kvplan.model.methods import SPEC_METHODS, UNMODELLED_METHODS


def infer_method(draft_view: HFView, architecture: str) -> tuple[str, str]:
    """``(method, why)`` for a drafter given without ``--speculative-method``.

    - EAGLE-3 / P-EAGLE architectures (``LlamaForCausalLMEagle3``, ``Eagle3LlamaForCausalLM``,
      ``PEagleDraftModel``) → ``eagle3``;
    - EAGLE-1 heads (``EagleLlamaForCausalLM``, ``LlamaForCausalLMEagle``) → ``eagle``;
    - a ``LlamaForCausalLM`` that carries EAGLE-3 head fields (``draft_vocab_size`` or
      ``eagle_config``; e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) → ``eagle3``;
    - any other causal LM → ``draft_model`` (a separate draft model).
    """
    if architecture in EAGLE3_ARCHS:
        return "eagle3", f"{architecture} is an EAGLE-3 head"
    if architecture in EAGLE1_ARCHS:
        return "eagle", f"{architecture} is an EAGLE head"
    if architecture == "LlamaForCausalLM" and (
        draft_view.raw.get("draft_vocab_size") is not None or draft_view.raw.get("eagle_config") is not None
    ):
        return "eagle3", "a Llama head with draft_vocab_size/eagle_config (EAGLE-3 layout)"
    return "draft_model", f"{architecture} is an ordinary causal LM: a separate draft model"


def check_method(method: str | None) -> str | None:
    if method is None:
        return None
    m = method.strip().lower().strip("[]")
    if m in UNMODELLED_METHODS:
        raise UnsupportedError(f"--speculative-method {m}: vLLM's {m} drafter is not modelled yet; kvplan models "
                               f"{', '.join(SPEC_METHODS)}")
    if m not in SPEC_METHODS:
        raise OptionError(f"--speculative-method {method!r} is not known; use one of {', '.join(SPEC_METHODS)}")
    return m



# ------------------------------------------------------------------ speculators format

# vLLM's speculators reader (vllm/transformers_utils/configs/speculators/algos.py ``update_eagle3``,
# 0.33.0 and 0.34.0 lines 39-46): the layer config's model_type picks the EAGLE-3 head class; any
# other model_type is refused ("Unsupported model_type ... for Eagle3 speculator"). 0.18.0 (line 37)
# always builds Eagle3LlamaForCausalLM. Both heads are Llama-style attention for the KV cache.
SPECULATORS_EAGLE3_ARCHS = {"qwen3": "Eagle3Qwen3ForCausalLM", "llama": "Eagle3LlamaForCausalLM"}
# The speculators_model_type values vLLM 0.34.0 registers (algos.py): eagle3 is modelled; peagle is
# refused by 0.34.0 itself ("P-EAGLE (parallel drafting EAGLE-3) is not supported."); dflash,
# dflash2 and dspark are methods kvplan does not model.
SPECULATORS_TYPES = ("eagle3", "peagle", "dflash", "dflash2", "dspark")


def is_speculators(raw: dict) -> bool:
    """A speculators-format checkpoint (vLLM: ``speculators_config`` present makes a config without
    ``model_type`` a ``SpeculatorsConfig``, transformers_utils/config.py 0.34.0 lines 366-371)."""
    return raw.get("speculators_config") is not None and raw.get("model_type") is None


def speculators_pretrained_config(raw: dict, path: str) -> dict:
    """The Hugging Face config vLLM builds from a speculators checkpoint
    (``SpeculatorsConfig.extract_transformers_pre_trained_config``, base.py 0.34.0 lines 47-63):
    ``transformer_layer_config`` plus the EAGLE-3 fields (``draft_vocab_size``,
    ``target_hidden_size``, ``norm_before_residual`` ..., ``eagle_aux_hidden_state_layer_ids``) and
    the head architecture from the layer's ``model_type`` (``update_eagle3``). The KV cache sees the
    layer config: its ``num_hidden_layers`` attention layers, KV heads and head size."""
    kind = raw.get("speculators_model_type")
    if kind not in SPECULATORS_TYPES:
        raise ConfigError(path, "speculators_model_type", f"{kind!r} is not a speculators type vLLM 0.34.0 reads "
                          f"(Expected one of: {', '.join(SPECULATORS_TYPES)})", "use a speculators-format checkpoint")
    if kind != "eagle3":
        why = ("vLLM 0.34.0 refuses it: P-EAGLE (parallel drafting EAGLE-3) is not supported" if kind == "peagle"
               else f"the {kind} method is not modelled by kvplan")
        raise UnsupportedError(f"{path}: speculators_model_type {kind!r}: {why}; kvplan models speculators EAGLE-3 heads")
    layer = raw.get("transformer_layer_config")
    if not isinstance(layer, dict):
        raise ConfigError(path, "transformer_layer_config", "missing or not a JSON object (vLLM: \"Must provide "
                          "transformer_layer_config\")", "a speculators config carries its draft layer's config there")
    model_type = layer.get("model_type", "llama")
    if model_type not in SPECULATORS_EAGLE3_ARCHS:
        raise ConfigError(path, "transformer_layer_config.model_type", f"Unsupported model_type {model_type} for "
                          "Eagle3 speculator (vLLM 0.33.0-0.34.0)", "use llama or qwen3")
    out = dict(layer)
    out["model_type"] = model_type
    out["architectures"] = [SPECULATORS_EAGLE3_ARCHS[model_type]]
    out["draft_vocab_size"] = raw.get("draft_vocab_size")
    if raw.get("target_hidden_size") is not None:
        out["target_hidden_size"] = raw["target_hidden_size"]
    out["norm_before_residual"] = raw.get("norm_before_residual", True)
    for key in ("norm_before_fc", "fc_norm", "norm_output"):
        out[key] = raw.get(key, False)
    if raw.get("eagle_aux_hidden_state_layer_ids"):
        out["eagle_aux_hidden_state_layer_ids"] = raw["eagle_aux_hidden_state_layer_ids"]
    return out


def speculators_spec(raw: dict, path: str) -> tuple[str, int, str]:
    """``(method, num_speculative_tokens, verifier)`` of a speculators checkpoint served as the model:
    vLLM's ``SpeculatorsConfig.extract_vllm_speculative_config`` (base.py 0.34.0 lines 65-137: the
    first proposal method's ``speculative_tokens``, ``speculators_config.verifier.name_or_path``) and
    ``maybe_override_with_speculators`` (transformers_utils/config.py 0.34.0 lines 833-925: the
    verifier must be a Hub repository id, never a local path)."""
    try:
        spec = raw["speculators_config"]
        tokens = spec["proposal_methods"][0]["speculative_tokens"]
        verifier = spec["verifier"]["name_or_path"]
    except (KeyError, IndexError, TypeError):
        raise ConfigError(path, "speculators_config", "Invalid speculators config structure (vLLM needs "
                          "proposal_methods[0].speculative_tokens and verifier.name_or_path)",
                          "fix the speculators_config block") from None
    view = HFView({"speculative_tokens": tokens}, None, path=path, prefix="speculators_config.proposal_methods[0].")
    tokens = view.check_int("speculative_tokens", tokens)
    if not isinstance(verifier, str) or not re.match(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$", verifier) \
            or Path(verifier).exists():
        raise ConfigError(path, "speculators_config.verifier.name_or_path",
                          "Speculators verifier must name a remote model repository (vLLM 0.33.0-0.34.0)",
                          "Select local verifiers explicitly with --model and --speculative-config "
                          "(kvplan: the verifier as MODEL, this checkpoint as --drafter)")
    return raw["speculators_model_type"], tokens, verifier


def served_speculators_tokens(raw: dict, path: str) -> tuple[int, str]:
    """``(num_speculative_tokens, where from)`` when a speculators checkpoint is served as the model
    and the user gives none: vLLM builds the speculative config from the checkpoint's first proposal
    method (``maybe_override_with_speculators``; a user's --speculative-config updates it in 0.33.0
    and 0.34.0, replaces nothing in 0.18.0, which drops the user's dict). Given as a drafter
    (``--speculative-config '{"model": ...}'``) the checkpoint gives no default: vLLM's draft
    ``SpeculatorsConfig`` has no ``n_predict`` (speculator_config.py 0.34.0 lines 275-282), so
    num_speculative_tokens must be passed."""
    _, tokens, _ = speculators_spec(raw, path)
    return tokens, "speculators_config.proposal_methods[0].speculative_tokens of the served speculators checkpoint"
