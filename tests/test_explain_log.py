"""`kvplan explain-log`: the reader, the extractor, the re-simulation and the traps.

Golden logs: every vLLM golden (tests/golden, vLLM's own planning functions run by
scripts/golden/vllm_runner.py on 28 releases) printed as a start-up log (tests/golden_logs.py);
kvplan's re-simulation from that log alone must agree on every figure vLLM printed. Real logs
(tests/logs) are in test_explain_log_real.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import kvplan
from golden_logs import golden_cases, golden_log
from kvplan.engines.vllm import prechecks
from kvplan.engines.vllm.eras import ERAS
from kvplan.engines.vllm.releases import GOLDEN_RELEASES, era_of_release
from kvplan.engines.vllm.wording import log_line_meanings
from kvplan.logs import facts_of, read_records
from kvplan.version import version_key

GiB = 1 << 30
ALL = golden_cases()
# A rotating sample in the default run (every case, each release several times), plus every
# decode-context-parallel golden (only some releases print the DCP line, and which of them the stride
# picks shifts whenever goldens are added); all of them with KVPLAN_ALL_GOLDEN_LOGS=1 (about a minute).
def _first_of_each_model(paths) -> set:
    first: dict = {}
    for p in paths:
        first.setdefault(json.loads(p.read_text())["case"]["model"], p)
    return set(first.values())


# (and the first golden of every model, so that adding goldens never drops a model from the sample)
SAMPLE = ALL if os.environ.get("KVPLAN_ALL_GOLDEN_LOGS") else sorted(
    set(ALL[::5]) | {p for p in ALL if "__dcp" in p.stem} | _first_of_each_model(ALL))


def _runner(golden: dict) -> str | None:
    """The model runner the golden ran with: VLLM_USE_V2_MODEL_RUNNER is an environment variable
    that no log line shows, so it is given as --model-runner (None: the release chose)."""
    case = golden["case"]
    if case.get("model_runner_probe") or case.get("use_v2_model_runner") is None:
        return None
    return "v2" if case["use_v2_model_runner"] else "v1"


def _skip_reason(golden: dict) -> str | None:
    case = golden["case"]
    if case["case"].startswith("nemotron-3-nano") and era_of_release(golden["vllm_version"]).nemotron_h_ssm_cache_dtype == "model":
        # The golden's specs came from `kvplan inspect` under the newest era (float32 ssm state from
        # the config hook); a release without the hook (<= 0.12) keeps the model dtype, so the
        # release's own run on this model differs from the golden by construction.
        return "golden specs carry a later release's Nemotron-H ssm dtype"
    if case.get("drafter") and case.get("pipeline_parallel_size", 1) > 1 and \
            version_key(golden["vllm_version"]) < prechecks.DRAFT_PP_ONE_FROM:
        # Up to 0.29.0 vLLM verifies the draft config at the target's PP and refuses an EAGLE head, which lacks
        # SupportsPP (run: 0.10.1, 0.19.0 and 0.29.0 refuse Llama-3.1-8B + EAGLE3 at -pp 2, 0.30.0 accepts it;
        # tests/data/prechecks_vllm.json). The golden fed kvplan's layers to the release's KV-cache functions
        # without its config checks: a layout the release never reaches, so no log of it exists to explain.
        return "vLLM <= 0.29 refuses an EAGLE head at PP > 1 before the KV cache (the drafter lacks SupportsPP)"
    return None


@pytest.mark.parametrize("path", SAMPLE, ids=[p.stem for p in SAMPLE])
def test_golden_log_agrees_on_every_figure(path):
    golden = json.loads(path.read_text())
    if _skip_reason(golden):
        pytest.skip(_skip_reason(golden))
    index = ALL.index(path)
    text = golden_log(golden, exact_budget=bool(index % 2))
    r = kvplan.explain_log(text, model_runner=_runner(golden))
    assert r["rebuild"]["status"] == "simulated", r["rebuild"]["detail"]
    assert r["rebuild"]["policy"] == f"vllm=={golden['vllm_version']}"
    rows = r["figures"]
    assert rows and all(row["agrees"] for row in rows), [row for row in rows if not row["agrees"]]
    # the budget is exact (a whole GiB), so kvplan's figure is the logged one, not only in range
    assert all(row["kvplan"] == row["logged"] for row in rows)
    assert r["verdict"] == f"agrees on all {len(rows)} figures"
    result = golden["result"]
    rec = r["recovered"]
    # every KV figure vLLM printed is recovered exactly: one row per number in the planning lines
    messages = [e["message"] for e in result["logs"]]
    sizes = [m for m in messages if m.startswith("GPU KV cache size")]
    # one row per distinct figure (a line every stage or worker prints alike is one figure, counted)
    size_rows = [x for x in rows if x["kind"] == "kv_cache_size"]
    assert len(size_rows) == len(set(sizes)) and sum(x["count"] for x in size_rows) == len(sizes)
    if result["max_concurrency"] is not None and sizes:
        assert rec["max_concurrency"] == round(result["max_concurrency"], 2)
        assert rec["concurrency_max_model_len"] == result["max_model_len"]
    pads = [m for m in messages if m.startswith("Add ")]
    assert len(rec.get("padding", [])) == len(pads)
    error = result.get("error") or (result.get("drafter_check") or {}).get("error")
    assert r["outcome"]["starts"] is (error is None)
    if error:
        assert r["outcome"]["error_type"] == error["type"]
        assert r["outcome"]["error"] == error["message"]


def test_golden_sample_covers_every_release_model_and_line():
    goldens = [json.loads(p.read_text()) for p in SAMPLE]
    assert {g["vllm_version"] for g in goldens} == set(GOLDEN_RELEASES)
    assert {g["case"]["model"] for g in goldens} == {json.loads(p.read_text())["case"]["model"] for p in ALL}
    # every kind of planning line vLLM printed is in the sample: both capacity forms, padding, the
    # override, auto-fit, DCP, the hybrid-manager conversion and each start-up error
    kinds = {f.kind for g in goldens for f in facts_of(read_records(golden_log(g))).items}
    assert {"kv_cache_size", "concurrency", "capacity", "padding", "override", "autofit", "dcp_multiply",
            "hma_off_converted", "admission_error", "drafter_split", "page_error", "exception"} <= kinds


# --- what "GPU KV cache size" means, release by release --------------------------------------


def _size_meanings(golden: dict) -> tuple[int, int, int]:
    """(logged tokens, num_blocks // groups x block, int(max_concurrency x max_model_len)) of a golden."""
    result = golden["result"]
    line = next(e["message"] for e in result["logs"] if e["message"].startswith("GPU KV cache size"))
    logged = int(line.split(":")[1].split("tokens")[0].replace(",", ""))
    groups = result["groups"]
    block = min(g["spec"]["block_size"] for g in groups)
    return logged, result["num_blocks"] // len(groups) * block, int(result["max_concurrency"] * result["max_model_len"])


@pytest.mark.parametrize("release", GOLDEN_RELEASES)
def test_kv_cache_size_meaning_follows_the_registry(release):
    """vLLM's own line on gpt-oss-20b (sliding + full groups, where the two meanings differ) is
    the blocks meaning exactly where the registry's era says ``kv_size_log == "blocks"``, and
    explain-log's meaning text follows the same field (no era names hard-coded here)."""
    golden = json.loads((ALL[0].parent / f"gpt-oss-20b__40gib__{release}.json").read_text())
    logged, blocks, concurrency = _size_meanings(golden)
    assert blocks != concurrency  # the case tells the meanings apart
    era = era_of_release(release)
    assert logged == (blocks if era.kv_size_log == "blocks" else concurrency)
    meaning = log_line_meanings(era)["kv_cache_size"]
    assert ("num_blocks // num_groups" in meaning) == (era.kv_size_log == "blocks")
    assert ("max_concurrency x max_model_len" in meaning) == (era.kv_size_log == "concurrency")


def test_kv_cache_size_meaning_changes_at_0_20_1():
    """Pinned in the wheels: 0.20.0 still prints the blocks figure, 0.20.2 (same layout modules
    as 0.20.1, scripts/golden/diff_layout.py) the concurrency one (goldens of both)."""
    g0 = json.loads((ALL[0].parent / "gpt-oss-20b__40gib__0.20.0.json").read_text())
    g2 = json.loads((ALL[0].parent / "gpt-oss-20b__40gib__0.20.2.json").read_text())
    logged0, blocks0, _ = _size_meanings(g0)
    logged2, _, conc2 = _size_meanings(g2)
    assert logged0 == blocks0 and logged2 == conc2
    assert era_of_release("0.20.0").kv_size_log == "blocks"
    assert era_of_release("0.20.1").kv_size_log == "concurrency"


def test_every_era_has_a_meaning_for_every_compared_line():
    from kvplan.logs.compare import FIGURES, PRESENCE

    kinds = {k for k, _key, _n in FIGURES} | {k for k, _n in PRESENCE if k not in ("page_error", "autofit_none")}
    for era in ERAS.values():
        assert kinds <= set(log_line_meanings(era)), era.name


# --- the reader -------------------------------------------------------------------------------

LINE = "GPU KV cache size: 42,656 tokens"


@pytest.mark.parametrize("raw", [
    LINE,
    f"INFO 10-03 16:22:17 [kv_cache_utils.py:864] {LINE}",
    f"(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:864] {LINE}",
    f"\x1b[1;36m(VllmWorker rank=1 pid=2201)\x1b[0;0m INFO 05-12 09:01:02 [kv_cache_utils.py:716] {LINE}",
    f"[1;36m(VllmWorker TP1 pid=2201)[0;0m INFO 05-12 09:01:02 [kv_cache_utils.py:716] {LINE}",
    f"(RayWorkerWrapper pid=5517, ip=10.0.0.3) INFO 05-12 09:01:02 [kv_cache_utils.py:716] {LINE}",
    f"vllm-1  | (EngineCore_DP0 pid=56) INFO 10-03 16:22:17 [kv_cache_utils.py:864] {LINE}",
    f"2025-10-03T16:22:17.123456789Z (EngineCore_DP0 pid=56) INFO 10-03 16:22:17 [kv_cache_utils.py:864] {LINE}",
    f"INFO 02-20 00:01:02 kv_cache_utils.py:524] {LINE}",
    f"WARNING 2025-10-03 16:22:17,123 [kv_cache_utils.py:864] {LINE}",
    f"INFO:vllm.v1.core.kv_cache_utils:{LINE}",
])
def test_reader_strips_every_prefix(raw):
    facts = facts_of(read_records(raw + "\n"))
    assert [(f.kind, f.values) for f in facts.items] == [("kv_cache_size", {"kv_cache_size_tokens": 42656})]


def test_reader_rejoins_terminal_and_web_wraps():
    text = (
        "(EngineCore_DP0 pid=7) INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: 42,6\n"
        "56 tokens\n"  # a terminal cut inside the number
        "(EngineCore_DP0 pid=7) INFO 10-03 16:22:17 [kv_cache_utils.py:868] Maximum concurrency for 32,768 tokens per\n"
        "request: 1.30x\n"  # a web page wrapped at a space
        "(EngineCore_DP0 pid=7) ERROR 10-03 16:22:18 [core.py:708] ValueError: To serve at least one request with "
        "the model's max seq len (131072), (3.38 GiB KV cache is needed, which is larger than the available KV cache "
        "memory (2.0 GiB). Based on the available memory, the estimated maximum model length is 708\n"
        "32. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
    )
    facts = facts_of(read_records(text))
    assert [(f.kind, f.line) for f in facts.items] == [("kv_cache_size", 1), ("concurrency", 3),
                                                       ("admission_error", 5)]
    assert facts.first("kv_cache_size")["kv_cache_size_tokens"] == 42656
    assert facts.first("concurrency").values == {"max_model_len": 32768, "max_concurrency": 1.3}
    assert facts.first("admission_error").values == {"max_model_len": 131072, "needed_gib": 3.38,
                                                     "available_gib": 2.0, "estimated_max_model_len": 70832}


def test_traceback_lines_are_not_glued_to_a_message():
    text = ("(EngineCore_DP0 pid=7) ERROR 10-03 16:22:18 [core.py:708] EngineCore failed to start.\n"
            "Traceback (most recent call last):\n"
            '  File "/x/vllm/v1/engine/core.py", line 699, in run_engine_core\n'
            "AssertionError: All drafting layers should belong to the same kv cache group\n")
    recs = read_records(text)
    assert [r.message.split(" ")[0] for r in recs] == ["EngineCore", "Traceback", "File", "AssertionError:"]
    assert [f.kind for f in facts_of(recs).items] == ["engine_failed", "drafter_split"]


def test_non_default_args_are_read_safely():
    text = ("INFO 08-05 10:00:00 [utils.py:326] non-default args: {'model_tag': 'openai/gpt-oss-20b', "
            "'speculative_config': {'method': 'eagle3', 'model': 'nvidia/gpt-oss-120b-Eagle3', "
            "'num_speculative_tokens': 3}, 'kv_transfer_config': KVTransferConfig(kv_connector='NixlConnector'), "
            "'max_model_len': 65536}\n")
    f = facts_of(read_records(text)).first("non_default_args")
    # the KVTransferConfig repr is not a literal: the other keys are still read, and the dict says so
    assert f["partial"] is True
    assert f["args"] == {"model_tag": "openai/gpt-oss-20b", "max_model_len": 65536,
                         "speculative_config": {"method": "eagle3", "model": "nvidia/gpt-oss-120b-Eagle3",
                                                "num_speculative_tokens": 3}}


# --- recovered-facts-only verdicts and errors -------------------------------------------------


def test_model_not_in_catalog_is_a_recovered_facts_only_verdict():
    text = ("INFO 10-03 16:20:01 [api_server.py:1839] vLLM API server version 0.11.0\n"
            "INFO 10-03 16:20:01 [utils.py:328] non-default args: {'model_tag': 'acme/unknown-13b'}\n"
            "INFO 10-03 16:22:17 [gpu_worker.py:298] Available KV cache memory: 6.51 GiB\n"
            "INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: 42,656 tokens\n")
    r = kvplan.explain_log(text)
    assert r["rebuild"]["status"] == "model not in catalog"
    assert r["verdict"].startswith("model not in catalog: recovered facts only")
    assert r["outcome"] == {"ok": True, "starts": True, "stage": None, "error_type": None, "error": None, "fix": None}
    assert r["recovered"]["kv_cache_size_tokens"] == 42656
    assert r["recovered"]["available_kv_cache_memory_gib"] == 6.51
    assert [row["verdict"] for row in r["figures"]] == ["not re-simulated"]


def test_missing_lines_are_listed_not_guessed():
    r = kvplan.explain_log("INFO 10-03 16:22:17 [kv_cache_utils.py:868] Maximum concurrency for 32,768 tokens "
                           "per request: 1.30x\n")
    assert r["rebuild"]["status"] == "no model"
    assert r["missing"] == [
        "the vLLM release ('vLLM API server version ...'): no line found",
        "the model ('non-default args: {...}', the engine config line or the vllm serve command): no line found",
        "the KV memory ('Available KV cache memory: ... GiB'): no line found",
    ]


def test_unreadable_file_is_one_error_line(tmp_path):
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    res = CliRunner().invoke(ensure_registered(), ["explain-log", str(tmp_path / "nope.log")])
    assert res.exit_code == 1
    assert res.stderr.strip() == (f"Error: log file {tmp_path / 'nope.log'}: not found; pass a vLLM start-up log "
                                  "file, or - to read standard input")


def test_stdin_and_table_fit_the_width():
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    golden = json.loads((ALL[0].parent / "gemma-3-27b__40gib__0.18.0.json").read_text())
    for cols in (80, 120):
        res = CliRunner().invoke(ensure_registered(), ["explain-log", "-"], input=golden_log(golden),
                                 env={"COLUMNS": str(cols)})
        assert res.exit_code == 0, res.stderr
        assert max(len(line) for line in res.stdout.splitlines()) <= cols
        assert "agrees on all" in res.stdout


# --- traps, on vLLM's own golden output ---------------------------------------------------------


def _golden(name: str) -> dict:
    return json.loads((ALL[0].parent / f"{name}.json").read_text())


def _traps(r: dict) -> dict:
    return {t["trap"]: t for t in r["traps"]}


def test_trap_padding_and_sliding_reservation_gemma3():
    """gemma-3-27b on 40 GiB, vLLM 0.18.0: 52 sliding(1024) + 10 full layers, 16 KV heads x 128, bf16
    (page 16 x 16 x 256 x 2 = 131,072 B). Threshold 1.5: 52 >= 10 x 1.5, so groups of 10: one full
    group and six sliding groups (10,10,10,10,10,2): 8 padding slots, vLLM's "15.38%" = 8/52. A block
    id is 1,310,720 B, so 40 GiB holds 32,768. Per 131,072-token request: 8,192 full blocks and
    cdiv(1023 + 8192, 16) + 1 = 577 per sliding group (11,654 in all): max_concurrency 32,768 /
    11,654 = 2.81x (the log). Padding at full load: pool x (577 x 8) / (10 x 11,654) =
    42,949,672,960 x 4,616 / 116,540 = 1,701,181,486 B. Past prefill a sliding group holds
    cdiv(1023 + 1, 16) + 1 = 65 blocks: (32,767 usable - 6 x 512 reserve) / (8,192 + 6 x 65) = 3.46x."""
    r = kvplan.explain_log(golden_log(_golden("gemma-3-27b__40gib__0.18.0")))
    traps = _traps(r)
    assert traps["padding_waste"]["padding_waste_bytes"] == 42_949_672_960 * 4_616 // 116_540 == 1_701_181_486
    assert traps["padding_waste"]["num_padding_layers"] == 8
    s = traps["sliding_window_reservation"]
    assert s["logged_max_concurrency"] == 2.81 and round(s["max_concurrency"], 6) == round(32_768 / 11_654, 6)
    assert s["steady_state_concurrency"] == round((32_767 - 3_072) / 8_582, 6)
    assert s["prefill_reserve_blocks"] == 6 * (577 - 65) == 3_072


def test_trap_hybrid_manager_off_by_a_connector_costs_what_vllm_shows():
    """gpt-oss-20b, 40 GiB, vLLM 0.18.0 with an LMCache connector: 0.18 turns the hybrid manager off
    for any --kv-transfer-config, so the layout is vLLM's own hma-off golden; the cost is vLLM's own
    figures with the manager on (the plain golden), both from the release's functions."""
    off, on = _golden("gpt-oss-20b__hma-off__40gib__0.18.0"), _golden("gpt-oss-20b__40gib__0.18.0")
    text = golden_log(off).replace("'disable_hybrid_kv_cache_manager': True",
                                   "'kv_transfer_config': {'kv_connector': 'LMCacheConnectorV1', 'kv_role': 'kv_both'}")
    r = kvplan.explain_log(text)
    assert r["verdict"] == f"agrees on all {len(r['figures'])} figures"
    trap = _traps(r)["hybrid_manager_off"]
    assert trap["reasons"] == ["--kv-transfer-config is set"]
    assert trap["cost"]["num_blocks_off"] == off["result"]["num_blocks"]
    assert trap["cost"]["num_blocks_on"] == on["result"]["num_blocks"]
    assert trap["cost"]["max_concurrency_on"] == round(on["result"]["max_concurrency"], 6)
    assert trap["cost"]["max_concurrency_off"] == round(off["result"]["max_concurrency"], 6)
    assert on["result"]["max_concurrency"] > off["result"]["max_concurrency"]


@pytest.mark.parametrize("release, length", [("0.18.0", 32_768), ("0.33.0", 32_752), ("0.34.0", 32_704)])
def test_trap_autofit_reduced_is_read_from_vllms_line(release, length):
    """Llama 3.1 8B, --max-model-len auto on 4 GiB: 32 layers x 8 KV heads x 128 x 2 x 2 B =
    131,072 B per token, so 4 GiB holds 32,768 tokens (0.18.0); from 0.29 the null block (16
    tokens at 0.33.0's block 16) is kept out of the check: 32,752 (0.33.0); 0.34.0's block is 64, so
    its null block costs 64 tokens: 32,704 (and its line is worded differently)."""
    g = _golden(f"llama-3.1-8b__autofit__4gib__{release}")
    r = kvplan.explain_log(golden_log(g))
    t = _traps(r)["autofit_reduced"]
    assert (t["original_max_model_len"], t["max_model_len"]) == (131_072, length) == (131_072, g["result"]["max_model_len"])
    assert r["verdict"] == f"agrees on all {len(r['figures'])} figures"


def test_trap_rounding_left_unused():
    """Qwen3.5-27B on 40 GiB, vLLM 0.18.0: a block id is 49 MiB (Mamba-aligned pages), so
    floor(40,960 / 49) = 835 ids and 40,960 - 835 x 49 = 45 MiB stay unused."""
    r = kvplan.explain_log(golden_log(_golden("qwen3.5-27b__40gib__0.18.0")))
    t = _traps(r)["rounding_unused"]
    assert (t["bytes_per_block"], t["unused_bytes"]) == (49 << 20, 45 << 20)


def test_trap_failure_with_the_smallest_verified_fix():
    """gpt-oss-20b on 2 GiB, vLLM 0.34.0 (block 64): vLLM's own error estimates 70720 tokens; simulate's
    failure report verifies --max-model-len 70720 starts (the first, smallest fix)."""
    r = kvplan.explain_log(golden_log(_golden("gpt-oss-20b__2gib__0.34.0")))
    t = _traps(r)["startup_failure"]
    assert t["stage"] == "admission" and t["fix"]["flag"] == "--max-model-len 70720" and t["fix"]["verified"]
    assert r["outcome"]["fix"] == "--max-model-len 70720"


def test_model_override_reads_a_local_config():
    """A log whose model is a local path kvplan cannot see gives a recovered-facts-only verdict;
    --model pointing at the same model's config (a directory) re-simulates it, and vLLM's own
    figures (llama-3.1-8b on 40 GiB, vLLM 0.18.0) agree."""
    from pathlib import Path

    golden = _golden("llama-3.1-8b__40gib__0.18.0")
    text = golden_log(golden).replace("'meta-llama/Meta-Llama-3.1-8B'", "'/models/llama-3.1-8b'")
    r = kvplan.explain_log(text)
    assert r["rebuild"]["status"] == "model not in catalog" and r["verdict"].startswith("model not in catalog")
    local = Path(__file__).resolve().parent.parent / "configs" / "meta-llama" / "Meta-Llama-3.1-8B"
    r = kvplan.explain_log(text, model=str(local))
    assert r["rebuild"]["model_source"] == "--model" and r["inputs"]["model"]["source"] == "local"
    assert r["verdict"] == f"agrees on all {len(r['figures'])} figures"


def test_a_release_before_the_registry_is_recovered_facts_only():
    """0.8 printed its arguments as a Namespace; the model is read, the release is not one kvplan
    models (0.10.1 is the first), so nothing is re-simulated and nothing is guessed."""
    text = ("INFO 04-29 01:09:40 [api_server.py:1043] vLLM API server version 0.8.5\n"
            "INFO 04-29 01:09:40 [api_server.py:1044] args: Namespace(model='Qwen/Qwen3-8B', max_model_len=8192, "
            "tensor_parallel_size=2, enable_prefix_caching=None)\n"
            "INFO 04-29 01:09:49 [kv_cache_utils.py:634] GPU KV cache size: 198,784 tokens\n")
    r = kvplan.explain_log(text)
    assert r["rebuild"]["status"] == "release not modelled" and r["rebuild"]["model"] == "Qwen/Qwen3-8B"
    assert r["verdict"].startswith("release not modelled: recovered facts only (unknown vLLM release '0.8.5'")
    assert r["facts"][1]["args"] == {"model": "Qwen/Qwen3-8B", "max_model_len": 8192, "tensor_parallel_size": 2,
                                     "enable_prefix_caching": None}
    assert r["inputs"]["policy"] is None and r["figures"][0]["verdict"] == "not re-simulated"


def test_engine_config_line_with_a_speculative_config():
    """0.2x engine core line: the resolved config, speculative config included (issue 49011's format)."""
    text = ("(EngineCore pid=7476) INFO 07-25 13:41:51 [core.py:114] Initializing a V1 LLM engine (v0.25.1) with "
            "config: model='openai/gpt-oss-20b', speculative_config=SpeculativeConfig(method='eagle3', "
            "model='amazon/GPT-OSS-20B-P-EAGLE', num_spec_tokens=5), tokenizer='openai/gpt-oss-20b', "
            "dtype=torch.bfloat16, max_seq_len=131072, tensor_parallel_size=1, pipeline_parallel_size=1, "
            "data_parallel_size=1, quantization=mxfp4, enforce_eager=False, kv_cache_dtype=auto\n"
            "(EngineCore pid=7476) INFO 07-25 13:42:10 [gpu_worker.py:508] Available KV cache memory: 40.0 GiB\n")
    r = kvplan.explain_log(text)
    cfg = r["facts"][0]
    assert (cfg["version"], cfg["model"], cfg["max_seq_len"], cfg["quantization"]) == (
        "0.25.1", "openai/gpt-oss-20b", 131072, "mxfp4")
    opts = r["rebuild"]["options"]
    assert (opts["drafter"], opts["speculative_method"], opts["num_speculative_tokens"]) == (
        "amazon/GPT-OSS-20B-P-EAGLE", "eagle3", 5)
    assert r["rebuild"]["policy"] == "vllm==0.25.1" and r["rebuild"]["status"] == "simulated"


# --- the recovered summary (kvplan.results.recovered.Recovered) -------------------------------------

# explain-log's ``recovered`` as the dict-building code printed it before it was a record, for every
# log in the tree and four made-up ones that put the keys in their other places (max_model_len after
# architecture without an engine config line; num_gpu_blocks from the override line alone; config
# values the line prints as None; a config line without a release): key order and values.
RECOVERED = Path(__file__).parent / "data" / "explain_log_recovered.json"
_P = "(EngineCore_DP0 pid=1) INFO 12-03 07:00:00 [x.py:1] "
MADE_UP = {
    "syn:no-config": ["Resolved architecture: LlamaForCausalLM", "Using max model len 4096",
                      "Using FLASH_ATTN attention backend",
                      "Overriding num_gpu_blocks=100 with num_gpu_blocks_override=50",
                      "GPU KV cache size: 1,600 tokens", "Maximum concurrency for 4,096 tokens per request: 0.39x"],
    "syn:config-none": ["Initializing a V1 LLM engine (v0.11.0) with config: model='m/x', speculative_config=None, "
                        "tokenizer='m/x', dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1, "
                        "pipeline_parallel_size=1, data_parallel_size=1, quantization=None, enforce_eager=False, "
                        "kv_cache_dtype=auto, enable_prefix_caching=None",
                        "Resolved architecture: LlamaForCausalLM", "Using max model len 4096",
                        "# GPU blocks: 100, # CPU blocks: 20",
                        "Overriding num_gpu_blocks=100 with num_gpu_blocks_override=50",
                        "Add 2 padding layers, may waste at most 3.5% KV cache memory",
                        "Add 1 padding layers, may waste at most 1.5% KV cache memory",
                        "Auto-fit max_model_len: full model context length 8192 fits in available GPU memory",
                        "Turning off hybrid kv cache manager because `--kv-transfer-config` is set",
                        "Hybrid KV cache manager is disabled for this hybrid model",
                        "ValueError: No available memory for the cache blocks. Try increasing",
                        "ValueError: All eagle layers should belong to the same kv cache group",
                        "Cannot auto-fit max_model_len: not enough GPU memory",
                        "ValueError: The model's max seq len (8192) is larger than the maximum number of tokens "
                        "that can be stored in KV cache (100)"],
    "syn:old-config": ["Initializing an LLM engine with config: model='facebook/opt-125m', tokenizer='x', "
                       "dtype=torch.float16, max_seq_len=2048",
                       "non-default args: {'model': 'x', 'max_model_len': 100}",
                       "vllm serve facebook/opt-125m --max-model-len 2048"],
    "syn:empty": ["hello"],
}


def _log_text(name: str) -> str:
    if name in MADE_UP:
        return "\n".join(_P + line for line in MADE_UP[name]) + "\n"
    return (Path(__file__).parent.parent / name).read_text(encoding="utf-8", errors="replace")


def test_recovered_snapshot_covers_every_log_in_the_tree():
    root = Path(__file__).parent.parent
    logs = {str(p.relative_to(root)) for d in ("tests/logs", "configs/logs") for p in (root / d).rglob("*.log")}
    assert logs | set(MADE_UP) == set(json.loads(RECOVERED.read_text()))


@pytest.mark.parametrize("name", sorted(json.loads(RECOVERED.read_text())))
def test_the_recovered_record_serialises_to_the_json_of_before(name):
    from kvplan.results import to_data
    from kvplan.results.recovered import Recovered
    from kvplan.usecases.explain_log import recovered

    r = recovered(facts_of(read_records(_log_text(name))))
    assert isinstance(r, Recovered)
    assert json.dumps(to_data(r)) == json.dumps(json.loads(RECOVERED.read_text())[name])


def test_recovered_keys_keep_the_place_the_log_gives_them():
    from kvplan.results import UNSET, to_data
    from kvplan.usecases.explain_log import recovered

    r = recovered(facts_of(read_records(_log_text("syn:no-config"))))
    assert r.engine_config is None and r.max_model_len == 4096
    assert r.num_gpu_blocks is None and r.override.num_gpu_blocks == 100  # only the override line shows it
    assert list(to_data(r))[:5] == ["architecture", "max_model_len", "attention_backend", "num_gpu_blocks",
                                    "num_gpu_blocks_override"]
    r = recovered(facts_of(read_records(_log_text("syn:config-none"))))
    assert r.engine_config.quantization is None and r.engine_config.decode_context_parallel_size is UNSET
    assert r.max_model_len is None and r.engine_config.max_model_len == 8192  # the config line's comes first
    assert r.num_gpu_blocks == 100 and r.override.num_gpu_blocks is None
    d = to_data(r)
    assert d["quantization"] is None and "decode_context_parallel_size" not in d
