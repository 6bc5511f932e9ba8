"""A prefill/decode pair: each side read and simulated as ``kvplan vllm`` does, then the KV connector's
pair rules (``kvplan.engines.vllm.disagg``) on what the two plans hold. A block-size disagreement comes
with a fix that is re-simulated and re-checked: both sides at the larger block size."""

from __future__ import annotations

from dataclasses import replace

from kvplan.engines.vllm.disagg import PdSide, pair_checks
from kvplan.errors import OptionError
from kvplan.results import outcome
from kvplan.results.envelope import Envelope
from kvplan.results.disagg import PairRule, PdBody, PdPair

PRODUCER_ROLES, CONSUMER_ROLES = ("kv_producer", "kv_both"), ("kv_consumer", "kv_both")


def _text_config(path: str | None) -> dict:
    from kvplan.model.source import read_config_json

    if not path or not path.endswith(".json"):
        return {}
    raw = read_config_json(path)
    text = raw.get("text_config")
    return text if isinstance(text, dict) else raw


def side_of(role: str, env: Envelope) -> PdSide:
    """What the pair rules read of one side's ``kvplan vllm`` result."""
    d = env
    ktc = (d["inputs"]["options"].get("kv_transfer_config") or {}).get("value") or {}
    extra = ktc.get("kv_connector_extra_config") or {}
    cfg = _text_config(d["model"]["path"])
    heads = int(cfg.get("num_attention_heads") or 0)
    kinds = {g["kind"] for g in d["groups"]}
    use_mla = "mla" in kinds or bool(cfg.get("kv_lora_rank"))
    spec = d["speculative"]
    method = spec["method"]
    uses_hidden = method in ("eagle", "eagle3", "mtp")
    serving = d["serving"]
    return PdSide(
        role=role, kv_connector=ktc.get("kv_connector"), kv_role=ktc.get("kv_role"),
        release=d["policy"]["vllm_release"] or d["policy"]["name"], model=d["model"]["id"],
        dtype=d["model"]["dtype"], num_kv_heads=0 if use_mla else int(cfg.get("num_key_value_heads") or heads),
        head_size=int(cfg.get("head_dim") or (int(cfg.get("hidden_size") or 0) // heads if heads else 0)),
        num_hidden_layers=d["model"]["num_hidden_layers"], attention_backend=serving["attention_backend"],
        cache_dtype=serving["kv_cache_dtype"], hybrid_kv_cache_manager=bool(d["hybrid_kv_cache_manager"]["enabled"]),
        speculator=(method, (d.get("drafter") or {}).get("id")) if uses_hidden else None,
        transfer_mode=str(extra.get("transfer_mode", "pull")),
        enforce_handshake_compat=bool(extra.get("enforce_handshake_compat", True)),
        tensor_parallel_size=serving["tensor_parallel_size"],
        decode_context_parallel_size=int((d["inputs"]["options"].get("decode_context_parallel_size") or {})
                                         .get("value") or 1),
        block_size=min((g["block_size"] for g in d["groups"]), default=serving["block_size"] or 0),
        use_mla=use_mla, has_mamba="mamba" in kinds,
        kv_cache_layout=_layout(d["policy"]["vllm_release"] or d["policy"]["name"]),
        kv_dtype_bytes=_kv_dtype_bytes(serving["kv_cache_dtype"], d["model"]["dtype"]),
        read_mode=str(extra.get("read_mode", "false")).lower().strip() in ("true", "1"),
        connector_module=ktc.get("kv_connector_module_path") or None)


def _kv_dtype_bytes(cache_dtype: str, model_dtype: str) -> int:
    """Bytes per KV element: an fp8 cache 1, else the model dtype's (float32 4, 16-bit 2)."""
    if str(cache_dtype).startswith("fp8"):
        return 1
    return 4 if "32" in str(model_dtype) else 2


def _layout(release: str) -> str:
    """The attention KV layout the release allocates (one LBNHC buffer from 0.29, ``Era.kv_buffer_layout``;
    per-slot NHD tensors before)."""
    from kvplan.engines.vllm.releases import get_era

    era = get_era(release if release.startswith("vllm") else f"vllm=={release}")
    return "LBNHC" if era.kv_buffer_layout == "lbnhc" else "NHD"


def _pair(prefill: PdSide, decode: PdSide) -> PdPair:
    modelled, checks = pair_checks(prefill, decode)
    rules = tuple(PairRule(c.rule, c.ok, c.prefill, c.decode, c.error_type, c.error) for c in checks)
    is_modelled = modelled in ("nixl_0.34", "mooncake_0.34", "moriio_0.34", "connector")
    return PdPair(prefill.kv_connector, is_modelled, None if is_modelled else modelled,
                  all(r.ok for r in rules) if is_modelled else None, rules)


def pd_pair(prefill_line: str, decode_line: str, *, decode_gpu: str | None = None, **options) -> Envelope:
    """Both sides of a P/D pair (two pasted ``vllm serve`` lines) and the connector's pair rules.
    ``decode_gpu``: the decode side's GPU when it differs from the prefill side's (``gpu``)."""
    return _pd({"line": prefill_line}, {"line": decode_line}, options, decode_gpu)


def pd_pair_from_file(file: str, *, decode_gpu: str | None = None, **options) -> Envelope:
    """The prefill and decode workers of one manifest (llm-d P/D values, a Dynamo graph, Kubernetes objects):
    the vLLM containers whose names say ``prefill`` and ``decode``, one each."""
    from kvplan.readfile import read_text
    from kvplan.serve.manifests import read_manifests

    found = read_manifests(read_text(file, "manifest", "--file"), str(file))
    names = [c.name.split(": ", 1)[-1] for c in found]
    pick = {role: [n for n in names if role in n.lower()] for role in ("prefill", "decode")}
    if any(len(v) != 1 for v in pick.values()):
        raise OptionError(f"--file {file}: a prefill/decode pair needs one vLLM container named for each role; "
                          f"found {', '.join(repr(n) for n in names) or 'none'}")
    return _pd({"file": file, "container": pick["prefill"][0]}, {"file": file, "container": pick["decode"][0]},
               options, decode_gpu)


def _pd(p_in: dict, d_in: dict, options: dict, decode_gpu: str | None = None) -> Envelope:
    from kvplan.usecases.serve import vllm_serve

    if decode_gpu is not None and not options.get("gpu"):
        raise OptionError("--decode-gpu: give the prefill side's card with --gpu too (e.g. --gpu H100-80GB "
                          "--decode-gpu H200); with one card for both, give --gpu alone")
    # each side on its own card: --gpu for the prefill side, --decode-gpu for the decode side (default: --gpu)
    d_options = {**options, "gpu": decode_gpu} if decode_gpu is not None else options
    p_env, d_env = vllm_serve(**p_in, **options), vllm_serve(**d_in, **d_options)
    prefill, decode = side_of("prefill", p_env), side_of("decode", d_env)
    if prefill.kv_role not in PRODUCER_ROLES + (None,):
        raise OptionError(f"the prefill side's --kv-transfer-config has kv_role {prefill.kv_role}: give the "
                          "kv_producer line as --line and the kv_consumer line as --decode-line")
    if decode.kv_role not in CONSUMER_ROLES + (None,):
        raise OptionError(f"the decode side's --kv-transfer-config has kv_role {decode.kv_role}: give the "
                          "kv_consumer line as --decode-line")
    sized = all(e["memory"]["num_blocks"] > 0 for e in (p_env, d_env))
    if not sized:
        pair = PdPair(prefill.kv_connector, False, "a side fails before its KV cache is sized: the pair's rules are "
                      "checked once both sides start", None, ())
    elif prefill.kv_connector is None and decode.kv_connector is None:
        pair = PdPair(None, False, "no --kv-transfer-config on either side (an orchestrator such as Dynamo may set the "
                      "connector through its own flags): the pair's rules are not checked", None, ())
    else:
        pair = _pair(prefill, decode)
    failed = next((r for r in pair.rules if not r.ok), None)
    if failed is not None and failed.rule.startswith("block sizes"):
        pair = replace(pair, fix=_block_size_fix(p_in, d_in, prefill, decode, options, d_options))
    loads = _flag_value(d_env, "--max-num-inflight-kv-loads")
    if loads is not None and d_env["outcome"]["starts"]:
        n = int(loads)
        pair = replace(pair, decode_max_num_inflight_kv_loads=n,
                       decode_running_concurrency_with_loads=round(max(d_env["memory"]["max_concurrency"] - n, 0.0), 2))
    p_ok, d_ok = p_env["outcome"]["starts"], d_env["outcome"]["starts"]
    if failed is not None:
        verdict = outcome(ok=False, starts=False, stage="kv_connector", error_type=failed.error_type,
                          error=failed.error, fix=pair.fix)
    elif not (p_ok and d_ok):
        verdict = (p_env if not p_ok else d_env).outcome
    else:
        verdict = outcome(ok=True, starts=True)
    return replace(d_env, outcome=verdict, body=PdBody(p_env.body, d_env.body, pair),
                   warnings=(*[f"prefill: {w}" for w in p_env.warnings], *[f"decode: {w}" for w in d_env.warnings]))


def _flag_value(env: Envelope, flag: str) -> str | None:
    """The value a serve line gave ``flag`` (its last occurrence), as the reader recorded it."""
    rows = [r for r in env["serve"]["flags"] if r["flag"] == flag]
    return rows[-1]["value"] if rows else None


def _block_size_fix(p_in: dict, d_in: dict, prefill: PdSide, decode: PdSide, options: dict,
                    d_options: dict | None = None) -> str | None:
    """Both sides at the larger block size, re-simulated and re-checked (None when that does not pass either):
    ``--block-size N`` given to kvplan, or appended to a pasted line that sets its own."""
    from kvplan.usecases.serve import vllm_serve

    size = max(prefill.block_size, decode.block_size)

    def run(side: dict, opts: dict):
        try:
            return vllm_serve(**side, **{**opts, "block_size": size})
        except OptionError:
            if "line" not in side:
                raise
            return vllm_serve(line=side["line"] + f" --block-size {size}", **opts)

    try:
        p2, d2 = run(p_in, options), run(d_in, d_options if d_options is not None else options)
    except Exception:  # noqa: BLE001 - a fix that cannot be simulated is no fix
        return None
    pair = _pair(side_of("prefill", p2), side_of("decode", d2))
    if pair.compatible and p2["outcome"]["starts"] and d2["outcome"]["starts"]:
        return f"--block-size {size} on both sides"
    return None
