"""Prefill/decode disaggregation: what a KV connector requires of the two engines of a P/D pair.

Each side is simulated alone (its own plan); these rules say whether the pair can hand KV over, as
the connector's handshake decides it. Modelled: the NixlConnector of vLLM 0.34.0 in pull mode (the
decode side reads the prefill side's blocks; the decode worker is "local" in its checks), read in
``vllm/distributed/kv_transfer/kv_connector/v1/nixl/`` of that wheel:

- ``metadata.py:149-210`` ``compute_nixl_compatibility_hash``: the two sides hash vLLM's version, the
  model, its dtype, KV heads, head size and layers, the attention backend, the KV cache dtype, whether
  the hybrid manager is on, the hidden-state speculator (method, draft model, its KV dtype) and the
  transfer mode; ``base_worker.py:1268-1285`` refuses a different hash with a RuntimeError (unless
  ``enforce_handshake_compat`` is false).
- ``kv_connector/utils.py:539-565`` ``TransferTopology.tp_ratio`` / ``block_size_ratio``: one TP size
  must divide the other, and the decode side's block size must be a multiple of the prefill side's.
- ``base_worker.py:2736-2908`` ``_validate_remote_agent_handshake``: DCP sizes divide one another; a
  GQA model whose prefill TP exceeds its KV heads cannot feed a smaller decode TP; attention layouts
  match (non-MLA); a different TP size needs a block-contiguous layout (non-MLA, non-replicated).

Every other connector's pair rules are not modelled: the pair is reported as such, each side checked
alone.
"""

from __future__ import annotations

from dataclasses import dataclass

# KVCacheLayout members whose [H, N, C] is contiguous within a block (0.34.0 vllm/v1/kv_cache_layout.py:45)
BLOCK_CONTIGUOUS_LAYOUTS = frozenset({"LBHNC", "BLHNC", "BHLNC"})
HASH_MISMATCH = (
    "NIXL compatibility hash mismatch. Local: {local}, Remote: {remote}. Prefill and decode instances have "
    "incompatible configurations. This may be due to: different vLLM versions, models, dtypes, KV cache layouts, "
    "attention backends, etc. Both instances must use identical configurations.Disable this check using "
    "--kv-transfer-config '{{\"kv_connector_extra_config\": {{\"enforce_handshake_compat\": false}}}}'")


@dataclass(frozen=True)
class PdSide:
    """What the pair rules read of one engine (its plan, its serve line)."""

    role: str  # "prefill" | "decode"
    kv_connector: str | None
    kv_role: str | None
    release: str  # the vLLM release the era stands for
    model: str
    dtype: str
    num_kv_heads: int  # the model's total KV heads (0 for MLA)
    head_size: int
    num_hidden_layers: int
    attention_backend: str | None
    cache_dtype: str
    hybrid_kv_cache_manager: bool
    speculator: tuple | None  # (method, draft model) of a hidden-state speculator
    transfer_mode: str
    enforce_handshake_compat: bool
    tensor_parallel_size: int
    decode_context_parallel_size: int
    block_size: int
    use_mla: bool
    has_mamba: bool
    kv_cache_layout: str


@dataclass(frozen=True)
class PairCheck:
    """One rule the connector applies to the pair, and what it found."""

    rule: str
    ok: bool
    prefill: str
    decode: str
    error_type: str | None = None
    error: str | None = None


HASH_FACTORS = (("vllm_version", "release"), ("model", "model"), ("dtype", "dtype"),
                ("num_kv_heads", "num_kv_heads"), ("head_size", "head_size"),
                ("num_hidden_layers", "num_hidden_layers"), ("attn_backend_name", "attention_backend"),
                ("cache_dtype", "cache_dtype"), ("is_hma_enabled", "hybrid_kv_cache_manager"),
                ("speculative_config", "speculator"), ("transfer_mode", "transfer_mode"))


