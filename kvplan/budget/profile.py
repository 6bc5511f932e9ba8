"""The dummy sampler pass of vLLM's profile run, per release, from the table derived from each release's code.

``scripts/golden/profile_terms.py`` runs each release's own ``GPUModelRunner._dummy_sampler_run`` (the V1 model
runner, v1/worker/gpu_model_runner.py) on the CPU under a memory-tracking dispatch mode, with the sampler built
as a CUDA worker builds it, and records the peak live bytes (``tests/golden/profile_terms/<release>.json``);
``--table`` writes what kvplan reads here (``profile_terms.json``; tests/test_profile_terms.py checks it against
the goldens). The pass's peak over ``R`` dummy requests and a vocabulary of ``V``::

    sampler = R · V · b  +  rows · V · s  +  fixed          rows = min(next_pow2(min(SMs, R)), SMs)

``b`` the bytes per logit (the model-dtype logits, the fp32 copy, and whatever the release's top-k/top-p path
allocates: 0.11.0 without FlashInfer sorts the logits, 28 B on the CPU; the Triton path of 0.19+ 14 B), on CUDA: the
harness adds the workspace torch's CUDA sort allocates through the caching allocator while the sort runs
(``cuda_workspace_bytes`` in the script: 20 B per logit from 128 requests, 32 B below, so 0.11.0's path takes 38 B
per logit from 128 requests and 50 B below; vLLM's torch peak is the allocator's), ``s`` the Triton
top-k/top-p wrapper's per-SM buffer (4 B, one fp32 row per program; 0 before it), ``fixed`` its tables. The SM
count is not in kvplan's card presets: kvplan takes an H100 SXM's 132 (assumed; at most 170·V·4 bytes on any
current card, inside the band). A release whose sampler was not run takes the newest derived release before it,
labelled assumed. The V2 model runner (v1/worker/gpu; the only one from 0.34, picked by the release's rule from
0.22: ``kvplan.engines.vllm.runner``) has its own row: its ``_dummy_sampler_run`` builds a different sampler
(v1/worker/gpu/sample/sampler.py: the Gumbel-max kernel or FlashInfer's sampling, no sort), recorded by
``profile_terms.py --runner-v2`` under each golden's ``v2`` and read here when the budget's request says V2.
No torch here: the table is read once per process.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TABLE = Path(__file__).with_name("profile_terms.json")
ASSUMED_SMS = 132  # an H100 SXM (the card kvplan assumes when none is given)
DERIVED, ASSUMED = "derived", "assumed"


@cache
def _table() -> dict:
    """The table's rows, each release's ``forward`` / ``parallel`` / ``encoder`` resolved from the file's ``shared``
    part (stored there once per distinct row, under the first release that has it)."""
    data = json.loads(TABLE.read_text())
    shared = data.get("shared", {})
    rows = data["releases"]
    for row in rows.values():
        for key, by_release in shared.items():
            if isinstance(row.get(key), str):
                row[key] = by_release[row[key]]
    return rows


def release_row(release: str | None) -> dict:
    """The table's row for ``release``; a name not in it (a proposal's era, None) takes the newest release's."""
    rows = _table()
    return rows.get(release or "") or rows[list(rows)[-1]]


def sampler_row(release: str | None, runner: str = "v1") -> tuple[dict, str, str]:
    """The table's row for ``release`` on the model runner the deployment runs (``runner``: "v1" / "v2", the
    engine's runner decision; every release kvplan accepts has a row: its own derived figure, or the newest derived
    release's before it, marked assumed; a name not in it, e.g. a proposal's era, takes the newest release's row),
    the basis and a note of where it came from. The V2 runner's row is the release's ``v2`` (0.19-0.33, which have
    both runners) or the row itself (0.34+, V2 only); a release with no V2 row takes the V1 runner's, assumed."""
    row = release_row(release)
    if runner == "v2" and row.get("runner", "v1") != "v2":
        if "v2" not in row:
            return row, ASSUMED, (f"vLLM {row['from']}'s V1 runner's figure: {release or 'this era'}'s V2 runner's "
                                  "sampler not run (no V2 golden at or before this release)")
        row = row["v2"]
    which = "V2 model runner's" if row.get("runner") == "v2" else "own"
    if row["basis"] == DERIVED:
        return row, DERIVED, f"vLLM {row['from']}'s {which} _dummy_sampler_run, run on the CPU"
    return row, ASSUMED, (f"vLLM {row['from']}'s figure{' (V2 model runner)' if which != 'own' else ''}: "
                          f"{release or 'this era'}'s sampler not run ({row['why']})")


# compute_prompt_logprobs_with_chunking's CHUNK_SIZE: the prompt logits made at once (0.29.0
# v1/worker/gpu/sample/prompt_logprob.py line 208; the same in 0.19.0-0.34.0)
PROMPT_LOGPROBS_CHUNK_ROWS = 1024


