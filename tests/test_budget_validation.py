"""The memory-budget validation corpus (scripts/budget_validation.py → docs/budget-validation.md): the page is
current, every case is sourced, and the calibration / holdout split is by source (issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

from factories import script_module

ROOT = Path(__file__).resolve().parent.parent


def _script():
    return script_module("scripts/budget_validation.py")


def test_validation_page_is_current_and_every_case_is_sourced():
    v = _script()
    rows = v.rows()
    assert (ROOT / "docs" / "budget-validation.md").read_text() == v.render(rows), \
        "docs/budget-validation.md is stale: run scripts/budget_validation.py"
    # every log file of the folder is a case, every case's log exists, each case has a source, an outcome, its
    # strata, and a reason where it is not measured
    folder = ROOT / "tests" / "logs" / "budget"
    files = {r["case"]["file"] for r in rows if r["case"].get("file")}
    assert {p.name for p in folder.glob("*.log")} <= files
    assert all((folder / f).is_file() for f in files)
    # each log is listed, with its source, in the INDEX.md of the folder it lives in
    assert all(Path(f).name in ((folder / f).parent / "INDEX.md").read_text() for f in files)
    for r in rows:
        c = r["case"]
        assert c["source"].startswith("https://") and isinstance(c["started"], bool), c["id"]
        assert {"card", "release", "parallel", "kinds"} <= set(c["strata"]), c["id"]
        assert r["measured"] or r["why"], c["id"]
    assert len({r["case"]["id"] for r in rows}) == len(rows)


def test_the_split_is_by_source_and_fixed():
    """calibration / holdout is the parity of the SHA-256 of a case's source, so all the logs of one source
    (the comments of one GitHub thread, the files of one repository, one post) are in one half. The half recorded in
    cases.json is the rule's; no source is in both halves; both halves are populated."""
    v = _script()
    halves: dict[str, set[str]] = {}
    for c in v.cases():
        key = v.source_key(c)
        assert c["half"] == v.half_of(key), (c["id"], key)
        halves.setdefault(key, set()).add(c["half"])
    assert all(len(h) == 1 for h in halves.values())
    assert {h for hs in halves.values() for h in hs} == set(v.HALVES)
    # the key: a thread is one source whatever comment a case cites; a repository's files are one source
    assert v.source_key({"source": "https://github.com/vllm-project/vllm/issues/27508 (comment 2025-10-31)"}) == \
        v.source_key({"source": "https://github.com/vllm-project/vllm/issues/27508#issuecomment-1"}) == \
        "github.com/vllm-project/vllm/thread/27508"
    assert v.source_key({"source": "https://github.com/o/r/blob/main/log/a.log"}) == \
        v.source_key({"source": "https://github.com/o/r/blob/b474d1e0/b.md (r@b474d1e0)"}) == "github.com/o/r"
    # sha256("github.com/vllm-project/vllm/thread/27508")[0] is odd: holdout (hashlib, by hand once)
    import hashlib
    assert v.half_of("github.com/vllm-project/vllm/thread/27508") == \
        v.HALVES[hashlib.sha256(b"github.com/vllm-project/vllm/thread/27508").digest()[0] % 2]


def test_the_cuda_graph_estimate_is_in_the_profile_from_0_20_0():
    """vLLM 0.20.0 defaults VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS to 1 (vllm/envs.py:1724-1726) and
    determine_available_memory takes cudagraph_memory_estimate off the KV budget
    (vllm/v1/worker/gpu_worker.py:379-425); 0.19.1 only logs the estimate ("In v0.19, CUDA graph memory
    profiling will be enabled by default", tests/logs/budget/09-...). kvplan's estimate: the release's graphs
    (102 at vLLM's defaults, kvplan/budget/cudagraph.py) × the calibrated per-graph cost a + b · layers on the rank
    (kvplan/budget/calibration.json, fitted on the calibration half's logged profile estimates): Qwen3-32B's 64
    layers, and with PP 2, 32 on the stage."""
    from dataclasses import replace

    from factories import budget_of
    from kvplan.engines.vllm import get_era
    from kvplan.model import ServingOptions, build_model_layout

    fit = json.loads((ROOT / "kvplan/budget/calibration.json").read_text())["cudagraph"]["estimate"]
    assert not get_era("vllm==0.19.1").cudagraph_memory_in_profile
    assert all(get_era(f"vllm=={r}").cudagraph_memory_in_profile for r in ("0.20.0", "0.27.1", "0.33.0"))
    era = get_era("vllm==0.27.1")
    off = replace(era, cudagraph_memory_in_profile=False)
    for opts, layers in ((ServingOptions(), 64), (ServingOptions(pipeline_parallel_size=2), 32)):
        layout = build_model_layout("Qwen/Qwen3-32B", None, opts)
        kw = dict(gpu="RTX-PRO-6000-96GB", gpu_memory_utilization=0.426)
        pool = round(102 * (fit["per_graph_bytes"] + fit["per_graph_per_layer_bytes"] * layers))
        with_graphs, without = budget_of(layout, era, **kw), budget_of(layout, off, **kw)
        assert with_graphs.cudagraph_bytes == pool
        assert without.kv_cache_memory_bytes - with_graphs.kv_cache_memory_bytes == pool