def pair_checks(prefill: PdSide, decode: PdSide) -> tuple[str, tuple[PairCheck, ...]]:
    """``(modelled, checks)``: ``modelled`` is "nixl_0.34" when the rules above apply, else the reason
    they do not; the checks stop at the first failure, as the handshake does."""
    out: list[PairCheck] = []
    if prefill.kv_connector != decode.kv_connector:
        out.append(PairCheck("same connector", False, str(prefill.kv_connector), str(decode.kv_connector),
                             "RuntimeError", "the prefill and decode engines run different KV connectors: "
                             "they cannot hand KV over"))
        return "connector", tuple(out)
    if prefill.kv_connector != "NixlConnector":
        return f"{prefill.kv_connector}'s pair rules are not modelled yet", ()
    if prefill.release != "0.34.0" and decode.release != "0.34.0":
        return f"the NixlConnector pair rules of vllm=={prefill.release} are not modelled yet (0.34.0 is)", ()

    def add(rule: str, ok: bool, p, d, error_type: str | None = None, error: str | None = None) -> bool:
        out.append(PairCheck(rule, ok, str(p), str(d), None if ok else error_type, None if ok else error))
        return ok

    # the compatibility hash, factor by factor (a mismatch is one RuntimeError naming both hashes)
    differing = [(name, getattr(prefill, attr), getattr(decode, attr)) for name, attr in HASH_FACTORS
                 if getattr(prefill, attr) != getattr(decode, attr)]
    enforced = decode.enforce_handshake_compat
    if not add("compatibility hash (" + ", ".join(n for n, _, _ in differing) + ")" if differing
               else "compatibility hash", not differing or not enforced,
               "; ".join(f"{n}={p}" for n, p, _ in differing) or "same factors",
               "; ".join(f"{n}={d}" for n, _, d in differing) or "same factors",
               "RuntimeError", HASH_MISMATCH.format(local="<decode's hash>", remote="<prefill's hash>")):
        return "nixl_0.34", tuple(out)
    # TransferTopology.tp_ratio (decode is local)
    ptp, dtp = prefill.tensor_parallel_size, decode.tensor_parallel_size
    if dtp >= ptp:
        ok, msg = dtp % ptp == 0, f"Local tensor parallel size {dtp} is not divisible by remote tensor parallel size {ptp}."
    else:
        ok, msg = ptp % dtp == 0, f"Remote tensor parallel size {ptp} is not divisible by local tensor parallel size {dtp}."
    if not add("TP sizes divide", ok, ptp, dtp, "AssertionError", msg):
        return "nixl_0.34", tuple(out)
    tp_ratio = dtp // ptp if dtp >= ptp else -(ptp // dtp)
    # DCP sizes divide one another; Mamba hybrids need equal DCP
    pdcp, ddcp = prefill.decode_context_parallel_size, decode.decode_context_parallel_size
    if not add("DCP sizes divide", ddcp % pdcp == 0 or pdcp % ddcp == 0, pdcp, ddcp, "AssertionError",
               f"DCP sizes must divide one another: local={ddcp}, remote={pdcp} (engine <prefill>)."):
        return "nixl_0.34", tuple(out)
    if decode.has_mamba and not add("DCP sizes equal (Mamba hybrid)", pdcp == ddcp, pdcp, ddcp, "RuntimeError",
                                    "Hybrid MLA+Mamba NIXL transfers require matching DCP sizes, got "
                                    f"local={ddcp}, remote={pdcp}."):
        return "nixl_0.34", tuple(out)
    # a GQA prefill whose TP replicates the KV heads cannot feed a smaller decode TP
    replicated = ptp > decode.num_kv_heads > 0
    if not decode.use_mla and not decode.has_mamba and not add(
            "replicated KV heads read by a smaller TP", not (tp_ratio < 0 and replicated),
            f"TP {ptp}, {decode.num_kv_heads} KV heads", f"TP {dtp}", "AssertionError",
            "assert not (tp_ratio < 0 and self.transfer_topo.is_kv_replicated(remote_engine_id))"):
        return "nixl_0.34", tuple(out)
    # TransferTopology.block_size_ratio (decode is local)
    pb, db = prefill.block_size, decode.block_size
    if not add("block sizes: decode a multiple of prefill", db % pb == 0, pb, db, "AssertionError",
               f"Local block size {db} is not divisible by remote block size {pb} or vice versa."):
        return "nixl_0.34", tuple(out)
    if not decode.use_mla:
        if not add("same KV cache layout", prefill.kv_cache_layout == decode.kv_cache_layout,
                   prefill.kv_cache_layout, decode.kv_cache_layout, "RuntimeError",
                   f"Heterogeneous TP expects same kv_cache_layout (local {decode.kv_cache_layout}, remote "
                   f"{prefill.kv_cache_layout}). Or enable experimental feature to receive LBHNC into a local "
                   "LBNHC cache by setting 'enable_permute_local_kv'=True in --kv-transfer-config."):
            return "nixl_0.34", tuple(out)
        if abs(tp_ratio) != 1 and not replicated and not add(
                "different TP needs a block-contiguous layout", decode.kv_cache_layout in BLOCK_CONTIGUOUS_LAYOUTS,
                prefill.kv_cache_layout, decode.kv_cache_layout, "RuntimeError",
                "Heterogeneous TP head-dimension splitting requires contiguous heads. Use a block-contiguous "
                "layout (e.g. LBHNC) on the prefill side."):
            return "nixl_0.34", tuple(out)
    return "nixl_0.34", tuple(out)
