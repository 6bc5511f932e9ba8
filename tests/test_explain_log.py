"""`kvplan explain-log`: the reader, the extractor, the re-simulation and the traps.

Golden logs: every vLLM golden (tests/golden, vLLM's own planning functions run by
scripts/golden/vllm_runner.py on 28 releases) printed as a start-up log (tests/golden_logs.py);
kvplan's re-simulation from that log alone must agree on every figure vLLM printed. Real logs
(tests/logs) are in test_explain_log_real.py.
"""

from __future__ import annotations

import json
import os

import pytest

import kvplan
from golden_logs import golden_cases, golden_log
from kvplan.engines.vllm.eras import ERAS
from kvplan.engines.vllm.releases import GOLDEN_RELEASES, era_of_release
from kvplan.engines.vllm.wording import log_line_meanings
from kvplan.logs import facts_of, read_records

GiB = 1 << 30
ALL = golden_cases()
# A rotating sample in the default run (every case, each release several times); all 1,272 with
# KVPLAN_ALL_GOLDEN_LOGS=1 (about a minute).
SAMPLE = ALL if os.environ.get("KVPLAN_ALL_GOLDEN_LOGS") else ALL[::5]


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
    assert len([x for x in rows if x["kind"] == "kv_cache_size"]) == len(sizes)
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


def test_golden_sample_covers_every_release_and_model():
    releases = {json.loads(p.read_text())["vllm_version"] for p in SAMPLE}
    models = {json.loads(p.read_text())["case"]["model"] for p in SAMPLE}
    assert releases == set(GOLDEN_RELEASES)
    assert models == {json.loads(p.read_text())["case"]["model"] for p in ALL}


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
        "the vLLM release ('vLLM API server version …'): no line found",
        "the model ('non-default args: {…}' or the engine config line): no line found",
        "the KV memory ('Available KV cache memory: … GiB'): no line found",
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