def test_the_profile_terms_carry_their_basis_and_source():
    """Every non-KV term of the profile, with how sure it is: gemma-4-26B-A4B at vLLM 0.19.0 on an A100 (the
    myoceane row): weights by kvplan's formula (no bundled index), activation and non-torch memory estimated,
    no CUDA-graph term before 0.20.0 (tests above), and the multimodal encoder's part of the profile estimated
    (test_the_gemma4_encoder_profile_from_the_config). The terms are the stage's figures: requested − their sum =
    the KV budget."""
    from kvplan.api import simulate

    b = simulate("google/gemma-4-26B-A4B", gpu="A100-80GB", policy="vllm==0.19.0", gpu_memory_utilization=0.9,
                 max_model_len=131072)["budget"]
    terms = {t["term"]: t for t in b["profile_terms"]}
    assert [t["term"] for t in b["profile_terms"]] == ["weights", "activation", "non_torch", "cudagraph",
                                                        "encoder_cache"]
    assert {k: t["basis"] for k, t in terms.items()} == {
        "weights": "kvplan's formula estimate", "activation": "kvplan's estimate", "non_torch": "kvplan's estimate",
        "cudagraph": "not counted", "encoder_cache": "kvplan's estimate"}
    # max(encoder 706,406,400, cache 14,057,472 + text peak) − text peak (test_the_gemma4_encoder_profile_...): the
    # text peak (the derived sampler pass over 256 requests × 262,144 logits at 14 B, 0.19.0) exceeds
    # 706,406,400 − 14,057,472, so the encoder adds its cached outputs only
    assert terms["encoder_cache"]["bytes"] == 14_057_472 and "1 dummy video item(s)" in terms["encoder_cache"]["source"]
    assert "no checkpoint metadata: none bundled: no genuine" in terms["weights"]["source"] and "0.19.0" in terms["cudagraph"]["source"]
    assert b["requested_memory_bytes"] - sum(t["bytes"] or 0 for t in b["profile_terms"]) == b["kv_cache_memory_bytes"]
    assert b["weights_basis"].startswith("kvplan's formula estimate: ")
    # the calibrated non-torch term says what it holds of a cold torch.compile (vLLM #54122, #54383) and how far
    assert "held only as far as this spread" in terms["non_torch"]["source"]
    assert "#54122, #54383" in terms["non_torch"]["source"]
    # on the V1 runner 0.27.1's profile subtracts the CUDA-graph estimate; a dense model's default there is the V2
    # runner, whose profile_cudagraph_memory returns 0 up to 0.28 (eras.py v2_runner_estimates_cudagraphs)
    over = simulate("Qwen/Qwen3-8B", gpu="A100-40GB", policy="vllm==0.27.1", activation_memory="1GiB",
                    model_runner="v1")["budget"]
    kinds = {t["term"]: t["basis"] for t in over["profile_terms"]}
    assert kinds["activation"] == "override" and kinds["cudagraph"] == "kvplan's estimate"
    assert "encoder_cache" not in kinds
    v2 = simulate("Qwen/Qwen3-8B", gpu="A100-40GB", policy="vllm==0.27.1", activation_memory="1GiB")["budget"]
    assert {t["term"]: t["basis"] for t in v2["profile_terms"]}["cudagraph"] == "not counted"


def test_the_checkpoint_bundle_names_every_catalog_model():
    """kvplan/budget/checkpoint_metadata.json has an entry per catalog model: genuine metadata with its
    provenance, or why there is none."""
    from kvplan.budget.checkpoint_bundle import bundled_entry, bundled_metadata, missing_reason
    from kvplan.model.catalog import catalog_ids

    for m in catalog_ids():
        e = bundled_entry(m)
        assert e is not None, m
        if bundled_metadata(m):
            assert {"repo", "commit", "path"} <= set(e["provenance"]), m
        else:
            assert missing_reason(m).startswith("no genuine model.safetensors.index.json found"), m


