"""One deployment, typed: made once at the edge from a ``Scenario`` (the option table's values,
each already parsed by its option), with the era resolved once into an ``Era`` object.

The stages below the edge take only the parts they read (``kvplan.usecases.scenario``):
model (``ModelInput``, ``ServingInput``, era) → ``ModelLayout``; budget (layout, ``BudgetInput``,
``SchedulerInput``, ``ServingInput``, era) → the KV budget; engine (layout, budget,
``SchedulerInput``, ``ServingInput``, era) → ``Plan``. Every scenario option lands in exactly one
part, under its own name and with its Scenario type (``tests/test_deployment.py`` checks both).
"""

from dataclasses import field, fields, replace
from typing import TYPE_CHECKING

from kvplan.frozen import dataclass, make_dataclass
from kvplan import options as _o

from kvplan.budget.hardware import GpuCard
from kvplan.budget.request import BudgetInput
from kvplan.engines.vllm.eras import Era


# The type each option kind parses to (Option.parse): sizes in bytes, max_model_len in tokens
# (-1 = auto-fit), --gpu-memory in GiB, the VLLM_* variables, --model-map and --set as text maps.
# A kind missing here fails on import (the Scenario cannot be generated), not at the first use.
KIND_TYPES: dict[str, type] = {
    _o.STR: str, _o.INT: int, _o.FLOAT: float, _o.SIZE: int, _o.GIB: float, _o.LENGTH: int, _o.BOOL: bool,
    _o.TRISTATE: bool, _o.CHOICE: str, _o.JSON: dict, _o.POLICY_NAME: str, _o.ENV: dict[str, str],
    _o.MAP: dict[str, str], _o.SETTINGS: dict[str, str], _o.INTS: tuple[int, ...],
}


def _field_type(o) -> object:
    """An option's Scenario field type: its kind's type, ``| None`` unless the table gives a default."""
    if o.kind not in KIND_TYPES:
        raise TypeError(f"option {o.name}: kind {o.kind!r} has no type in kvplan.usecases.deployment.KIND_TYPES")
    t = KIND_TYPES[o.kind]
    return t if o.default is not None else t | None


@dataclass(frozen=True)
class ModelInput:
    """Which checkpoints to read, and how (the model layer's input); ``model_read`` and
    ``drafter_read``: the names read after ``--model-map`` (resolved at the edge)."""

    model: str
    drafter: str | None = None
    revision: str | None = None
    download: bool = False
    hf_overrides: dict | None = None
    model_map: dict[str, str] | None = None
    model_read: str | None = None
    drafter_read: str | None = None

    def __post_init__(self) -> None:
        if self.model_read is None:  # built without the edge: no map, the names are read as given
            if self.model_map:
                raise ValueError("ModelInput with a model_map: make it with deployment_of (the map is read there)")
            object.__setattr__(self, "model_read", self.model)
            object.__setattr__(self, "drafter_read", self.drafter)


@dataclass(frozen=True)
class ServingInput:
    """How vLLM serves the model: parallelism, dtypes, the drafter, the block size / attention
    backend, and the ``VLLM_*`` variables (the variables given plus kvplan's own environment)."""

    speculative_method: str | None = None
    num_speculative_tokens: int | None = None
    parallel_drafting: bool | None = None
    block_size: int | None = None
    attention_backend: str | None = None
    kv_cache_dtype: str = "auto"
    kv_cache_dtype_skip_layers: str | None = None
    dtype: str = "auto"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    data_parallel_size: int = 1
    enable_expert_parallel: bool = False
    disable_sliding_window: bool = False
    env: dict[str, str] | None = None

    def lmcache(self) -> dict:
        """LMCache's own settings from the ``LMCACHE_*`` variables (``kvplan.engines.vllm.offload.lmcache_settings``)."""
        from kvplan.engines.vllm.offload import lmcache_settings

        return lmcache_settings(self.env)


