"""vLLM's behaviour, era by era: a registry of named, versioned policies.

Each era is the set of decisions that changed between vLLM releases (reference
§9 and §11). The numbers of an era were checked by running that release's own
functions (``scripts/golden``); ``releases`` lists the wheels checked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from kvplan.errors import OptionError


@dataclass(frozen=True)
class Era:
    name: str
    description: str
    # Grouping threshold: group_size = max bucket when max < min · threshold.
    # None = before vLLM PR #29303: group size is always the smallest bucket.
    threshold: float | None
    # Admission check: "per_layer" (Σ layer reservations, before #29431),
    # "first_group" (#29431 to #36030, released up to 0.18.x), "summed" (0.20+).
    admission: str
    # Capacity log: "blocks" = num_blocks // num_groups · min block_size (≤ 0.20),
    # "concurrency" = int(max_concurrency · max_model_len) (0.33).
    kv_size_log: str
    # Sliding/chunked reservations use max_num_batched_tokens (False) or
    # max_concurrent_batches · max_num_batched_tokens (True, 0.32+).
    in_flight_batches: bool
    # 0.33 keeps the null block out of the admission check and auto-fit.
    null_block_in_check: bool
    # Different page sizes: "none" (0.11: no unification, bare NotImplementedError),
    # "raise" when they do not divide (≤ 0.32), or "pad" the smaller ones (0.33).
    page_mismatch: str
    # Prefix caching default for hybrid Mamba/GDN models (0.33: on, "align" mode).
    hybrid_prefix_caching_default: bool
    # GDN (Qwen gated delta net) 64-token block alignment in "align" mode (0.33).
    gdn_align_tokens: int
    # Message wording, by the release that printed it (checked against the goldens):
    # "0.11" (admission error with 2-decimal GiB, no docs link; "All eagle layers …"),
    # "0.17" ("models's", docs link; two capacity lines), "0.33" ("model's", CPU note,
    # one combined capacity line, "Using LBNHC KV cache layout.").
    messages: str
    # KV-connector rule: "always" disables HMA (≤ V_before), "supports_hma" (0.33).
    kv_transfer_rule: str
    # Whether sliding/chunked/cross specs carry their own head_size_v (PR #40045, 2026-04-24:
    # page = bs·h·(hk + hv)·b). Before it their page was 2·bs·h·hk·b, so MiMo-V2-Flash's
    # sliding layers (K 192, V 128) had a page that does not divide the full one (golden:
    # NotImplementedError on 0.17.1 and 0.18.0).
    window_head_size_v: bool = False
    # KV events (--kv-events-config) turned the hybrid manager off until PR #37688 (2026-04-12).
    kv_events_disable_hma: bool = True
    # 0.33 align mode: Mamba2 and (Hopper, FlashInfer prefill) GDN layers export prefill
    # checkpoints and reserve one more block per request (read in 0.33.0's mamba_mixer2.py,
    # gdn/qwen_gdn_linear_attn.py and kv_cache_interface.MambaSpec.max_memory_usage_bytes).
    mamba_prefill_checkpoints: bool = False
    # The model runner a release picks when nothing forces one (VLLM_USE_V2_MODEL_RUNNER unset):
    # "v1" up to 0.18 (read in 0.18.0's envs.py: default 0), "v2" in 0.33.0 (VllmConfig.use_v2_model_runner).
    default_model_runner: str = "v1"
    releases: tuple[str, ...] = ()
    # How the uniform-page path picks the group size: "threshold" (shipped) or a
    # proposal's name (see proposals.py); proposals are marked, never the default.
    grouping: str = "threshold"
    is_proposal: bool = False

    def with_threshold(self, threshold: float | None) -> "Era":
        return replace(self, threshold=threshold)


_COMMON_OLD = dict(
    kv_size_log="blocks",
    in_flight_batches=False,
    null_block_in_check=False,
    page_mismatch="raise",
    hybrid_prefix_caching_default=False,
    gdn_align_tokens=0,
    messages="0.17",
    kv_transfer_rule="always",
)

ERAS: dict[str, Era] = {
    era.name: era
    for era in (
        Era(
            name="vllm-min",
            description="before PR #29303 (2025-11-24): group size = smallest bucket, per-layer admission",
            threshold=None,
            admission="per_layer",
            releases=("0.11.2",),
            **{**_COMMON_OLD, "messages": "0.11", "page_mismatch": "none"},
        ),
        Era(
            name="vllm-1.25",
            description="PR #29303 to #36684: threshold 1.25, admission counts the first group only",
            threshold=1.25,
            admission="first_group",
            releases=("0.16.0", "0.17.0", "0.17.1"),
            **_COMMON_OLD,
        ),
        Era(
            name="vllm-1.5",
            description="PR #36684 (2026-03-12) to #36030: threshold 1.5, first-group admission",
            threshold=1.5,
            admission="first_group",
            releases=("0.18.0",),
            **_COMMON_OLD,
        ),
        Era(
            name="vllm-latest",
            description="0.33.0: threshold 1.5, summed admission without the null block, "
            "async-scheduling reservations, concurrency-based token log, padded page mismatch",
            threshold=1.5,
            admission="summed",
            kv_size_log="concurrency",
            in_flight_batches=True,
            null_block_in_check=True,
            page_mismatch="pad",
            hybrid_prefix_caching_default=True,
            gdn_align_tokens=64,
            messages="0.33",
            kv_transfer_rule="supports_hma",
            window_head_size_v=True,
            mamba_prefill_checkpoints=True,
            kv_events_disable_hma=False,
            default_model_runner="v2",
            releases=("0.33.0",),
        ),
    )
}

DEFAULT_ERA = "vllm-latest"


def era_names() -> list[str]:
    return list(ERAS)


def release_aliases() -> dict[str, str]:
    """``vllm==0.18.0`` → ``vllm-1.5``: every release an era was checked against."""
    return {f"vllm=={rel}": era.name for era in ERAS.values() for rel in era.releases}


def get_era(name: str) -> Era:
    """Look up an era by name or by a checked release (``vllm==0.33.0``)."""
    key = name.strip()
    if key in ERAS:
        return ERAS[key]
    aliases = release_aliases()
    if key in aliases:
        return ERAS[aliases[key]]
    from kvplan.engines.vllm.proposals import PROPOSALS

    if key in PROPOSALS:
        return PROPOSALS[key]
    choices = ", ".join([*ERAS, *aliases, *PROPOSALS])
    raise OptionError(f"unknown policy '{name}'; choose one of: {choices}")