def test_the_gemma4_encoder_profile_from_the_config():
    """vLLM 0.19.0's profile_run (v1/worker/gpu_model_runner.py 5720-5779) encodes the dummy items of the modality
    with the most tokens per item, keeps their outputs in the encoder cache, then runs the text dummy forward and
    the sampler. gemma-4-26B-A4B (configs/google/gemma-4-26B-A4B/config.json): an image is default_output_length
    280 tokens, a video 32 · (70 + 8) = 2,496 (gemma4_mm.py 79-80, 201-216): video. Encoder budget max(2048, 2496)
    = 2,496 → 1 item; 32 frames padded to 70 · 3² = 630 patches: 20,160 encoder tokens. Tower: h 1152, I 4304,
    16 heads of 72 (16 KV): W_v = max(3 · 4304, (16 + 32) · 72 + 16 · 72) = 12,912; forward 20,160 · (4 · 1152
    + 12,912) · 2 = 706,406,400 B. Cache: 1 · 2,496 · 2816 (text hidden) · 2 = 14,057,472 B. Text: sampler
    256 · 262,144 · 8 = 536,870,912 B beats the text forward, so the peak rises from 536,870,912 to
    max(706,406,400, 14,057,472 + 536,870,912) = 706,406,400: +169,535,488 B (0.158 GiB)."""
    from kvplan.budget.estimate import estimate_encoder_profile

    config = json.loads((ROOT / "configs" / "google" / "gemma-4-26B-A4B" / "config.json").read_text())
    e, why = estimate_encoder_profile(config, 2, 2048)
    assert why == "" and (e["modality"], e["items"], e["tokens_per_item"], e["encoder_tokens"]) == ("video", 1, 2496,
                                                                                                    20_160)
    assert (e["forward_bytes"], e["cache_bytes"]) == (706_406_400, 14_057_472)
    # 8192 batched tokens: 8192 // 2496 = 3 videos
    assert estimate_encoder_profile(config, 2, 8192)[0]["encoder_tokens"] == 3 * 20_160
    # an audio tower's tokens per item are the processor's: not estimated, and why
    assert estimate_encoder_profile({**config, "audio_config": {"hidden_size": 1}}, 2, 2048)[0] is None


def test_the_corpus_configs_are_the_indexed_genuine_files():
    """tests/logs/budget/configs/INDEX.json: each config a case points at outside the bundled catalog is the
    byte-exact upstream file, its sha256 and git blob id (sha1 of "blob <size>\\0" + bytes) as recorded."""
    import hashlib

    folder = ROOT / "tests" / "logs" / "budget" / "configs"
    entries = json.loads((folder / "INDEX.json").read_text())
    assert entries
    for e in entries:
        data = (folder / e["file"]).read_bytes()
        assert len(data) == e["bytes"] and hashlib.sha256(data).hexdigest() == e["sha256"], e["file"]
        assert hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest() == e["git_blob"], e["file"]
    indexed = {e["file"].rsplit("/", 1)[0] for e in entries}
    cases = _script().cases()
    for c in cases:
        if c.get("config", "").startswith("tests/logs/budget/configs/") and "Qwen2-7B-Instruct" not in c["config"]:
            rel = c["config"][len("tests/logs/budget/configs/"):].removesuffix("/config.json")
            assert rel in indexed, c["id"]


def test_the_acceptance_metrics_count_what_the_issue_asks():
    """metrics() over hand-made rows: within 5 % counts |error| <= 0.05 (2 of 3 here: 0.04 and -0.05, not 0.06);
    the band counts only rows with a band (1 of 2 contains its logged figure: 10 in [9, 11], 20 not in [21, 22]);
    weights within 2 % (1 of 2); an over-promise is kvplan starts while vLLM failed (case c only)."""
    v = _script()

    def r(cid, kv_err, w_err, band, logged_kv, starts, started):
        return {"case": {"id": cid, "started": started}, "error": {"kv_gib": kv_err, "weights_gib": w_err},
                "band": band, "logged": {"kv_gib": logged_kv}, "starts": starts,
                "over_promise": starts and not started}

    rows = [r("a", 0.04, 0.01, (9.0, 11.0), 10.0, True, True), r("b", -0.05, None, (21.0, 22.0), 20.0, False, False),
            r("c", 0.06, 0.03, None, 5.0, True, False)]
    m = v.metrics(rows)
    assert (m["kv_n"], m["kv_within"], m["kv_high"]) == (3, 2, 2)
    assert (m["band_n"], m["band_contains"]) == (2, 1)
    assert (m["w_n"], m["w_within"]) == (2, 1)
    assert m["over_promises"] == ["c"]
    # the band as the budget may report it: bytes, as a pair or a mapping; absent -> None
    G = v.GIB
    assert v._band({"kv_cache_memory_band_bytes": [2 * G, 3 * G]}) == (2.0, 3.0)
    assert v._band({"kv_cache_memory_band_bytes": {"low": G, "high": 4 * G}}) == (1.0, 4.0)
    assert v._band({}) is None