@dataclass(frozen=True)
class SchedulerInput:
    """The scheduler's and KV-cache manager's options; ``card_batch_defaults`` is
    ``(max_num_batched_tokens, max_num_seqs)`` that ``vllm serve`` picks for the card
    (``kvplan.budget.hardware.vllm_batch_defaults``), resolved at the edge."""

    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enable_chunked_prefill: bool | None = None
    async_scheduling: bool | None = None
    model_runner: str | None = None
    enable_prefix_caching: bool | None = None
    mamba_cache_mode: str | None = None
    disable_hybrid_kv_cache_manager: bool | None = None
    kv_transfer_config: dict | None = None
    kv_offloading_size: float | None = None
    kv_offloading_backend: str | None = None
    num_gpu_blocks_override: int | None = None
    kv_events: bool = False
    card_batch_defaults: tuple[int, int] = (8192, 1024)

    def transfer_config(self, *, simple_offload: bool = False, era=None, num_kv_ranks: int = 1) -> dict | None:
        """``kv_transfer_config`` as vLLM holds it after its post-init: the offloading flags install
        their connector (``kvplan.engines.vllm.offload.transfer_config``; ``simple_offload``:
        ``VLLM_USE_SIMPLE_KV_OFFLOAD`` as the release reads it)."""
        from kvplan.engines.vllm.offload import transfer_config

        return transfer_config(self.kv_transfer_config, self.kv_offloading_size, self.kv_offloading_backend,
                               simple_offload=simple_offload, era=era, num_kv_ranks=num_kv_ranks)

    def batch_sizes(self, max_model_len: int | None = None) -> tuple[int, int]:
        """``(max_num_batched_tokens, max_num_seqs)``: as given, else the card's defaults. With the
        length vLLM's config holds (``max_model_len``), the rest of
        ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` (0.18.0, 0.33.0 and 0.34.0
        alike): a default token budget is raised to max_model_len without chunked prefill and
        capped at max_num_seqs x max_model_len; a default max_num_seqs is capped at the tokens.
        ``--performance-mode throughput`` (0.17.0+) doubles each default before those caps (0.17.0
        engine/arg_utils.py:2127-2132, 0.29.0 arg_utils.py:2904-2909, 0.34.0 arg_utils.py:3220-3225; run on CPU
        in tests/golden/scheduler/batch_defaults.json)."""
        d_tokens, d_seqs = self.card_batch_defaults
        if getattr(self, "performance_mode", None) == "throughput":  # the option table's field (Option.part)
            d_tokens, d_seqs = 2 * d_tokens, 2 * d_seqs
        tokens, seqs = self.max_num_batched_tokens or d_tokens, self.max_num_seqs or d_seqs
        if max_model_len and max_model_len > 0:
            if self.max_num_batched_tokens is None:
                if self.enable_chunked_prefill is False:
                    tokens = max(max_model_len, tokens)
                tokens = min(seqs * max_model_len, tokens)
            if self.max_num_seqs is None:
                seqs = min(seqs, tokens)
        return tokens, seqs


def _with_table_fields(cls: type, part: str) -> type:
    """``cls`` with a field for each option of the table that names ``part`` (``Option.part``), typed by its kind
    and with its default: such an option is declared once, in the table, and lands in its part here."""
    extra = [(o.name, _field_type(o), field(default=o.default)) for o in _o.scenario_options() if o.part == part]
    if not extra:
        return cls
    made = make_dataclass(cls.__name__, extra, bases=(cls,), frozen=True)
    made.__module__, made.__doc__ = cls.__module__, cls.__doc__
    return made


if not TYPE_CHECKING:  # a type checker sees the declared fields; the table's are read by name (``table_fields``)
    SchedulerInput = _with_table_fields(SchedulerInput, "scheduler")
    ServingInput = _with_table_fields(ServingInput, "serving")


def table_fields(part: object) -> dict[str, object]:
    """The values of the fields a part takes from the option table (``Option.part``), by name."""
    return {o.name: getattr(part, o.name) for o in _o.scenario_options() if o.part is not None and hasattr(part, o.name)}


@dataclass(frozen=True)
class VerifyInput:
    """The cross-check against a real vLLM (a use-case option, no stage reads it)."""

    cross_check: bool = False
    vllm_python: str | None = None
    require_agreement: bool = False


@dataclass(frozen=True)
class PolicyInput:
    """The grouping policy as given: the era's name and a threshold replacing the era's."""

    policy: str = "vllm-latest"
    threshold: float | None = None


PARTS = (ModelInput, ServingInput, SchedulerInput, BudgetInput, VerifyInput, PolicyInput)
# fields a part holds that are resolved at the edge, not options of the table
DERIVED_FIELDS = frozenset({"card_batch_defaults", "model_read", "drafter_read", "card"})


@dataclass(frozen=True)
class Deployment:
    """One deployment, typed, with its era resolved once (``era``: ``policy_era`` with
    ``--threshold`` when given)."""

    source: ModelInput
    serving: ServingInput
    scheduler: SchedulerInput
    budget: BudgetInput
    verify: VerifyInput
    policy: PolicyInput
    policy_era: Era
    era: Era


