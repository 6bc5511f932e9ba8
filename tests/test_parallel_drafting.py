"""speculative_config.parallel_drafting as vLLM treats it (issue 12).

Facts, read in the wheels: 0.18.0 and 0.33.0 hold ``parallel_drafting: bool = False``
(config/speculative.py 0.18.0 line 132, 0.33.0 line 511), set by the user (True for dflash/dspark:
0.33.0 lines 1581-1582); a P-EAGLE head's ``ptd_token_id`` does not set it. 0.34.0 holds
``bool | None = None`` (line 559) and refuses an explicit True with another method (lines
1688-1697). Run through ``create_engine_config`` of all three releases:
tests/data/prechecks_vllm.json, cases gpt-oss-20b-p-eagle-7-tokens, -parallel-drafting and
-no-parallel-drafting (compared in tests/test_prechecks.py).
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered

app = ensure_registered()
runner = CliRunner()
GiB = 1 << 30

PEAGLE = "amazon/GPT-OSS-20B-P-EAGLE"
# the amazon model card's line (huggingface.co/amazon/GPT-OSS-20B-P-EAGLE)
CARD_SPEC = {"method": "eagle3", "model": PEAGLE, "num_speculative_tokens": 7, "parallel_drafting": True}
REFUSED = "parallel_drafting is only supported by the dflash and dspark methods, not 'eagle3'."
SEQUENTIAL_033 = ("the drafter is a P-EAGLE head (ptd_token_id in its config), but vLLM drafts with it sequentially "
                  "unless speculative_config.parallel_drafting is set (--parallel-drafting)")


def serve_json(spec: dict, *kvplan_opts: str):
    r = runner.invoke(app, ["vllm", "--format", "json", *kvplan_opts, "serve", "openai/gpt-oss-20b",
                            "--speculative-config", json.dumps(spec), "--kv-cache-memory-bytes", "40G"])
    assert r.exit_code in (0, 3), r.stderr
    return r, json.loads(r.stdout)


def test_model_card_line_is_refused_by_034_and_starts_without_the_key():
    # vLLM 0.34.0, run (tests/data/prechecks_vllm.json gpt-oss-20b-p-eagle-parallel-drafting): pydantic's
    # ValidationError around SpeculativeConfig._verify_args' ValueError, before the KV cache.
    r, d = serve_json(CARD_SPEC)
    assert r.exit_code == 3
    assert d["outcome"]["stage"] == "config.speculative"
    assert (d["outcome"]["error_type"], d["outcome"]["error"]) == ("ValidationError", REFUSED)
    without = {k: v for k, v in CARD_SPEC.items() if k != "parallel_drafting"}
    fix = f"--speculative-config '{json.dumps(without)}'"
    assert d["outcome"]["fix"] == fix
    # the fix re-simulated: 12 sliding + 12 full + 4 drafter full layers, group_size 16, page at 0.34.0's
    # block 64: 64 x 8 x 64 x 2 x 2 B = 131,072 B, 16 x 131,072 = 2,097,152 B a block: 40 GiB // 2,097,152 =
    # 20,480 blocks; one request: sliding cdiv(128 - 1 + 2 x 8192, 64) + 1 = 259 + full 131072 / 64 =
    # 2,048 blocks: 20,480 / 2,307 = 8.877330 (V2, async: 2 batches in flight; the 0.34.0 golden's figure).
    (f,) = d["fixes"]
    assert (f["option"], f["value"], f["starts"], f["num_blocks"], f["max_concurrency"]) == (
        "parallel_drafting", None, True, 40 * GiB // 2097152, round(20480 / 2307, 6))
    r, d = serve_json(without)
    assert r.exit_code == 0
    assert (d["memory"]["num_blocks"], d["memory"]["max_concurrency"]) == (20480, round(20480 / 2307, 6))
    assert d["speculative"]["parallel_drafting"] is False
    # an explicit false: vLLM 0.34.0's deprecation warning (prechecks_vllm.json -no-parallel-drafting)
    r, d = serve_json({**CARD_SPEC, "parallel_drafting": False})
    assert r.exit_code == 0
    assert d["logs"][0] == ("parallel_drafting is deprecated and has no effect: dflash and dspark always draft in "
                            "parallel, and no other method supports it. It will be removed in a future release.")


def test_model_card_line_on_033_runs_v1():
    # 0.33.0 accepts the key; V2 does not support parallel drafting with EAGLE, so V1 runs it.
    r, d = serve_json(CARD_SPEC, "--policy", "vllm==0.33.0")
    assert r.exit_code == 0
    assert (d["scheduler"]["model_runner"], d["speculative"]["parallel_drafting"]) == ("v1", True)
    assert d["speculative"]["note"] is None


def simulate_033(pp: int, parallel: bool | None) -> dict:
    return kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=7, pipeline_parallel_size=pp,
                           kv_cache_memory="40GiB", policy="vllm==0.33.0", parallel_drafting=parallel)


def test_033_runner_follows_the_option_not_the_head():
    # Every figure below is vLLM 0.33.0's own (kvplan simulate --cross-check --vllm-python
    # .golden-venvs/vllm-0.33.0/bin/python: the release's use_v2_model_runner, max_concurrent_batches
    # and get_kv_cache_configs on these specs; 24 fields at PP 1, 36 at PP 3, all agreeing).
    # PP 1: V1 (parallel drafting) and V2 both keep async scheduling and 2 batches in flight
    # (V1: 2 with PP 1; V2: PP + 1), so the layout is the same: 81,920 blocks, 8.880217.
    on, off = simulate_033(1, True), simulate_033(1, None)
    for d, runner_name in ((on, "v1"), (off, "v2")):
        s = d["scheduler"]
        assert (s["model_runner"], s["async_scheduling"], s["max_in_flight_tokens"]) == (runner_name, True, 16384)
        assert (d["memory"]["num_blocks"], d["memory"]["max_concurrency"]) == (81920, round(81920 / 9225, 6))
    assert off["speculative"]["note"] == SEQUENTIAL_033 and on["speculative"]["note"] is None
    # PP 3: stage 3 holds 4 sliding + 4 full + 4 drafter layers: group_size 8, 8 x 32,768 B a block,
    # 40 GiB // 262,144 = 163,840 blocks. With parallel drafting V1 turns async off (PP): 3 batches,
    # sliding cdiv(127 + 3 x 8192, 16) + 1 = 1,545 blocks, 163,840 / (1,545 + 8,192) = 16.826538
    # (vLLM logs 16.83x). Without it V2 keeps async: 4 batches, cdiv(127 + 32768, 16) + 1 = 2,057,
    # 163,840 / 10,249 = 15.985950 (15.99x).
    on, off = simulate_033(3, True), simulate_033(3, None)
    s = on["scheduler"]
    assert (s["model_runner"], s["async_scheduling"], s["max_in_flight_tokens"]) == ("v1", False, 3 * 8192)
    assert "Async scheduling is disabled because the V1 model runner does not support it with pipeline " \
           "parallelism." in on["logs"]
    assert (on["memory"]["num_blocks"], on["memory"]["max_concurrency"]) == (163840, round(163840 / 9737, 6))
    s = off["scheduler"]
    assert (s["model_runner"], s["async_scheduling"], s["max_in_flight_tokens"]) == ("v2", True, 4 * 8192)
    assert (off["memory"]["num_blocks"], off["memory"]["max_concurrency"]) == (163840, round(163840 / 10249, 6))


def test_018_holds_the_option_and_notes_the_head():
    # 0.18.0: V1 by default either way, reservations of max_num_batched_tokens alone
    d = kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=7, kv_cache_memory="40GiB",
                        policy="vllm==0.18.0")
    assert (d["speculative"]["parallel_drafting"], d["speculative"]["note"]) == (False, SEQUENTIAL_033)
    assert d["scheduler"]["model_runner"] == "v1"


def test_cli_flag_and_text_note():
    r = runner.invoke(app, ["simulate", "openai/gpt-oss-20b", "--drafter", PEAGLE, "--num-speculative-tokens", "7",
                            "--kv-cache-memory", "40GiB", "--policy", "vllm==0.33.0", "--parallel-drafting"])
    assert r.exit_code == 0, r.stderr
    assert "speculative method eagle3, 7 speculative tokens, parallel drafting" in r.stdout
    r = runner.invoke(app, ["simulate", "openai/gpt-oss-20b", "--drafter", PEAGLE, "--num-speculative-tokens", "7",
                            "--kv-cache-memory", "40GiB", "--parallel-drafting"])
    assert r.exit_code == 3
    assert "omit --parallel-drafting" in r.stdout