def test_the_summary_also_counts_per_source():
    """_by_source over hand-made rows: source s1 has both cases within 5 % (0.01, -0.05), s2 one of two outside
    (0.07), s3 only a row without a KV figure (not counted): 1 of 2 sources, s2 named with 1 of 2 outside."""
    v = _script()

    def r(key, kv_err):
        return {"source_key": key, "error": {"kv_gib": kv_err}}

    line = v._by_source("holdout", [r("s1", 0.01), r("s1", -0.05), r("s2", 0.07), r("s2", 0.0), r("s3", None)])
    assert line == ("  - holdout, per source: every case within 5 % in 1 of 2 sources with a KV figure; "
                    "the others: s2 (1 of 2 outside)")
    assert v._by_source("calibration", [r("s1", 0.0)]).endswith("1 of 1 sources with a KV figure; the others: none")


def test_the_calibration_reads_the_calibration_half_only():
    """Every start-up kvplan/budget/calibration.json names (scripts/calibrate_budget.py: the non-torch groups, the
    CUDA graphs' per-graph fits, the start-up memory, the warm-up fragmentation) is a case of the calibration
    half; a group of fewer than 3 start-ups takes a parent's value, its band widened to cover the parent's."""
    v = _script()
    cal = json.loads((ROOT / "kvplan/budget/calibration.json").read_text())
    half = {c["id"]: v.half_of(v.source_key(c)) for c in v.cases()}
    named = [g["cases"] for g in cal["non_torch"].values()]
    named += [f["cases"] for f in (cal["cudagraph"]["actual"], cal["cudagraph"]["estimate"],
                                   cal["cudagraph"]["warmup_fragmentation"])]
    named += [g["cases"] for g in cal["startup"].values()]
    ids = {i for text in named for i in text.split(", ")}
    assert ids and all(half[i] == "calibration" for i in ids)
    groups = cal["non_torch"]
    for g in groups.values():
        assert g["low_bytes"] <= g["value_bytes"] <= g["high_bytes"]
        if g["n"] < 3:
            parent = groups[g["widened_by"]]
            assert parent["n"] >= 3 and g["low_bytes"] <= parent["low_bytes"] and g["high_bytes"] >= parent["high_bytes"]
            assert g["value_bytes"] == parent["value_bytes"]  # too few to set the value
    for what in ("actual", "estimate"):
        fit = cal["cudagraph"][what]
        assert fit["pooled"]["ratio_low"] <= 1 <= fit["pooled"]["ratio_high"]


def test_the_cuda_graph_term_says_how_it_was_calibrated():
    """A release that subtracts the graphs (0.27.1 on the V1 runner): the term is calibrated, its source names the
    graphs (102 at vLLM's defaults), the per-graph fit and the start-ups behind it; 0.19.0 does not count them in the
    profile, nor does 0.27.1's V2 runner (Qwen3-8B's default there: its profile_cudagraph_memory returns 0), and says
    where they go (the 1 − utilization headroom, checked at the band's pessimistic end)."""
    from kvplan.api import simulate

    for release, runner, derivation in (("0.27.1", "v1", "calibrated"), ("0.19.0", None, "not counted"),
                                        ("0.27.1", None, "not counted")):
        b = simulate("Qwen/Qwen3-8B", gpu="H100-80GB", policy=f"vllm=={release}",
                     **({"model_runner": runner} if runner else {}))["budget"]
        t = next(t for t in b["profile_terms"] if t["term"] == "cudagraph")
        assert t["derivation"] == derivation and "102 graphs × (" in t["source"]
        assert "calibrated on" in t["source"] and "start-ups" in t["source"]
        if derivation == "calibrated":
            assert t["low_bytes"] < t["bytes"] < t["high_bytes"]
        else:
            assert "1 − utilization headroom" in t["source"] and t["bytes"] == 0
            assert b["band"]["warmup_need_bytes"] > 0