def _part(cls, values, **derived):
    return cls(**{f.name: getattr(values, f.name) for f in fields(cls) if f.name not in DERIVED_FIELDS}, **derived)


def deployment_of(values) -> Deployment:
    """The typed deployment of a ``Scenario`` (its values already parsed by the option table):
    the policy resolved to its era, the card (``--gpu`` / ``--gpu-memory``) and its batch defaults read, once."""
    from kvplan.options import mapped_model
    from kvplan.engines.vllm.releases import get_era

    policy_era = get_era(values.policy)
    era = era_under(policy_era, values.threshold)
    card, defaults = _card(values.gpu, values.gpu_memory, values.max_num_batched_tokens, values.max_num_seqs, era)
    return Deployment(
        source=_part(ModelInput, values, model_read=mapped_model(values.model, values.model_map),
                     drafter_read=mapped_model(values.drafter, values.model_map)),
        serving=_part(ServingInput, values),
        scheduler=_part(SchedulerInput, values, card_batch_defaults=defaults),
        budget=_part(BudgetInput, values, card=card),
        verify=_part(VerifyInput, values), policy=_part(PolicyInput, values), policy_era=policy_era, era=era)


def _card(gpu: str | None, gpu_memory: float | None, max_num_batched_tokens: int | None, max_num_seqs: int | None,
          era: Era) -> tuple[GpuCard | None, tuple[int, int]]:
    """The card of ``--gpu`` / ``--gpu-memory`` (None without either) and the batch defaults ``vllm serve``
    picks for it (read only where a batch size is left to the default)."""
    from kvplan.budget.hardware import card_batch_defaults, gpu_card

    card = gpu_card(gpu, gpu_memory) if gpu is not None or gpu_memory is not None else None
    defaults = (8192, 1024)
    if max_num_batched_tokens is None or max_num_seqs is None:
        defaults = card_batch_defaults(card, large_tier=era.large_batch_tier)
    return card, defaults


# the part each option lives in (a Deployment field name), for ``changed``
_PART_OF = {f.name: part for part, cls in (("source", ModelInput), ("serving", ServingInput),
                                           ("scheduler", SchedulerInput), ("budget", BudgetInput),
                                           ("verify", VerifyInput), ("policy", PolicyInput))
            for f in fields(cls) if f.name not in DERIVED_FIELDS}
# options whose change re-reads more than their part: the model names (--model-map) and the era
_REDERIVED = frozenset({"model", "drafter", "model_map", "policy", "threshold"})


def changed(d: Deployment, **values) -> Deployment:
    """``d`` with some options set to other typed values (a fix's candidate deployment: kvplan's own
    values, no parsing), each in its part; a new ``--gpu`` / ``--gpu-memory`` reads its card and batch
    defaults again. The model and the policy are not changed here (``deployment_of`` reads them)."""
    unknown = sorted(set(values) - _PART_OF.keys() | set(values) & _REDERIVED)
    if unknown:
        raise ValueError(f"changed(): {', '.join(unknown)} cannot be changed on a made deployment")
    parts: dict[str, dict] = {}
    for name, value in values.items():
        parts.setdefault(_PART_OF[name], {})[name] = value
    new = replace(d, **{part: replace(getattr(d, part), **kv) for part, kv in parts.items()})
    if {"gpu", "gpu_memory"} & values.keys():
        b, sch = new.budget, new.scheduler
        card, defaults = _card(b.gpu, b.gpu_memory, sch.max_num_batched_tokens, sch.max_num_seqs, new.era)
        new = replace(new, budget=replace(b, card=card), scheduler=replace(sch, card_batch_defaults=defaults))
    return new


def era_under(policy_era: Era, threshold: float | None) -> Era:
    """The era a deployment runs under: ``policy_era`` with ``--threshold`` replacing its grouping threshold
    when given. The one place the override is applied: the era below the edge is this object."""
    return policy_era if threshold is None else replace(policy_era, threshold=threshold)


def under(d: Deployment, policy_era: Era, threshold: float | None = None) -> Deployment:
    """``d`` under another era (``policy_era``, with ``threshold`` replacing its own when given)."""
    return replace(d, policy=PolicyInput(policy_era.name, threshold), policy_era=policy_era,
                   era=era_under(policy_era, threshold))
