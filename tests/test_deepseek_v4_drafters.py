"""DeepSeek-V4's own MTP layer, its DSpark drafter and data parallelism, end to end against vLLM 0.34.0.

The goldens are the wheel's: ``tests/golden/deepseek-v4-*__0.34.0.json`` (``make_goldens.py --releases 0.34.0
--only deepseek-v4``: vLLM's grouping, sizing and admission functions on the layers) and the architecture
harness's ``tests/golden/architectures/0.34.0/{DeepSeekV4MTPModel,DSparkDraftModel}.json`` (vLLM built the
drafters on the meta device from ``--speculative-config``). Here kvplan simulates each case from the model
alone, and its groups (every layer name, in order), block size, num_blocks and max concurrency must be the
wheel's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.api import simulate
from kvplan.errors import ConfigError, UnsupportedError
from kvplan.model.layout import build_model_layout

GOLDEN = Path(__file__).parent / "golden"
V4F, V4P = "deepseek-ai/DeepSeek-V4-Flash", "tests/data/arch_configs/nvidia/DeepSeek-V4-Pro-NVFP4"
V4DS = "tests/data/arch_configs/deepseek-ai/DeepSeek-V4-Flash-DSpark"
V4PDS = "tests/data/arch_configs/deepseek-ai/DeepSeek-V4-Pro-DSpark"
ROOT = Path(__file__).parents[1]

# case -> (model, kvplan options), as scripts/golden/make_goldens.py defines them
CASES = {
    "deepseek-v4-flash-mtp1__40gib": (V4F, dict(speculative_method="mtp", num_speculative_tokens=1)),
    "deepseek-v4-flash-mtp3__32k__4gib": (V4F, dict(speculative_method="mtp", num_speculative_tokens=3,
                                                     kv_cache_memory="4GiB", max_model_len=32768)),
    "deepseek-v4-pro-mtp1__40gib": (V4P, dict(speculative_method="mtp", num_speculative_tokens=1)),
    "deepseek-v4-flash-dspark__40gib": (V4DS, dict(speculative_method="dspark")),
    "deepseek-v4-flash-dspark__32k__4gib": (V4DS, dict(speculative_method="dspark", kv_cache_memory="4GiB",
                                                       max_model_len=32768)),
    "deepseek-v4-flash-dspark__tp2-dcp2__40gib": (V4DS, dict(speculative_method="dspark", tensor_parallel_size=2,
                                                             decode_context_parallel_size=2)),
    "deepseek-v4-pro-dspark__40gib": (V4PDS, dict(speculative_method="dspark")),
    "deepseek-v4-flash__dp2__40gib": (V4F, dict(data_parallel_size=2)),
    "deepseek-v4-flash__dp8-ep__40gib": (V4F, dict(data_parallel_size=8, enable_expert_parallel=True)),
    "deepseek-v4-flash__tp2-dp4-ep__40gib": (V4F, dict(tensor_parallel_size=2, data_parallel_size=4,
                                                       enable_expert_parallel=True)),
    "deepseek-v4-pro__dp8-ep__40gib": (V4P, dict(data_parallel_size=8, enable_expert_parallel=True)),
    "deepseek-v4-flash-mtp1__dp8-ep__40gib": (V4F, dict(speculative_method="mtp", num_speculative_tokens=1,
                                                        data_parallel_size=8, enable_expert_parallel=True)),
}


def _golden(case: str) -> dict:
    return json.loads((GOLDEN / f"{case}__0.34.0.json").read_text())


def _kvplan(case: str) -> dict:
    model, opts = CASES[case]
    model = str(ROOT / model) if model.startswith("tests/") else model
    opts = {"kv_cache_memory": "40GiB", "max_model_len": 1048576, **opts}
    return simulate(model, policy="vllm==0.34.0", max_num_batched_tokens=8192, **opts).to_dict()


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_the_wheel(case):
    g = _golden(case)
    want, d = g["result"], _kvplan(case)
    assert g["case"].get("data_parallel_size", 1) == CASES[case][1].get("data_parallel_size", 1)
    if want["error"] is not None:  # vLLM refuses it (the 32k cases: max_model_len vs the 4 GiB pool)
        assert d["outcome"]["starts"] is False
        assert d["outcome"]["error_type"] == want["error"]["type"]
        assert want["error"]["message"].split(". ")[0] in d["outcome"]["error"]
        return
    assert d["outcome"]["starts"] is True
    assert [g_["layer_names"] for g_ in d["groups"]] == [g_["layer_names"] for g_ in want["groups"]]
    # the cache block (256: the DeepSeek-V4 indexer's kernel block) and each group's own block size
    assert d["serving"]["block_size"] == 256
    assert [g_["block_size"] for g_ in d["groups"]] == [g_["spec"]["block_size"] for g_ in want["groups"]]
    assert d["memory"]["num_blocks"] == want["num_blocks"]
    assert d["memory"]["max_concurrency"] == pytest.approx(want["max_concurrency"], abs=5e-6)


def test_figures_per_engine():
    # the wheel's figures, written out: V4-Flash at 40 GiB and 1,048,576 tokens keeps 42,853 blocks with
    # or without its MTP layer or the three DSpark stages (each adds one 64-token sliding-window cache to
    # the swa groups, 43 -> 44 -> 46 layers split in 2 groups, still within the widest group's 62 slots:
    # a block's bytes are unchanged), and with DP 2, DP 8 + EP, TP 2 x DP 4 + EP (one engine per DP rank)
    flash = {c: _golden(c)["result"]["num_blocks"] for c in CASES if c.startswith("deepseek-v4-flash")
             and c.endswith("__40gib") and "tp2-dcp2" not in c}
    assert set(flash.values()) == {42853}
    assert _golden("deepseek-v4-pro-mtp1__40gib")["result"]["num_blocks"] == 29909
    assert _golden("deepseek-v4-pro__dp8-ep__40gib")["result"]["num_blocks"] == 29909
    swa = [g["num_layers"] for g in _golden("deepseek-v4-flash-dspark__40gib")["result"]["groups"]][:2]
    assert swa == [23, 23]
    assert _golden("deepseek-v4-flash-dspark__tp2-dcp2__40gib")["result"]["error"]["type"] == "AssertionError"


def test_drafter_layers_as_vllm_builds_them():
    # vLLM 0.34.0 builds V4's MTP layer and the DSpark stages as V4 decoder layers past num_hidden_layers
    # (compress ratio 1): each owns only attn.swa_cache, the target's spec
    # (tests/golden/architectures/0.34.0/DeepSeekV4MTPModel.json, DSparkDraftModel.json)
    for model, method, tokens, names in (
            (V4F, "mtp", 1, ["model.layers.43.attn.swa_cache"]),
            (str(ROOT / V4DS), "dspark", None, [f"model.layers.{i}.attn.swa_cache" for i in (43, 44, 45)])):
        from kvplan.model.options import ServingOptions

        L = build_model_layout(model, options=ServingOptions(speculative_method=method,
                                                             num_speculative_tokens=tokens))
        drafter = [ls for ls in L.layers if ls.source == "drafter"]
        target_swa = next(ls.spec for ls in L.layers if ls.name == "model.layers.0.attn.swa_cache")
        assert [ls.name for ls in drafter] == names
        assert all(ls.spec == target_swa for ls in drafter)
        # DSpark's width: dspark_block_size (5), vLLM's default num_speculative_tokens
        assert L.num_speculative_tokens == (tokens or 5)


@pytest.mark.parametrize("variant", ["deepseek-v4-pro-mtp", "deepseek-v4-pro-dspark"])
def test_pro_drafters_as_vllm_builds_them(variant):
    # V4-Pro's MTP layer (model.layers.61) and DSpark stages (61-63), built by the wheel from
    # --speculative-config (make_goldens.py --drafter-variants): kvplan's drafter layers are vLLM's
    from kvplan.verify import archcheck

    golden = json.loads((GOLDEN / "architectures" / "0.34.0-drafters" / f"{variant}.json").read_text())
    assert golden["status"] == "built"
    assert [n for n, _ in golden["layers"]] == [f"model.layers.{61 + i}.attn.swa_cache"
                                                for i in range(3 if "dspark" in variant else 1)]
    assert archcheck.check(golden).verdict == "exact"


def test_dspark_refusals():
    # the base V4-Flash checkpoint ships no DSpark stages: vLLM first refuses the missing width, then (given
    # one) cannot build DSparkDeepseekV4Model without dspark_target_layer_ids
    d = simulate(V4F, kv_cache_memory="40GiB", speculative_method="dspark").to_dict()
    assert d["outcome"]["starts"] is False
    assert "`num_speculative_tokens` was not provided" in d["outcome"]["error"]
    with pytest.raises(ConfigError, match="dspark_target_layer_ids"):
        simulate(V4F, kv_cache_memory="40GiB", speculative_method="dspark", num_speculative_tokens=4)
    with pytest.raises(UnsupportedError, match="not modelled yet"):
        simulate("meta-llama/Llama-3.1-8B-Instruct", kv_cache_memory="40GiB", speculative_method="dspark",
                 num_speculative_tokens=4)


@pytest.mark.parametrize("ratios", [[0, 0, 4], [0, 0, 3] + [0] * 41, [0, 0, "4"] + [0] * 41])
def test_bad_compress_ratios_are_one_line_config_errors(tmp_path, ratios):
    # too few ratios, a ratio the compressor does not take, a string: transformers' DeepseekV4Config refuses each
    # first; kvplan's own checks (reached without transformers) name the same field, one line either way
    cfg = json.loads((ROOT / "configs" / V4F / "config.json").read_text())
    cfg["compress_ratios"] = ratios
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ConfigError) as e:
        build_model_layout(str(tmp_path / "config.json"))
    assert str(tmp_path) in str(e.value) and "\n" not in str(e.value)