def test_rocm_graphs_are_calibrated_apart_from_cuda_graphs():
    """HIP graphs on an MI300X are another runtime's: BigBirdReturns/cantos's 0.30.0 serve logs (the calibration
    half, tests/logs/budget/116-119) print 5.42-5.43 GiB (Qwen3-Coder-30B-A3B, 48 layers) and 8.91-9.14 GiB
    (Llama-3.3-70B, 80 layers) of profile estimate for 86 graphs, where the H100 start-up of the same Qwen3 model and
    graphs (115) printed 0.84 GiB. The ROCm line goes through the MI300X logs; the CUDA line stays the CUDA cards'. Two
    configurations set a line but no spread: the ROCm band is the CUDA cards' ratio band (never narrower)."""
    from kvplan.api import simulate

    cal = json.loads((ROOT / "kvplan/budget/calibration.json").read_text())["cudagraph"]
    rocm = cal["estimate"]["platforms"]["rocm"]
    assert rocm["configurations"] == 2 and rocm["band_from"] == "cuda"
    assert rocm["pooled"] == cal["estimate"]["pooled"]
    opts = dict(policy="vllm==0.30.0", quantization="fp8", max_model_len=16384, gpu_memory_utilization=0.9,
                enable_prefix_caching=False, max_num_seqs=256)
    cfg = "meta-llama/Llama-3.3-70B-Instruct"  # the bundled catalog's config
    mi = next(t for t in simulate(cfg, gpu="MI300X-192GB", **opts)["budget"]["profile_terms"] if t["term"] == "cudagraph")
    h = next(t for t in simulate(cfg, gpu="H100-80GB", **opts)["budget"]["profile_terms"] if t["term"] == "cudagraph")
    assert "86 graphs" in mi["source"] and "ROCM start-ups" in mi["source"] and "CUDA start-ups" in h["source"]
    assert abs(mi["bytes"] / 2**30 - 9.025) < 0.01  # between the logged 8.91 and 9.14 GiB
    assert h["bytes"] < 0.2 * mi["bytes"]
    assert mi["high_bytes"] > 2.5 * mi["bytes"]  # the CUDA cards' ratio band, 0.62-2.85x


def test_non_torch_is_calibrated_per_what_the_release_profile_measures():
    """From 0.27.0 vLLM's profile takes the free memory's drop (utils/mem_utils.py of 0.27.0 and 0.27.1 lines 317-326:
    ``total_consumed = before_create.free_memory - after_profile.free_memory``, ``non_kv_cache_memory =
    total_consumed + transient_peak_headroom``); 0.26.0 and before add torch's allocated peak to the non-torch
    increase (utils/mem_utils.py of 0.26.0: no ``total_consumed``). A residual of one measure is not one of the other:
    a one-GPU start-up of a 0.27.0+ release takes the ``consumed`` start-ups' median, not the median of every
    release, which the 57 older one-GPU start-ups set."""
    from kvplan.budget.estimate import calibrated, profile_measure

    assert [profile_measure(r) for r in ("0.26.0", "0.27.0", "0.27.1", "0.30.0", "0.34.0+cu129", None)] == [
        "allocated", "consumed", "consumed", "consumed", "consumed", "consumed"]
    cal = json.loads((ROOT / "kvplan/budget/calibration.json").read_text())["non_torch"]
    cases = {c["id"]: c for c in json.loads((ROOT / "tests/logs/budget/cases.json").read_text())["cases"]}
    consumed = cal["tp1/consumed"]["cases"].split(", ")
    allocated = cal["tp1/allocated"]["cases"].split(", ")
    assert len(consumed) >= 3 and not set(consumed) & set(allocated)
    assert sorted(consumed + allocated) == sorted(cal["tp1"]["cases"].split(", "))
    for cid in consumed:  # every one a 0.27.0+ release, in the calibration half
        assert profile_measure(cases[cid]["options"]["policy"].split("==")[1]) == "consumed"
    # an L40S (no calibration start-up of its own) under 0.29.0 takes the consumed start-ups' median; under 0.19.0
    # the older releases'
    assert calibrated(1, 1, "L40S-48GB", "0.29.0")["group"] == "tp1/consumed"
    assert calibrated(1, 1, "L40S-48GB", "0.19.0")["group"] == "tp1/allocated"
    assert cal["tp1/consumed"]["value_bytes"] != cal["tp1/allocated"]["value_bytes"]