def warmup_pass_bytes(release: str | None, runner: str, *, max_num_seqs: int, max_num_batched_tokens: int,
                      vocab: int, num_speculative_tokens: int = 0) -> dict | None:
    """What the V2 model runner's warm-up allocates at its peak after the KV cache is sized (``warmup_kernels``:
    0.29.0 v1/worker/gpu_worker.py line 866; V1 warms its sampler up with the profile's own pass), None on V1 or
    without a row. Its requests: ``min(max_num_seqs, max_num_batched_tokens // prompt_len)`` with ``prompt_len =
    decode_query_len + 1`` (warmup.py lines 231 and 267-270; the KV-block cap only lowers it), each with
    ``SamplingParams.for_sampler_warmup()``. Two passes, one after the other:

    * the prefill's prompt logprobs (``prompt_logprobs=1``): one logits row per scheduled token, 1,024 rows a chunk
      (``PROMPT_LOGPROBS_CHUNK_ROWS``), at the golden's bytes per logit;
    * the sampler over the warm-up's parameters: one row per request at the golden's high end (FlashInfer's own
      tensors included); from 0.33.0 ``_dummy_sampler_run`` runs this pass in the profile (``sampler_in_profile``),
      so the warm-up's own is already paid for.

    From ``kvplan/budget/profile_terms.json`` ``v2_warmup`` (``scripts/golden/profile_terms.py --runner-v2
    --warmup-pass``: the release's own Sampler and ``compute_prompt_logprobs_with_chunking`` on the CPU)."""
    row = release_row(release)
    warm = row.get("v2_warmup") if runner == "v2" else None
    if not warm:
        return None
    prompt_len = 2 + num_speculative_tokens  # decode_query_len + 1
    reqs = max(1, min(max_num_seqs, max_num_batched_tokens // prompt_len))
    rows = min(PROMPT_LOGPROBS_CHUNK_ROWS, reqs * prompt_len)
    prompt = round(rows * vocab * warm["prompt_logprobs"]["bytes_per_logit"]) + warm["prompt_logprobs"]["fixed_bytes"]
    s = warm["sampler"]
    sampler = 0 if warm["sampler_in_profile"] else (
        round(reqs * vocab * s["bytes_per_logit_high" if reqs >= 128 else "bytes_per_logit_high_under_128"])
        + s["fixed_bytes"])
    where = (f"vLLM {warm['from']}'s V2 warm-up, run on the CPU" if warm["basis"] == DERIVED else
             f"vLLM {warm['from']}'s V2 warm-up ({release}'s not run: {warm['why']})")
    return {"bytes": max(prompt, sampler), "prompt_logprobs": prompt, "sampler": sampler, "reqs": reqs,
            "basis": warm["basis"], "source": where}


def persistent_bytes(row: dict, max_num_seqs: int, vocab: int, *, max_num_batched_tokens: int = 0,
                     max_model_len: int = 0, inputs_embeds_bytes: int = 0, num_speculative_tokens: int = 0,
                     draft_hidden_bytes: int = 0) -> int:
    """What the V2 model runner keeps on the card after the profile run beside the weights, where the release's
    profile counts it (``counted``: from 0.27.1 ``memory_profiling`` takes the free memory's drop since the runner
    was created), 0 otherwise. The golden's ``persistent`` fit (``scripts/golden/profile_terms.py --runner-v2``:
    the release's own ``GPUModelRunner`` built, loaded and profiled on the CPU; ``scope`` "runner")::

        R · (V · per_logit + max_model_len · per_token_slot + per_req) + T · per_token + V · per_vocab + fixed
            + T · inputs_embeds_bytes · inputs_embeds_per_token            (a multimodal model served with its inputs)

    with R = max_num_seqs, V the vocabulary, T = max_num_batched_tokens. 0.29.0-0.34.0 (tests/golden/profile_terms/
    <release>.json): per_logit 4.25 B — the penalties' ``output_bin_counts`` [R, V] int32 (4 B) and
    ``prompt_bin_mask`` [R, ⌈V/32⌉] int32, the structured-output worker's ``grammar_bitmask`` [R, ⌈V/32⌉] int32
    (4/32 B each) —, 17,960 B per request (the logit-bias, bad-words and logprob-token-id staging tensors, the
    request and input states), 13 B per batched token (``InputBuffers``: input_ids int32, positions int64,
    is_padding bool), nothing per max_model_len slot (``all_token_ids`` is pinned host memory), 4 B fixed.
    ``inputs_embeds_bytes``: the model's inputs_embeds_size times its dtype's bytes where it is served with
    multimodal inputs (the row's ``multimodal``: Gemma 4's runner keeps its encoder runner's ``inputs_embeds``
    [T, inputs_embeds_size], one per batched token), else 0. ``num_speculative_tokens`` k with
    ``draft_hidden_bytes`` (the drafter's hidden size times the dtype's bytes): an autoregressive drafter (EAGLE,
    EAGLE-3, MTP: the row's ``speculative``, fitted on an EAGLE-3 drafter at two k), each term ``base + k ·
    per_spec_token`` and T · draft_hidden_bytes for the speculator's ``hidden_states``. A row fitted before the whole
    runner was run (``scope`` absent: RequestState, Sampler and InputBuffers only) has no per-token terms."""
    p = row.get("persistent") or {}
    if not p.get("counted"):
        return 0
    per_req = vocab * p["bytes_per_logit"] + max_model_len * p.get("bytes_per_token_slot", 0) + p["bytes_per_req"]
    mm = p.get("multimodal") if inputs_embeds_bytes else None
    embeds = (max_num_batched_tokens * inputs_embeds_bytes * mm["inputs_embeds_per_token"] + mm["fixed_bytes"]
              if mm else 0)
    spec = 0
    if num_speculative_tokens and draft_hidden_bytes and p.get("speculative"):
        at = {t: f["base"] + num_speculative_tokens * f["per_spec_token"] for t, f in p["speculative"].items()
              if isinstance(f, dict)}
        spec = (max_num_seqs * (vocab * at["bytes_per_logit"] + at["bytes_per_req"])
                + max_num_batched_tokens * (at["bytes_per_token"]
                                            + p["speculative"]["draft_hidden_buffers"] * draft_hidden_bytes)
                + vocab * at["bytes_per_vocab"] + at["fixed_bytes"])
    return round(max_num_seqs * per_req + max_num_batched_tokens * p.get("bytes_per_token", 0)
                 + vocab * p.get("bytes_per_vocab", 0) + p["fixed_bytes"] + embeds + spec)


SEGMENTED_SORT_MIN_REQS = 128  # torch's CUDA sort of [R, V] takes its segmented branch from 128 slices


def per_logit_key(reqs: int, end: str = "") -> str:
    """The table's bytes-per-logit key for ``reqs`` dummy requests (``end``: "", "low" or "high"): the CUDA sort's
    workspace per element differs below 128 requests (two index buffers and a key copy: 50 B per logit in 0.11.0's
    native path) and from 128 (one index buffer: 38 B)."""
    key = "bytes_per_logit" + (f"_{end}" if end else "")
    return key + ("_under_128" if 1 < reqs < SEGMENTED_SORT_MIN_REQS else "")


def sampler_bytes(row: dict, reqs: int, vocab: int, *, per_logit: float | None = None) -> int:
    """The sampler pass's peak for ``reqs`` dummy requests over ``vocab`` logits by a table row."""
    b = row.get(per_logit_key(reqs), row["bytes_per_logit"]) if per_logit is None else per_logit
    sms = ASSUMED_SMS
    rows = min(1 << max(0, (min(sms, reqs) - 1).bit_length()), sms) if row["sm_row_bytes_per_vocab"] else 0
    return round(reqs * vocab * b + rows * vocab * row["sm_row_bytes_per_vocab"] + row["fixed_bytes"])


# The dummy forward's peak (``scripts/golden/profile_terms.py --forward-all``: the release's model class run over
# T dummy tokens on the meta device under the same memory-tracking mode, tests/golden/profile_terms/forward/): per
# family the measured bytes per token over kvplan's rule T·(4H + W)·a for the same model, the factor kvplan scales
# its rule by. The value is the custom-op path (vLLM's CUDA kernels' wrappers allocate their outputs; the compiled
# graph fuses the same ops into kernels with the same outputs), the high end the unfused native graph. A model
# measured for itself (the goldens' ``architectures``, the table's ``forward_models``: Gemma 4 26B-A4B) takes its own
# row instead of its family's: its measured bytes per token over kvplan's rule for that same model.
MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


def forward_family(cfg: dict) -> str:
    return "moe" if any(int(cfg.get(k) or 0) > 1 for k in MOE_KEYS) else "dense"


def forward_factors(release: str | None, cfg: dict, *, tp: int = 1, pp: int = 1, architecture: str = "") -> dict:
    """The release's forward row for the model: ``value`` and ``high`` factors on kvplan's rule, the basis, the row
    used (``row``: the architecture's own or the family's) and a note of where it came from. The model's own row
    where a release measured its ``architecture`` (``model_forward_row``: Gemma 4's), else its family's (a family
    the release's golden could not measure takes the newest measured release's before it, assumed; none measured:
    factor 1, assumed). Under TP or PP the family's factors measured on that rank (``parallel_factors``; the own
    rows are measured at TP 1), ``later`` those of a PP stage after the first."""
    own = model_forward_row(release, architecture)
    if own is not None and own["family"] != forward_family(cfg):  # measured on a model of the other family
        base = _tp1_forward_factors(release, cfg)
        base["source"] += (f"; not the {own['row']} row (measured on {own['model']}, a {own['family']} model, for a "
                           f"{base['family']} one)")
        return base if tp == 1 and pp == 1 else parallel_factors(release, base, tp=tp, pp=pp)
    if own is not None and tp == 1 and pp == 1:
        return own
    base = _tp1_forward_factors(release, cfg)
    if tp == 1 and pp == 1:
        return base
    out = parallel_factors(release, base, tp=tp, pp=pp)
    if own is not None:
        out["source"] += (f"; the {base['family']} family's parallel factors: {own['row']}'s own row is measured "
                          "at TP 1 / PP 1 only")
    return out


def model_forward_row(release: str | None, architecture: str) -> dict | None:
    """The release's own forward row for ``architecture`` (the table's ``forward_models``, from the goldens'
    ``architectures``: a model measured for itself, looked up by the measured class or the class whose forward ran
    its text, e.g. Gemma4ForConditionalGeneration / Gemma4ForCausalLM) as ``forward_factors`` returns it: derived
    where this release measured it, else the newest measured release's before it, assumed; None where no release
    at or before this one measured it (the family's factor applies). ``family``: the measured model's (a model
    of the other family under the same architecture, e.g. a dense Gemma 4, takes its own family's factor)."""
    if not architecture:
        return None
    models = release_row(release).get("forward_models") or {}
    found = next(((arch, r) for arch, r in models.items() if architecture in r.get("architectures", (arch,))), None)
    if found is None or "factor" not in found[1]:
        return None
    arch, r = found
    model = Path(r["model"]).parent.name
    basis = DERIVED if r["basis"] == DERIVED else ASSUMED
    what = (f"the {arch} row ({basis}{'' if basis == DERIVED else ' from ' + r['from']}): vLLM {r['from']}'s "
            f"{arch} forward ({model}) on the meta device: {r['bytes_per_token']:,.0f} B per token on the custom-op "
            f"path, {r['bytes_per_token_native']:,.0f} native, {r['factor']:g}-{r['factor_high']:g}× kvplan's rule")
    if basis != DERIVED:
        what += f"; {release or 'this era'}'s {arch} forward not run ({r['why']})"
    return {"value": r["factor"], "high": r["factor_high"], "basis": basis, "family": r.get("family", "moe"),
            "row": arch, "model": model, "source": what, "release": r["from"],
            "logits_bytes_per_logit": r.get("logits_bytes_per_logit")}


# The dummy forward on one rank under TP and PP (``scripts/golden/profile_terms.py --parallel-all``: the release's
# model class rebuilt as rank 0 of a TP group of 2, 4, 8 and as the first and the last stage of PP 2, its collectives
# through the release's own CudaCommunicator with NCCL faked; tests/golden/profile_terms/parallel/): per family the
# measured bytes per token over kvplan's per-rank rule (``kvplan.budget.estimate.forward_rule_bytes_per_token``).
PARALLEL_TPS = (2, 4, 8)


def parallel_factors(release: str | None, base: dict, *, tp: int, pp: int) -> dict:
    """``base`` (the TP 1 factors) replaced by those measured at ``tp`` (the largest measured TP size not above it)
    or, at TP 1 with PP, by each PP stage's (``later``: every stage after the first, as PP 2's last); the TP 1 factors
    where the release family has no parallel golden (assumed)."""
    par = (release_row(release).get("parallel") or {}).get(base["family"]) or {}
    layouts = par.get("layouts") or {}
    if not layouts:
        return {**base, "basis": ASSUMED, "source": base["source"] + f"; at TP {tp} / PP {pp} the TP 1 factor "
                f"({par.get('why', 'no parallel golden')})"}
    if tp > 1:
        size = max([t for t in PARALLEL_TPS if t <= tp] or [PARALLEL_TPS[0]])
        first = later = layouts[f"tp{size}"]
        exact = size == tp and pp == 1
        what = f"TP {size} rank 0" + ("" if exact else f" (for TP {tp}" + (f", PP {pp}" if pp > 1 else "") + ")")
    else:
        first, later = layouts["pp2-first"], layouts["pp2-last"]
        exact, what = pp == 2, "PP 2 first and last stage" + ("" if pp == 2 else f" (for PP {pp})")
    model = Path(first.get("model") or par["model"]).parent.name
    src = (f"vLLM {par['from']}'s {base['family']} forward ({model}) as {what}: {first['bytes_per_token']:,.0f} B per "
           f"token, {first['factor']:g}-{first['factor_high']:g}× kvplan's per-rank rule"
           + ("" if first is later else f"; a later stage {later['bytes_per_token']:,.0f} B, {later['factor']:g}×"))
    basis = DERIVED if par["basis"] == DERIVED and exact else ASSUMED
    if par["basis"] != DERIVED:
        src += f"; {release or 'this era'}'s parallel forward not run ({par.get('why', '')})"
    return {"value": first["factor"], "high": first["factor_high"], "basis": basis, "family": base["family"],
            "later": {"value": later["factor"], "high": later["factor_high"]}, "source": src}


def _tp1_forward_factors(release: str | None, cfg: dict) -> dict:
    row = release_row(release).get("forward") or {}
    family = forward_family(cfg)
    fam = row.get(family) or {}
    if "factor" not in fam:
        return {"value": 1.0, "high": 1.0, "basis": ASSUMED, "family": family, "row": family,
                "source": f"kvplan's rule T·(4H + W)·a ({fam.get('why', 'no forward golden')})"}
    model = fam["model"].split("/")[-2]
    basis = DERIVED if fam["basis"] == DERIVED else ASSUMED
    what = (f"the {family} family row ({basis}{'' if basis == DERIVED else ' from ' + fam['from']}): "
            f"vLLM {fam['from']}'s {family} forward ({model}) on the meta device: {fam['bytes_per_token']:,.0f} B "
            f"per token on the custom-op path, {fam['bytes_per_token_native']:,.0f} native, "
            f"{fam['factor']:g}-{fam['factor_high']:g}× kvplan's rule")
    if basis != DERIVED:
        what += f"; {release or 'this era'}'s {family} forward not run ({fam['why']})"
    return {"value": fam["factor"], "high": fam["factor_high"], "basis": basis, "family": family, "row": family,
            "source": what}


# Every term of vLLM's profile run (``determine_available_memory`` / ``profile_run``, v1/worker/gpu_worker.py and
# gpu_model_runner.py) with how kvplan gets it: derived from the release's own code (a golden), else calibrated or
# assumed with the reason it is not derived. docs/profile-terms.md lists them per release
# (scripts/profile_terms_doc.py; tests/test_profile_terms.py keeps the page current).
CALIBRATED, NOT_COUNTED, NOT_PLANNED = "calibrated", "not counted", "not planned"
CUDAGRAPH_REASON = (
    "the graph pool is the CUDA driver's and caching allocator's memory for kernels captured on the card "
    "(profile_cudagraph_memory captures graphs): nothing of it exists on a CPU or the meta device; the capture "
    "sizes and mode are derived from the release's code (kvplan/budget/cudagraph.py), the bytes per graph "
    "calibrated on the calibration half's logged capture figures (calibration.json cudagraph)")
CUDAGRAPH_NOT_COUNTED = ("the release captures its graphs after sizing the KV cache (no "
                         "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default): they use the 1 − utilization headroom, "
                         "checked at the band's pessimistic end with the sampler warm-up")
WORKSPACE_REASON = ("kernel libraries' workspaces (cuBLAS, FlashAttention / FlashInfer, Triton) are allocated by "
                    "the CUDA libraries, not by torch ops a meta-device run sees: kvplan's 256 MiB, calibrated with "
                    "the non-torch term: the calibration fits what each log leaves beside every other term, these "
                    "256 MiB included, so their error is in the fitted residual and its spread (the value is the sum "
                    "of the two, kvplan's split of it between the activation and the non-torch term is nominal)")
COLD_COMPILE_REASON = (
    "a first start with an empty compile cache runs torch.compile (Dynamo, Inductor, Triton's compile and "
    "autotuning) inside the first dummy forward of profile_run, within memory_profiling's window: the peak is reset "
    "once before profile_run (vllm/utils/mem_utils.py: 0.29.0 line 291, 0.34.0 line 301) and not again after the "
    "compile (vllm/compilation/decorators.py: aot_compile then the profiling forward, 0.29.0 lines 674 and 680, "
    "0.34.0 lines 705 and 711), so the compile's scratch on the card counts in transient_peak_headroom "
    "(mem_utils.py 0.29.0 line 323, 0.34.0 line 333) wherever it exceeds the forward's peak; a warm cache loads "
    "the compiled graph instead. It exists only where the kernels compile and benchmark on the card, not on a CPU or "
    "the meta device; vLLM issues #54122 and #54383 report first boots of a shape granted about 5 % less KV cache "
    "than a warm reboot. Not a term of its own: most corpus logs do not show the compile-cache state, so it is in "
    "the calibrated non-torch residual and its spread (the band); --enforce-eager (no compile) has none")
NON_TORCH_REASON = ("CUDA context, NCCL communicators and cuBLAS handles live outside torch's allocator with no CPU "
                    "counterpart")
DRAFTER_REASON = ("no release's drafter forward was measured (tests/golden/profile_terms/drafter/): kvplan counts "
                  "the target's forward peak only (the drafter's KV layers are in the layout, its weights in the "
                  "weights)")
DRAFTER_HOW = ("the drafter's forward in the dummy run (V1 _dummy_run's drafter.dummy_run, V2's speculator.propose "
               "with dummy_run=True, over the same T tokens after the target's forward, the target's hidden and "
               "EAGLE-3 aux states held; kvplan/budget/drafter.py) on the meta device; a draft-model or DSpark "
               "drafter's forward is not counted")
POOLER_REASON = ("a pooling runner (--runner pooling, --convert) runs _dummy_pooler_run instead of the sampler and "
                 "allocates no decoder KV cache: kvplan plans the generate runner only (kvplan/serve/effects.py "
                 "lists the flags as unmodelled)")


def encoder_row(release: str | None, architecture: str) -> dict | None:
    """The release's derived vision-tower row for a multimodal architecture (``encoder`` in the table), or the
    newest measured release's before it marked assumed; None where no release measured that architecture."""
    row = release_row(release).get("encoder") or {}
    return row.get(architecture)


V2_CUDAGRAPH_NOT_COUNTED = ("on the V2 model runner (v1/worker/gpu) this release's profile_cudagraph_memory returns 0 "
                            "(\"It is TBD whether we keep this API or not\": model_runner.py 0.22.1 line 620, 0.27.1 "
                            "749, 0.28.0 843), so nothing is subtracted for the graphs")


def term_bases(release: str, *, cudagraph_counted: bool, calibrated_groups: dict,
               v2_cudagraph_counted: bool | None = None) -> list[dict]:
    """Each profile term of ``release``: ``term``, ``basis`` (derived / calibrated / assumed / not counted / not
    planned) and ``detail`` (the golden it comes from, or why it is not derived). ``v2_cudagraph_counted``: whether
    the V2 model runner's profile subtracts the graphs, where the release has both runners (None: as V1's)."""
    row = _table()[release]
    out = []
    for term, r in (("sampler", row), ("sampler (V2 model runner)", row.get("v2"))):
        if r is None:
            continue
        where = f"tests/golden/profile_terms/{r['from']}.json" + (" v2" if term != "sampler" else "")
        sampler = f"{where} ({r['topk_topp_path']}, {r['bytes_per_logit']:g} B per logit)"
        out.append({"term": term, "basis": r["basis"], "from": r["from"],
                    "detail": sampler if r["basis"] == DERIVED else f"{sampler}; own run: {r['why']}"})
    warm = row.get("v2_warmup")
    if warm is not None:  # after the KV cache is sized: the budget's warm-up check (warmup_pass_bytes)
        s = warm["sampler"]
        what = (f"tests/golden/profile_terms/{warm['from']}.json v2_warmup (checked after the KV cache is sized, "
                f"beyond the profile's activation peak): the prompt logprobs "
                f"{warm['prompt_logprobs']['bytes_per_logit']:g} B per logit, {PROMPT_LOGPROBS_CHUNK_ROWS:,} rows a "
                "chunk; " + (
                    "the sampler's warm-up-parameter pass in the profile's own" if warm["sampler_in_profile"] else
                    f"the sampler over SamplingParams.for_sampler_warmup() {s['bytes_per_logit']:g} B per logit "
                    f"({s['bytes_per_logit_high']:g} at the high end)"))
        out.append({"term": "V2 runner's warm-up", "basis": warm["basis"], "from": warm["from"],
                    "detail": what if warm["basis"] == DERIVED else f"{what}; own run: {warm['why']}"})
    v2 = row.get("v2") or (row if row.get("runner") == "v2" else None)
    if v2 is not None and v2.get("persistent"):  # the V2 runner's per-request states (persistent_bytes)
        p = v2["persistent"]
        where = f"tests/golden/profile_terms/{v2['from']}.json" + (" v2" if v2 is not row else "")
        runner = p.get("scope") == "runner"
        what = (f"{where} persistent ({'the runner built, loaded and profiled' if runner else 'its per-request states'}"
                f" on the CPU): {p['bytes_per_logit']:g} B per request and vocabulary entry (penalty bin counts and "
                f"prompt mask{', grammar bitmask' if runner else ''}), {p['bytes_per_req']:,} B more per request"
                + (f", {p['bytes_per_token']:g} B per batched token" if runner else "")
                + ("; a multimodal model served with its inputs: its inputs_embeds [T, inputs_embeds_size]"
                   if p.get("multimodal") else "")
                + (f"; an autoregressive drafter (EAGLE-3 fit): "
                   f"{p['speculative']['bytes_per_logit']['per_spec_token']:g} B per request and vocabulary entry "
                   f"and {p['speculative']['bytes_per_req']['per_spec_token']:g} B per request more per speculative "
                   "token, its hidden_states [T, draft hidden]" if p.get("speculative") else ""))
        out.append({"term": "V2 runner's persistent buffers", "from": v2["from"],
                    "basis": v2["basis"] if p["counted"] else "not counted",
                    "detail": what if p["counted"] else (
                        f"{what}; the release's memory_profiling takes weights + torch peak increase + "
                        "non-torch increase, which leave out what the runner allocated before the profile (the free "
                        "memory's drop, total_consumed, from 0.27.1)")})
    for family, fam in (row.get("forward") or {}).items():
        if "factor" not in fam:
            out.append({"term": f"forward ({family})", "basis": ASSUMED, "detail": f"kvplan's rule: {fam['why']}"})
            continue
        models = ", ".join(sorted(Path(x["model"]).parent.name for x in (fam.get("models") or {"": fam}).values()
                                  if "model" in x))
        what = f"tests/golden/profile_terms/forward/{fam['from']}.json ({models}: factor {fam['factor']:g}, high {fam['factor_high']:g})"
        out.append({"term": f"forward ({family})", "basis": fam["basis"], "from": fam["from"],
                    "detail": what if fam["basis"] == DERIVED else f"{what}; own run: {fam['why']}"})
    for arch, m in sorted((row.get("forward_models") or {}).items()):  # a model measured for its own row
        what = (f"tests/golden/profile_terms/forward/{m['from']}.json architectures ({Path(m['model']).parent.name}: "
                f"{m['bytes_per_token']:,.0f} B per token, factor {m['factor']:g}, high {m['factor_high']:g}; kvplan "
                f"takes it for {' / '.join(m['architectures'])} instead of the family's)")
        out.append({"term": f"forward ({arch})", "basis": m["basis"], "from": m["from"],
                    "detail": what if m["basis"] == DERIVED else f"{what}; own run: {m['why']}"})
    out += parallel_term_bases(release, row)
    out.append(moe_held_term_basis(release))
    enc = row.get("encoder") or {}
    for arch, e in sorted(enc.items()):
        what = (f"tests/golden/profile_terms/encoder/{e['from']}.json ({Path(e['model']).parent.name}: {e['bytes_per_patch']:,.0f} B per "
                f"patch, factor {e['factor']:g})")
        out.append({"term": f"encoder ({arch})", "basis": e["basis"], "from": e["from"],
                    "detail": what if e["basis"] == DERIVED else f"{what}; own run: {e['why']}"})
    out.append({"term": "encoder (other multimodal)", "basis": NOT_COUNTED,
                "detail": "not estimated: a tower without a dummy-batch rule (Qwen2.5-VL, Mistral 3 / Pixtral, "
                          "Kimi-VL: no genuine config in the corpus to run their towers on; kvplan/budget/encoder.py)"})
    out.append(drafter_term_basis(row))
    out.append({"term": "pooler", "basis": NOT_PLANNED, "detail": POOLER_REASON})
    out.append({"term": "CUDA graphs", "basis": CALIBRATED,
                "detail": CUDAGRAPH_REASON + ("" if cudagraph_counted else "; " + CUDAGRAPH_NOT_COUNTED)})
    if "v2" in row and v2_cudagraph_counted is not None and v2_cudagraph_counted != cudagraph_counted:
        out.append({"term": "CUDA graphs (V2 model runner)", "basis": CALIBRATED,
                    "detail": CUDAGRAPH_REASON + ("; " + V2_CUDAGRAPH_NOT_COUNTED + "; " + CUDAGRAPH_NOT_COUNTED
                                                  if not v2_cudagraph_counted else "")})
    out.append({"term": "kernel workspaces", "basis": CALIBRATED if calibrated_groups else ASSUMED,
                "detail": WORKSPACE_REASON if calibrated_groups else WORKSPACE_REASON.split(", calibrated")[0]})
    out.append({"term": "torch.compile on a cold cache", "basis": CALIBRATED if calibrated_groups else ASSUMED,
                "detail": COLD_COMPILE_REASON})
    groups = ", ".join(f"{g} ({x['n']} start-ups)" for g, x in sorted(calibrated_groups.items()))
    out.append({"term": "non-torch memory", "basis": CALIBRATED if calibrated_groups else ASSUMED,
                "detail": NON_TORCH_REASON + (f"; calibrated on the calibration half: {groups}" if groups else
                                              "; kvplan's constants (no calibration)")})
    return out


# The drafter's forward in the dummy run (``scripts/golden/profile_terms.py --drafter-all``: the catalog's EAGLE-3
# heads and an MTP layer built as the release's proposer loads them and run over T tokens on the meta device,
# tests/golden/profile_terms/drafter/): per drafter the measured bytes per token over kvplan's rule
# (``kvplan.budget.estimate.drafter_rule_bytes_per_token``). An EAGLE or EAGLE-3 drafter takes the EAGLE-3 heads'
# largest factor, an MTP layer the MTP rows'.
DRAFTER_METHOD_ROWS = {"eagle": "eagle3", "eagle3": "eagle3", "mtp": "mtp"}


def drafter_factors(release: str | None, method: str, name: str = "") -> dict | None:
    """The release's drafter factors for a ``method`` drafter: ``value`` (custom-op path) and ``high`` (native) the
    measured drafter's own where ``name`` (the drafter checkpoint's, an MTP layer's target's) is one the goldens
    measured, else the largest of the measured drafters of that kind; the basis (derived where every row taken is
    this release's own, else assumed: the newest measured release's before it; an MTP layer other than a measured
    one's, or an EAGLE-1 head, assumed), the release the rows come from and a note; None where the table has no row
    of that kind."""
    want = DRAFTER_METHOD_ROWS.get(method)
    rows = release_row(release).get("drafter") or {}
    mine = {label: r for label, r in rows.items() if r.get("method") == want and "factor" in r}
    own = {label: r for label, r in mine.items() if name and Path(r["model"]).parent.name == name}
    mine = own or mine
    if not mine:
        return None
    basis = DERIVED if all(r["basis"] == DERIVED for r in mine.values()) else ASSUMED
    top = max(mine.values(), key=lambda r: r["factor"])
    what = (f"vLLM {top['from']}'s drafter forward on the meta device ({'its own row, ' if own else ''}"
            f"{', '.join(sorted(mine))}: "
            + ", ".join(f"{Path(r['model']).parent.name} {r['bytes_per_token']:,.0f} B per token, "
                        f"factor {r['factor']:g}" for _, r in sorted(mine.items())) + ")")
    if method != want:
        what += f"; a {method} head takes the {want} heads' factor (not measured itself)"
        basis = ASSUMED
    elif want == "mtp" and not own:  # MTP layers are each model's own (MLA, MoE, Gemma 4's): not one family
        what += f"; this model's MTP layer not measured ({name or 'unnamed'}): the measured MTP layer's factor"
        basis = ASSUMED
    if top["basis"] != DERIVED:
        what += f"; {release or 'this era'}'s drafter forward not run ({top['why']})"
    return {"value": top["factor"], "high": max(r["factor_high"] for r in mine.values()), "basis": basis,
            "release": top["from"], "source": what}


def drafter_term_basis(row: dict) -> dict:
    """The profile-terms page's row for the drafter's forward in the dummy run: derived / assumed per release from
    the table's ``drafter`` rows, else not counted with the reason."""
    rows = {k: r for k, r in (row.get("drafter") or {}).items() if "factor" in r}
    if not rows:
        return {"term": "drafter dummy run", "basis": NOT_COUNTED, "detail": DRAFTER_REASON}
    basis = DERIVED if all(r["basis"] == DERIVED for r in rows.values()) else ASSUMED
    src = sorted({r["from"] for r in rows.values()})
    what = (", ".join(f"tests/golden/profile_terms/drafter/{r}.json" for r in src) + " ("
            + ", ".join(f"{Path(r['model']).parent.name} ({r['method']}) {r['bytes_per_token']:,.0f} B per token, "
                        f"factor {r['factor']:g}-{r['factor_high']:g}" for _, r in sorted(rows.items()))
            + f"): {DRAFTER_HOW}; peak max(target forward, drafter forward + the held target states, sampler)")
    whys = sorted({r["why"] for r in rows.values() if r["basis"] != DERIVED})
    return {"term": "drafter dummy run", "basis": basis, "from": src[-1],
            "detail": what if basis == DERIVED else f"{what}; own run: {'; '.join(whys)}"}


# What the TP/PP collectives allocate on a card, per release (file and line in vllm/distributed/device_communicators/
# and v1/worker/gpu_worker.py): the communicators are made by init_worker_distributed_environment before the worker's
# init snapshot, so their buffers are in the start-up memory, not in what the profile subtracts; the collectives'
# outputs during the forward are torch allocations the parallel goldens count.
COLLECTIVE_SITES = {
    "0.11.0": ("gpu_worker.py 169 before the snapshot at 182", "custom_all_reduce.py 175", "164, 169",
               "symm_mem.py 83", "pynccl.py 138-139", "pynccl.py 158, custom_all_reduce.py 248"),
    "0.19.0": ("gpu_worker.py 263 before the snapshot at 282", "custom_all_reduce.py 187", "176, 181",
               "symm_mem.py 91", "pynccl.py 143-144", "pynccl.py 173, custom_all_reduce.py 258"),
    "0.27.1": ("gpu_worker.py 376 before the snapshot at 395", "custom_all_reduce.py 228", "207, 217",
               "symm_mem.py 92", "pynccl.py 143-144", "pynccl.py 184, custom_all_reduce.py 373"),
    "0.34.0": ("gpu_worker.py 506 before the snapshot at 549", "custom_all_reduce.py 317", "296, 306",
               "symm_mem.py 92", "pynccl.py 189-190", "pynccl.py 291, custom_all_reduce.py 527"),
}


def collective_sites(release: str) -> tuple[str, str]:
    """The cited release (the newest of ``COLLECTIVE_SITES`` not after ``release``, else the oldest) and what its
    collectives allocate, in torch and outside it."""
    from kvplan.version import version_key

    cited = [r for r in COLLECTIVE_SITES if version_key(r) <= version_key(release)] or [next(iter(COLLECTIVE_SITES))]
    r = cited[-1]
    made, rank_data, ipc, symm, warm, outs = COLLECTIVE_SITES[r]
    return r, (f"vLLM {r}: the communicators are made at init_device ({made}): the custom all-reduce's rank_data, "
               f"8 MiB by torch.empty ({rank_data}), its meta and IPC buffers by cudaMalloc outside torch ({ipc}), "
               f"the symmetric-memory all-reduce's buffer by torch's symmetric-memory allocator, not the caching "
               f"allocator ({symm}), NCCL's communicator buffers outside torch, initialised by a one-element "
               f"warm-up all-reduce ({warm}): all in the start-up memory, none in the profile's torch peak; what NCCL "
               f"allocates later is in the non-torch term (calibrated); each collective's output during the forward "
               f"(out of place: {outs}, torch.empty_like) is in the parallel forward goldens")


def parallel_term_bases(release: str, row: dict) -> list[dict]:
    """The TP/PP rows of ``term_bases``: the forward per family on a TP rank and a PP stage, the logits' gather."""
    out = []
    for family, par in sorted((row.get("parallel") or {}).items()):
        if "layouts" not in par:
            out.append({"term": f"forward TP/PP ({family})", "basis": ASSUMED,
                        "detail": f"the TP 1 factor: {par.get('why', 'no parallel golden')}"})
            continue
        lay = par["layouts"]
        what = (f"tests/golden/profile_terms/parallel/{par['from']}.json ("
                + ", ".join(f"{k} {lay[k]['factor']:g}" for k in sorted(lay) if k != "tp1")
                + " × kvplan's per-rank rule (4H + W + H·[tp > 1] + H·[later stage])·a)")
        out.append({"term": f"forward TP/PP ({family})", "basis": par["basis"], "from": par["from"],
                    "detail": what if par["basis"] == DERIVED else f"{what}; own run: {par['why']}"})
    dense = (row.get("parallel") or {}).get("dense") or {}
    if "layouts" in dense:
        per = ", ".join(f"TP {k[2:]} {dense['layouts'][k]['logits_bytes_per_logit']:g} B"
                        for k in ("tp2", "tp4", "tp8") if k in dense["layouts"])
        what = (f"tests/golden/profile_terms/parallel/{dense['from']}.json (compute_logits per logit: {per}, "
                "(2 + 1/tp)·a: the LogitsProcessor all-gathers (use_all_gather, platforms/interface.py: 0.11.0 "
                "line 476 under the V1 engine, True at 0.19.0 line 618, 0.27.1 1106, 0.34.0 1293), every TP rank gets "
                "the full logits and runs the sampler; the last PP stage only, with its two intermediate-tensor "
                "buffers held)")
        out.append({"term": "logits (TP)", "basis": dense["basis"], "from": dense["from"],
                    "detail": what if dense["basis"] == DERIVED else f"{what}; own run: {dense['why']}"})
    cited, sites = collective_sites(release)
    out.append({"term": "collective buffers (TP/PP)", "basis": NOT_COUNTED, "from": cited, "detail": sites})
    return out


# What each golden release's dummy forward leaves allocated for the fused experts under the sampler pass
# (scripts/golden/profile_terms.py --held-table; kvplan.budget.estimate.moe_held_bytes reads it).
MOE_WORKSPACE = Path(__file__).with_name("moe_workspace.json")


@cache
def _moe_workspace_table() -> dict:
    """What each golden release's dummy forward leaves allocated for the fused experts (moe_workspace.json, written
    by ``scripts/golden/profile_terms.py --held-table`` from tests/golden/profile_terms/held/)."""
    return json.loads(MOE_WORKSPACE.read_text()) if MOE_WORKSPACE.exists() else {}


def moe_held_row(release: str | None) -> tuple[dict | None, str]:
    """The release's row of the held fused-MoE workspace table (``factor``: the held bytes per token over
    ``moe_workspace_width · a``), or the newest measured release's before it (its basis then assumed); (None, "")
    before a table or before the first measured release."""
    from kvplan.version import version_key

    rows = (_moe_workspace_table().get("releases") or {})
    if release in rows:
        return rows[release], DERIVED
    older = [r for r in rows if version_key(r) <= version_key(release or "")]
    if not older:
        return None, ""
    return rows[max(older, key=version_key)], ASSUMED


def moe_held_term_basis(release: str) -> dict:
    """The profile-terms page's row for the fused-MoE workspace the forward leaves under the sampler pass."""
    row, basis = moe_held_row(release)
    if row is None:
        return {"term": "fused-MoE workspace under the sampler", "basis": NOT_COUNTED,
                "detail": "no release this old was run (tests/golden/profile_terms/held/)"}
    models = ", ".join(f"{k} {v['held_bytes_per_token']:,.0f} B a token" for k, v in sorted(row["models"].items())
                       if "held_bytes_per_token" in v)
    what = (f"tests/golden/profile_terms/held/{row['from']}.json ({models}; factor {row['factor']:g} on "
            "T·k·(max(I/tp, H) + max(2I/tp, H))·a, unquantized experts and FP8 experts on TritonExperts, "
            "whose workspace_shapes and activation-dtype workspace are the same: the FP8 MoE oracle's pick per card, "
            "kvplan.budget.quant_kernels.fp8_moe_held_backend; another FP8 kernel counted at the band's "
            "pessimistic end only)")
    if "fp8_factor" in row:
        what += (f"; under --quantization fp8 the experts ran {', '.join(row.get('fp8_kernel') or [])} on an H100 "
                 f"stand-in: factor {row['fp8_factor']:g}")
    return {"term": "fused-MoE workspace under the sampler", "basis": basis, "from": row["from"],
            "detail": what if basis == DERIVED else f"{what}; this release not run"}

