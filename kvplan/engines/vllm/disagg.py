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

MooncakeConnector (0.34.0 ``v1/mooncake/mooncake_connector.py``; the prefill worker, which sends, is
"local"): ``_get_tp_ratio`` (lines 169-187, on TP sizes capped at the KV heads) needs one TP size to divide
the other, and ``_validate_asymmetric_region_lengths`` (lines 334-389) needs each registered KV region's
bytes per block to match (the same TP) or to scale by the TP ratio: with the same model this is the same
block size and the same KV cache dtype on both sides. Its error goes back to the decode worker as the
transfer's failure (``MooncakeXferResponseStatus.ERROR``, lines 1818-1832), not at start-up. MLA and Mamba
caches skip the length check (``total_num_kv_heads`` None, a replicated producer cache).

MoRIIOConnector (0.34.0 ``v1/moriio/moriio_connector.py``; write mode by default, where the prefill side
writes and is "local"; ``read_mode`` true makes the decode side local): ``get_moriio_remote_tp_rank``
(lines 173-195) needs one TP size to be a multiple of the other (ValueError), and
``validate_moriio_heterogeneous_tp_kv_heads`` (lines 212-227) refuses a different TP unless both sides
replicate the KV heads (NotImplementedError; MLA exempt). Its block-size check ``_check_peer_block_size``
(line 3673) is defined but not called in 0.34.0: kvplan reports a block-size difference as unchecked.

Every other connector's pair rules are not modelled: the pair is reported as such, each side checked
alone (0.34.0's factory registers no P2pNcclConnector: its ``v1/p2p`` package is gone from 0.24.0).
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
    kv_dtype_bytes: int = 2  # bytes per KV element (the KV cache dtype, else the model dtype)
    read_mode: bool = False  # MoRIIO's kv_connector_extra_config read_mode
    connector_module: str | None = None  # kv_connector_module_path: a class outside vLLM's registry


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
    module = prefill.connector_module or decode.connector_module
    if module:
        # KVConnectorFactory imports kv_connector_module_path instead of its registry (0.34.0 factory.py:100-124)
        return f"{prefill.kv_connector} comes from {module} (kv_connector_module_path), not vLLM: its pair " \
               "rules are not modelled", ()
    if prefill.kv_connector == "MooncakeConnector" and "0.34.0" in (prefill.release, decode.release):
        return "mooncake_0.34", _mooncake(prefill, decode)
    if prefill.kv_connector == "MoRIIOConnector" and "0.34.0" in (prefill.release, decode.release):
        return "moriio_0.34", _moriio(prefill, decode)
    if prefill.kv_connector != "NixlConnector":
        return f"{prefill.kv_connector}'s pair rules are not modelled yet (NixlConnector, MooncakeConnector " \
               "and MoRIIOConnector of vLLM 0.34.0 are)", ()
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


def _tp_ratio_text(local: int, remote: int) -> tuple[bool, str]:
    """``_get_tp_ratio``'s assertion (Mooncake, 0.34.0 mooncake_connector.py:169-187)."""
    if local >= remote:
        return local % remote == 0, f"Local tensor parallel size {local} is not divisible by remote tensor " \
            f"parallel size {remote}."
    return remote % local == 0, f"Remote tensor parallel size {remote} is not divisible by local tensor " \
        f"parallel size {local}."


def _region_bytes(side: PdSide, tp: int) -> int:
    """One registered region's bytes per block on one worker: a K (or V) half of an attention layer's block,
    ``block_size x KV heads per rank x head size x KV element bytes``."""
    heads = max(side.num_kv_heads // tp, 1) if side.num_kv_heads else 1
    return side.block_size * heads * side.head_size * side.kv_dtype_bytes


def _mooncake(prefill: PdSide, decode: PdSide) -> tuple[PairCheck, ...]:
    out: list[PairCheck] = []
    ptp, dtp = prefill.tensor_parallel_size, decode.tensor_parallel_size
    heads = prefill.num_kv_heads if not (prefill.use_mla or prefill.has_mamba) else 0
    lt, rt = (min(ptp, heads), min(dtp, heads)) if heads else (ptp, dtp)
    ok, msg = _tp_ratio_text(lt, rt)
    out.append(PairCheck("TP sizes divide", ok, str(ptp), str(dtp), None if ok else "AssertionError",
                         None if ok else msg))
    if not ok:
        return tuple(out)
    if not heads:
        out.append(PairCheck("KV region lengths (skipped: MLA or Mamba cache)", True, "-", "-"))
        return tuple(out)
    ratio = lt // rt if lt >= rt else -(rt // lt)
    local, remote = _region_bytes(prefill, ptp), _region_bytes(decode, dtp)
    if ratio == 1:
        ok = local == remote
        msg = f"Mooncake KV region length mismatch for homogeneous TP at region 0: local={local}, remote={remote}."
    elif ratio > 0:
        ok = remote == local * ratio
        msg = ("Mooncake destination KV region length does not match the producer TP ratio at region 0: "
               f"local={local}, remote={remote}, tp_ratio={ratio}.")
    else:
        ok = local == remote * -ratio
        msg = ("Mooncake source KV region length does not match the consumer TP ratio at region 0: "
               f"local={local}, remote={remote}, tp_ratio={ratio}.")
    out.append(PairCheck("block sizes and KV dtype: the same KV region length", ok,
                         f"block {prefill.block_size}, {prefill.cache_dtype}, {local} bytes per region",
                         f"block {decode.block_size}, {decode.cache_dtype}, {remote} bytes per region",
                         None if ok else "RuntimeError", None if ok else msg))
    return tuple(out)


def _moriio(prefill: PdSide, decode: PdSide) -> tuple[PairCheck, ...]:
    out: list[PairCheck] = []
    local, remote = (decode, prefill) if prefill.read_mode or decode.read_mode else (prefill, decode)
    lt, rt = local.tensor_parallel_size, remote.tensor_parallel_size
    msg = None
    if rt > lt and rt % lt:
        msg = f"remote tp_size {rt} must be a multiple of local tp_size {lt} for heterogeneous-TP P/D"
    elif lt > rt and lt % rt:
        msg = f"local tp_size {lt} must be a multiple of remote tp_size {rt} for heterogeneous-TP P/D"
    out.append(PairCheck("TP sizes: one a multiple of the other", msg is None, str(prefill.tensor_parallel_size),
                         str(decode.tensor_parallel_size), None if msg is None else "ValueError", msg))
    if msg is not None:
        return tuple(out)
    heads = local.num_kv_heads
    ok = local.use_mla or lt == rt or min(lt, rt) >= heads
    out.append(PairCheck("a different TP replicates the KV heads on both sides", ok,
                         f"TP {prefill.tensor_parallel_size}, {heads} KV heads", f"TP {decode.tensor_parallel_size}",
                         None if ok else "NotImplementedError", None if ok else (
                             "MoRIIO heterogeneous TP requires replicated KV heads on both prefill and decode. Got "
                             f"total_num_kv_heads={heads}, local_tp_size={lt}, remote_tp_size={rt}.")))
    if not ok:
        return tuple(out)
    out.append(PairCheck("block sizes (not checked by vLLM 0.34.0: _check_peer_block_size is not called)", True,
                         str(prefill.block_size), str(decode.block_size)))
    return tuple(out)
