"""`kvplan fit` answers, each checked against `kvplan simulate` at its boundary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

app = ensure_registered()
from kvplan.results import to_data
from kvplan.usecases.fit import fit_scenario as fit, parse_gpus, parse_tp_sizes
from kvplan.errors import OptionError
from kvplan.usecases.scenario import Scenario
from factories import heavy_modules_after_cli

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def run(*args):
    r = runner.invoke(app, [*args, "--format", "json"])
    return r, (json.loads(r.stdout) if r.stdout.strip() else None)


def simulate(model, *args):
    r, d = run("simulate", model, *args)
    assert r.exit_code in (0, 3), r.stderr
    return d


# --- the largest max_model_len ---------------------------------------------------------------


@pytest.mark.parametrize("model, gpu, extra", [
    ("Qwen/Qwen3-8B", "L4-24GB", []),  # full attention: memory-bound well below 40960
    # sliding + full, mxfp4 (2048-token steps on an L4); 0.8: the L4's 21.99 GiB CUDA total and the Marlin-padded
    # experts (13.67 GiB) leave nothing at 0.7
    ("openai/gpt-oss-20b", "L4-24GB", ["--gpu-memory-utilization", "0.8"]),
    # (Qwen3-Next-80B at TP 2 on H100s, profiled at 0.98, was the third case: with the tp>1 non-torch term re-fitted
    # on the grown calibration half it no longer starts at any length, -0.90 GiB, so it cannot show the boundary)
])
def test_max_model_len_fits_and_one_more_does_not(model, gpu, extra):
    r, d = run("fit", model, "--gpu", gpu, *extra)
    assert r.exit_code == 0, r.stderr
    ans = d["max_model_len"]
    L = ans["max_model_len"]
    assert ans["limited_by"] == "kv_cache_memory" and L < ans["model_max_model_len"]
    at = simulate(model, "--gpu", gpu, *extra, "--max-model-len", str(L))
    over = simulate(model, "--gpu", gpu, *extra, "--max-model-len", str(L + 1))
    assert at["outcome"]["starts"] and not over["outcome"]["starts"]
    assert over["outcome"]["stage"] == "admission"
    # the same budget both ways, and the layout reported is the one that starts
    assert at["memory"]["available_bytes"] == d["budget"]["kv_cache_memory_bytes"]
    assert ans["layout"]["group_size"] == at["grouping"]["group_size"]
    assert ans["layout"]["num_blocks"] == at["memory"]["num_blocks"]
    assert ans["boundary"]["one_more"]["outcome"]["starts"] is False


def test_max_model_len_limited_by_the_model():
    r, d = run("fit", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H200")
    ans = d["max_model_len"]
    assert r.exit_code == 0 and ans["limited_by"] == "limit"
    assert ans["max_model_len"] == ans["model_max_model_len"] == 131072


def test_max_model_len_cap():
    r, d = run("fit", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "H200", "--max-model-len", "65536")
    assert d["max_model_len"]["max_model_len"] == 65536


def test_max_model_len_without_auto_fit_searches_starts():
    # vllm-min has no --max-model-len auto; the same answer comes from a search over starts.
    r, d = run("fit", "Qwen/Qwen3-8B", "--gpu", "L4", "--policy", "vllm-min")
    ans = d["max_model_len"]
    assert "binary search" in ans["method"]
    L = ans["max_model_len"]
    assert simulate("Qwen/Qwen3-8B", "--gpu", "L4", "--policy", "vllm-min", "--max-model-len", str(L))["outcome"]["starts"]
    assert not simulate("Qwen/Qwen3-8B", "--gpu", "L4", "--policy", "vllm-min",
                        "--max-model-len", str(L + 1))["outcome"]["starts"]


def test_model_that_does_not_fit_exits_3():
    r, d = run("fit", "Qwen/Qwen3-32B", "--gpu", "L4")
    assert r.exit_code == 3
    assert d["max_model_len"]["max_model_len"] is None
    assert "Not achievable" in r.stderr


# --- the smallest utilization for N requests of L tokens ---------------------------------------


@pytest.mark.parametrize("model, gpu, n, length", [
    ("openai/gpt-oss-20b", "H100-80GB", 16, 32768),
    ("Qwen/Qwen3-8B", "L40S", 6, 16384),
])
def test_min_utilization_is_enough_and_one_step_less_is_not(model, gpu, n, length):
    r, d = run("fit", model, "--gpu", gpu, "--concurrency", str(n), "--context-len", str(length))
    assert r.exit_code == 0, r.stderr
    u = d["min_gpu_memory_utilization"]["gpu_memory_utilization"]
    common = ["--gpu", gpu, "--max-model-len", str(length)]
    at = simulate(model, *common, "--gpu-memory-utilization", f"{u:.3f}")
    less = simulate(model, *common, "--gpu-memory-utilization", f"{u - 0.001:.3f}")
    # capacity is the steady-state figure (docs/capacity.md), not vLLM's worst-case max_concurrency
    assert at["outcome"]["starts"] and at["memory"]["steady_state_concurrency"] >= n
    assert not (less["outcome"]["starts"] and less["memory"]["steady_state_concurrency"] >= n)
    assert d["min_gpu_memory_utilization"]["layout"]["max_concurrency"] == at["memory"]["max_concurrency"]
    assert d["min_gpu_memory_utilization"]["layout"]["steady_state_concurrency"] == \
        at["memory"]["steady_state_concurrency"]


def test_unreachable_concurrency_exits_3_with_the_best_it_can_do():
    r, d = run("fit", "openai/gpt-oss-20b", "--gpu", "H100", "--concurrency", "100", "--context-len", "32768")
    assert r.exit_code == 3
    ans = d["min_gpu_memory_utilization"]
    assert ans["gpu_memory_utilization"] is None and 0 < ans["at_full_utilization"]["steady_state_concurrency"] < 100
    assert "steady-state concurrency" in ans["reason"]


def test_context_len_needs_concurrency():
    r = runner.invoke(app, ["fit", "openai/gpt-oss-20b", "--gpu", "H100", "--context-len", "8192"])
    assert r.exit_code == 1 and r.stderr.startswith("Error: --context-len needs --concurrency")


def test_concurrency_alone_answers_the_longest_context():
    # gemma-3-27b on an H100: the longest context at which 8 requests fit in steady state; checked
    # by simulating at that length (≥ 8) and one token more (< 8).
    r, d = run("fit", "google/gemma-3-27b-it", "--gpu", "H100-80GB", "--concurrency", "8")
    assert r.exit_code == 0, r.stderr
    ans = d["max_context_len_for_concurrency"]
    L = ans["max_model_len"]
    at = simulate("google/gemma-3-27b-it", "--gpu", "H100-80GB", "--max-model-len", str(L))
    over = simulate("google/gemma-3-27b-it", "--gpu", "H100-80GB", "--max-model-len", str(L + 1))
    assert at["outcome"]["starts"] and at["memory"]["steady_state_concurrency"] >= 8
    assert over["memory"]["steady_state_concurrency"] < 8
    assert ans["steady_state_concurrency"] == at["memory"]["steady_state_concurrency"]
    assert ans["boundary"]["one_more"]["steady_state_concurrency"] == over["memory"]["steady_state_concurrency"]
    # vLLM's own figure at that length is far lower: it charges every request the in-flight reservation
    assert at["memory"]["max_concurrency"] < 3


# --- which GPU is enough -------------------------------------------------------------------------


def test_gpu_table_rows_match_simulate():
    r, d = run("fit", "openai/gpt-oss-120b", "--gpus", "H100,H200,L40S", "--tp-sizes", "1,2",
               "--concurrency", "16", "--context-len", "32768")
    assert r.exit_code == 0
    g = d["gpus"]
    assert [(x["gpu"], x["tensor_parallel_size"]) for x in g["rows"]] == [
        ("H100-80GB", 1), ("H200-141GB", 1), ("L40S-48GB", 1), ("H100-80GB", 2), ("H200-141GB", 2), ("L40S-48GB", 2)]
    for row in g["rows"]:
        s = simulate("openai/gpt-oss-120b", "--gpu", row["gpu"], "-tp", str(row["tensor_parallel_size"]),
                     "--max-model-len", "32768")
        assert s["outcome"]["starts"] == row["outcome"]["starts"]
        assert round(s["memory"]["max_concurrency"], 6) == row["max_concurrency"]
        # enough = steady-state capacity (fit._enough, docs/capacity.md), not vLLM's worst-case max_concurrency
        assert row["enough"] == (row["outcome"]["starts"] and row["steady_state_concurrency"] >= 16)
    # an L40S (compute capability 8.9) runs the MXFP4 experts on vLLM's Marlin backend, which pads them
    # (kvplan.budget.weights.padded_expert_shape): 34.32 GiB per rank at TP 2, so the L40S pair holds about
    # 10 requests of 32k, too few; one L40S cannot even load the 65.90 GiB. One H200 (139.80 GiB) is then the
    # smallest that is enough, ahead of two H100s (158.38 GiB); one H100 is not enough
    rows = {(x["gpu"], x["tensor_parallel_size"]): x for x in g["rows"]}
    assert rows[("L40S-48GB", 1)]["outcome"]["stage"] == "load"
    assert rows[("L40S-48GB", 2)]["outcome"]["starts"] and not rows[("L40S-48GB", 2)]["enough"]
    assert (g["smallest_enough"]["gpu"], g["smallest_enough"]["num_gpus"]) == ("H200-141GB", 1)
    assert not rows[("H100-80GB", 1)]["enough"] and rows[("H100-80GB", 2)]["enough"]
    # the profiled sizing at 0.92: the L40S pair falls short as well, one H200 is the smallest
    r, d = run("fit", "openai/gpt-oss-120b", "--gpus", "H200,L40S", "--tp-sizes", "1,2", "--concurrency", "16",
               "--context-len", "32768", "--no-enable-extensible-kv-cache")
    sm = d["gpus"]["smallest_enough"]
    assert (sm["gpu"], sm["num_gpus"]) == ("H200-141GB", 1)


def test_default_is_the_table_when_no_gpu_is_given():
    out = to_data(fit(Scenario(model="Qwen/Qwen3-8B"), gpus=["L4-24GB"], tp_sizes=[1, 2]).body)
    assert out["max_model_len"] is None and out["budget"] is None
    assert [r["tensor_parallel_size"] for r in out["gpus"]["rows"]] == [1, 2]


def test_bad_tp_size_is_a_row_error_not_a_crash():
    # 40 query heads do not split over 3 ranks: vLLM refuses; the row says why.
    out = to_data(fit(Scenario(model="meta-llama/Llama-4-Scout-17B-16E-Instruct"), gpus=["H200-141GB"],
                      tp_sizes=[3]).body)
    row = out["gpus"]["rows"][0]
    assert row["outcome"]["starts"] is not True and row["outcome"]["error"]


def test_parsers():
    assert parse_tp_sizes("1, 2,2,8") == [1, 2, 8]
    assert parse_gpus("h100,mi300x") == ["H100-80GB", "MI300X-192GB"]
    with pytest.raises(OptionError):
        parse_tp_sizes("1,x")


# --- output ------------------------------------------------------------------------------------


def test_json_shape():
    r, d = run("fit", "openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5", "--gpu", "H100",
               "--concurrency", "8", "--context-len", "65536")
    assert r.exit_code == 0
    assert d["schema_version"] == 2 and d["command"] == "fit" and isinstance(d["warnings"], list)
    assert d["estimated"] is True and d["budget"]["estimated"] is True
    assert list(d)[:7] == ["schema_version", "kvplan_version", "command", "inputs", "outcome", "engine", "policy"]
    assert d["drafter"]["id"] == "amazon/GPT-OSS-20B-P-EAGLE"
    # P-EAGLE (hidden 2880, 64 heads x 64, 8 KV heads, 4 layers, LlamaConfig's default intermediate 11008):
    # fc 3 x 2880 x 2880 = 24,883,200; attention q/k/v/o = in x (4096 + 512 + 512) + 4096 x 2880, with
    # in = 2 x 2880 on the first layer (embeddings + hidden states): 41,287,680 + 3 x 26,542,080;
    # MLP 4 x 3 x 2880 x 11008 = 380,436,480; its own lm_head 201,088 x 2880 = 579,133,440
    assert d["budget"]["weights"]["num_params_by_kind"]["drafter"] == (
        24_883_200 + 41_287_680 + 3 * 26_542_080 + 380_436_480 + 579_133_440) == 1_105_367_040
    for k, v in d["budget"].items():
        if k.endswith("_bytes"):
            assert isinstance(v, int)
    lay = d["max_model_len"]["layout"]
    assert {"group_size", "num_groups", "num_padding_layers", "outcome"} <= set(lay)


def test_yaml_and_table_render():
    r = runner.invoke(app, ["fit", "Qwen/Qwen3-8B", "--gpu", "L4", "--format", "yaml"])
    assert r.exit_code == 0 and "command: fit" in r.stdout
    r = runner.invoke(app, ["fit", "Qwen/Qwen3-8B", "--gpu", "L4", "--concurrency", "2", "--context-len", "4096"])
    assert r.exit_code == 0 and "Largest max_model_len" in r.stdout and "Smallest --gpu-memory-utilization" in r.stdout


def test_list_gpus():
    r, d = run("fit", "--list-gpus")
    assert r.exit_code == 0
    names = [g["name"] for g in d["gpus"]]
    assert "H100-80GB" in names and all(g["source"] for g in d["gpus"])


def test_model_is_required_without_list_gpus():
    r = runner.invoke(app, ["fit"])
    assert r.exit_code == 2


def test_fit_does_not_import_torch():
    rc, mods = heavy_modules_after_cli(["fit", "openai/gpt-oss-20b", "--gpu", "H100", "--format", "json"], ROOT)
    assert rc == 0 and not [m for m in mods if m.split(".")[0] == "torch"]


def test_docs_mention_every_fit_flag():
    import re

    from typer.main import get_command

    doc = (ROOT / "docs" / "fit.md").read_text()
    fit_cmd = get_command(app).commands["fit"]
    own = {"--gpu", "--gpu-memory", "--gpu-memory-utilization", "--weights-memory", "--activation-memory",
           "--non-torch-memory", "--cudagraph-memory", "--exact-params", "--concurrency", "--context-len", "--gpus",
           "--tp-sizes", "--table", "--list-gpus", "--max-model-len"}
    flags = {o for p in fit_cmd.params for o in p.opts if o.startswith("--")}
    assert own <= flags
    for flag in sorted(own):
        assert re.search(re.escape(flag) + r"\b", doc), f"docs/fit.md does not mention {flag}"


# --- answers checked against vLLM's own code and a hand derivation (not only against simulate) ------


def _golden(name: str) -> dict:
    return json.loads((ROOT / "tests" / "golden" / name).read_text())["result"]


def test_max_model_len_on_a_given_kv_budget_is_vllms_auto_fit():
    # vLLM 0.34.0's own `--max-model-len auto` on Llama-3.1-8B with 4 GiB for the KV cache
    # (tests/golden/llama-3.1-8b__autofit__4gib__0.34.0.json, produced by the wheel's
    # estimate_max_model_len): 32,704 tokens. By hand: 32 full-attention layers x 8 KV heads x 128
    # x 2 (K, V) x 2 B x 64 tokens (0.34.0's default block) = 8 MiB per block, 4 GiB / 8 MiB = 512 blocks,
    # one of them the null block: 511 x 64 = 32,704.
    golden = _golden("llama-3.1-8b__autofit__4gib__0.34.0.json")
    r, d = run("fit", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "4GiB", "--policy", "vllm==0.34.0")
    assert r.exit_code == 0, r.stderr
    ans = d["max_model_len"]
    assert ans["max_model_len"] == golden["max_model_len"] == 32_704
    assert (ans["layout"]["num_blocks"], ans["layout"]["bytes_per_block"]) == (golden["num_blocks"], 8 << 20)
    assert ans["limited_by"] == "kv_cache_memory" and d["estimated"] is False
    assert d["budget"] == {"kv_cache_memory_bytes": 4 << 30, "kv_cache_memory_source": "given (--kv-cache-memory)"}
    assert d["gpus"] is None  # a given KV budget answers without the GPU table


def test_longest_context_for_n_requests_by_hand():
    # Block 64 (0.34.0's default): 8 GiB / 8 MiB = 1,024 blocks, less the null block = 1,023 for requests.
    # 4 requests of L tokens hold 4 x cdiv(L, 64) blocks in steady state (full attention keeps every token):
    # cdiv(L, 64) <= 1,023 / 4 = 255.75, so 255 blocks = 16,320 tokens; 16,321 needs 256 blocks and gives
    # 1,023 / 256 = 3.996 requests.
    r, d = run("fit", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "8GiB", "--concurrency", "4")
    assert r.exit_code == 0, r.stderr
    ans = d["max_context_len_for_concurrency"]
    assert ans["max_model_len"] == 16_320
    assert ans["steady_state_concurrency"] == round(1023 / 255, 6)
    # vLLM's logged figure counts the null block too: 1,024 / 255
    assert ans["max_concurrency"] == round(1024 / 255, 6)


def test_a_given_kv_budget_has_no_utilization_to_find():
    r, _ = run("fit", "meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory", "8GiB", "--concurrency", "4",
               "--context-len", "1000")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines() == [
        "Error: --kv-cache-memory fixes the KV budget, so there is no utilization to find for --concurrency "
        "with --context-len; drop --kv-cache-memory, or --context-len to get the longest context for N requests"]
