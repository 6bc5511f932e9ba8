"""explain-log's ``recovered``: a start-up log's facts as one summary (the first occurrence of
each; every occurrence is in ``facts``). ``kvplan.usecases.explain_log.recovered`` fills it from
the facts ``kvplan.logs.extract`` reads; ``kvplan.results.to_data`` serialises it.

A key is present only where the log shows it: the fields are ``OMIT_NONE`` (a value read from a
line is never None), except the engine config line's, which may print ``None`` and so are left
``UNSET`` where the line does not show them. Two keys keep the place the log gives them:
``max_model_len`` comes with the engine config line when that line shows it (else after
``architecture``), and ``num_gpu_blocks`` comes after ``attention_backend`` when only the
``Overriding num_gpu_blocks`` line shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from kvplan.results import FLATTEN, OMIT_NONE, UNSET, Unset



def shown():
    """A field whose key is present where the log shows it (None: not shown)."""
    return field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class LoggedEngineConfig:
    """The keys of "Initializing a V1 LLM engine (v…) with config: …" that shape the KV cache
    (``kvplan.logs.extract._CONFIG_KEYS``, in that order; ``max_seq_len`` as ``max_model_len``)."""

    model: str | None | Unset = UNSET
    speculative_config: str | None | Unset = UNSET
    dtype: str | None | Unset = UNSET
    max_model_len: int | None | Unset = UNSET
    tensor_parallel_size: int | None | Unset = UNSET
    pipeline_parallel_size: int | None | Unset = UNSET
    data_parallel_size: int | None | Unset = UNSET
    quantization: str | None | Unset = UNSET
    kv_cache_dtype: str | None | Unset = UNSET
    enable_prefix_caching: bool | None | Unset = UNSET
    enforce_eager: bool | None | Unset = UNSET
    decode_context_parallel_size: int | None | Unset = UNSET


@dataclass(frozen=True)
class LoggedServeCommand:
    """A ``vllm serve`` line pasted with the log, as the serve reader splits it."""

    form: str
    argv: tuple[str, ...]
    env: dict[str, str]
    image_release: str | None = shown()


@dataclass(frozen=True, kw_only=True)
class LoggedOverride:
    """"Overriding num_gpu_blocks=N with num_gpu_blocks_override=M"."""

    num_gpu_blocks: int | None = shown()  # only where no "# GPU blocks" line gave it
    num_gpu_blocks_override: int


@dataclass(frozen=True)
class LoggedAutofit:
    """The auto-fit line: the model's length, the one that fits, and the KV memory it fitted in."""

    original: int
    max_model_len: int
    reduced: bool
    available_gib: float | None = shown()


@dataclass(frozen=True)
class LoggedPadding:
    """"Add N padding layers, may waste at most P% KV cache memory"."""

    num_padding_layers: int
    waste_pct: float


@dataclass(frozen=True)
class LoggedAdmissionError:
    """The admission error: the length that does not fit and what the line says about it (the
    GiB form from V1, the tokens form before)."""

    max_model_len: int
    needed_gib: float | None = shown()
    available_gib: float | None = shown()
    estimated_max_model_len: int | None = shown()
    kv_cache_tokens: int | None = shown()


@dataclass(frozen=True, kw_only=True)
class Recovered:
    """The log's facts as one summary, each key named for the figure it holds (``*_gib`` as the log
    prints it)."""

    release: str | None = shown()
    non_default_args: dict | None = shown()  # the args the line shows (a dict literal or a Namespace)
    serve_command: LoggedServeCommand | None = shown()
    engine_config: LoggedEngineConfig | None = field(default=None, metadata={**FLATTEN, **OMIT_NONE})
    architecture: str | None = shown()
    max_model_len: int | None = shown()  # "Using max model len", where the engine config line has none
    max_num_batched_tokens: int | None = shown()
    async_scheduling: bool | None = shown()
    model_loading_gib: float | None = shown()
    available_kv_cache_memory_gib: float | None = shown()
    kv_cache_measured_gib: float | None = shown()
    kv_cache_measured_num_blocks: int | None = shown()
    kv_cache_memory_bytes_gib: float | None = shown()
    num_gpu_blocks: int | None = shown()
    num_cpu_blocks: int | None = shown()
    kv_cache_size_gib: float | None = shown()
    attention_backend: str | None = shown()
    override: LoggedOverride | None = field(default=None, metadata={**FLATTEN, **OMIT_NONE})
    kv_cache_size_tokens: int | None = shown()
    max_concurrency: float | None = shown()
    attention_block_size: int | None = shown()
    mamba_page_padding_pct: float | None = shown()
    consumed_gib: float | None = shown()
    cuda_graph_gib: float | None = shown()
    weights_gib: float | None = shown()
    kv_cache_memory_bytes_to_fit: int | None = shown()
    gpu_memory_utilization_without_cuda_graphs: float | None = shown()
    concurrency_max_model_len: int | None = shown()  # the length of the "Maximum concurrency" line
    autofit: LoggedAutofit | None = shown()
    padding: tuple[LoggedPadding, ...] | None = shown()  # every padding line
    hybrid_manager_off: tuple[str, ...] | None = shown()  # why, per line ("converted": the model's own)
    admission_error: LoggedAdmissionError | None = shown()
    # failures the log shows by their line alone (True where it does)
    no_memory_error: bool | None = shown()
    drafter_split: bool | None = shown()
    page_error: bool | None = shown()
    autofit_none: bool | None = shown()
