"""vLLM's checks before the KV cache (kvplan.engines.vllm.prechecks): start-up failures (exit 3)
with vLLM's own text, the same through simulate, fit, check and compare.

Each test cites where the release raises it; texts marked "run" were produced by that release's
own function in /work/venvs/vllm-0.34.0 (ModelConfig on the catalog's config.json, CPU)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm import environment
from kvplan.errors import OptionError
from kvplan.model.limits import derive_max_model_len, derived_max_len
from kvplan.usecases.scenario import Scenario, build_layout

app = ensure_registered()
runner = CliRunner()
LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # max_position_embeddings 131072, rope_type llama3 (factor 8)

# vLLM 0.34.0, run: ModelConfig(model=configs/meta-llama/Meta-Llama-3.1-8B, max_model_len=200000)
# raised pydantic's ValidationError ("Value error, " + this text). 0.18.0 model.py line 2066 and
# 0.33.0 line 2664 build the same text (read).
LLAMA_200K = (
    "User-specified max_model_len (200000) is greater than the derived max_model_len "
    "(max_position_embeddings=131072.0 or model_max_length=None in model's config.json). To allow overriding "
    "this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used "
    "with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding "
    "derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding "
    "derived_max_model_len will cause a CUDA array out-of-bounds error."
)


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch):
    for name in environment.APPLIED:
        monkeypatch.delenv(name, raising=False)


def cli(*args):
    r = runner.invoke(app, [*args, "--format", "json"])
    return r.exit_code, json.loads(r.stdout)


# ------------------------------------------------------------------ max_model_len


@pytest.mark.parametrize("policy", ["vllm==0.34.0", "vllm==0.33.0", "vllm==0.18.0"])
def test_max_model_len_above_derived_fails_at_start(policy):
    code, data = cli("simulate", LLAMA, "--kv-cache-memory", "60GiB", "--max-model-len", "200000",
                     "--policy", policy)
    assert code == 3
    # the fix: the derived length (131072.0 tokens) or vLLM's own override, each re-simulated
    assert data["outcome"] == {"ok": False, "starts": False, "stage": "config.max_model_len",
                               "error_type": "ValidationError", "error": LLAMA_200K, "fix": "--max-model-len 131072"}
    assert [(f["flag"], f["starts"], f["max_model_len"]) for f in data["fixes"]] == [
        ("--max-model-len 131072", True, 131072), ("--env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", True, 200000)]


def test_allow_long_max_model_len_turns_it_into_vllms_warning(monkeypatch):
    code, data = cli("simulate", LLAMA, "--kv-cache-memory", "60GiB", "--max-model-len", "200000",
                     "--env", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1")
    assert code == 0 and data["outcome"]["starts"] is True
    # logger.warning_once("%s %s", msg, warning): the first sentence, then the caution
    head = LLAMA_200K.split(" To allow")[0]
    assert data["logs"][0] == head + " " + LLAMA_200K.split("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. ")[1]
    # the same from kvplan's own environment
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "true")
    code, data = cli("simulate", LLAMA, "--kv-cache-memory", "60GiB", "--max-model-len", "200000")
    assert code == 0 and data["inputs"]["options"]["env"] == {
        "value": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "true"}, "given": False}


def test_max_model_len_at_the_derived_maximum_starts():
    code, data = cli("simulate", LLAMA, "--kv-cache-memory", "60GiB", "--max-model-len", "131072")
    assert code == 0 and data["outcome"]["starts"] is True


def test_every_command_predicts_it():
    r = kvplan.simulate(LLAMA, kv_cache_memory="60GiB", max_model_len="200k")
    assert r["outcome"]["stage"] == "config.max_model_len"
    assert r["outcome"]["error"] == LLAMA_200K  # 200k = 200,000 tokens (vLLM's human_readable_int)
    # compare: the vLLM row fails with the same stage, type and text
    code, data = cli("compare", LLAMA, "--kv-cache-memory", "60GiB", "--max-model-len", "200000")
    row = data["engines"][0]
    assert row["engine"] == "vllm" and row["outcome"] == {
        "ok": False, "starts": False, "stage": "config.max_model_len", "error_type": "ValidationError",
        "error": LLAMA_200K, "fix": None}
    # fit at a length above the derived maximum: the answer says the engine fails, with the text
    fit = kvplan.fit(LLAMA, gpu="H100-80GB", context_len=200000, concurrency=1)
    assert LLAMA_200K in json.dumps(fit)


def test_derived_length_per_release_and_model():
    cfg = {"max_position_embeddings": 131072, "rope_theta": 5e5,
           "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}}
    d = derived_max_len(cfg)
    assert (d.value, d.key, d.model_max_length) == (131072.0, "max_position_embeddings", None)
    assert str(d.value) == "131072.0"  # RoPE models: vLLM multiplies by the factor (1.0 here): a float
    # no RoPE parameters at all: still a float (pydantic coerces ModelArchitectureConfig's
    # tuple[float, str | None]; 0.34.0 run on Nemotron-H-56B-Base-8K: "max_position_embeddings=8192.0")
    assert str(derived_max_len({"max_position_embeddings": 4096}).value) == "4096.0"
    # Gemma 3 skips the RoPE factor (its length is already scaled): 131072.0, not 8 x 131072
    g3 = {"model_type": "gemma3_text", "max_position_embeddings": 131072, "rope_theta": 1e6,
          "rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    assert str(derived_max_len(g3).value) == "131072.0"
    # --disable-sliding-window: the window (an int) times the RoPE factor 1.0 (Phi-3: "sliding_window=2047.0")
    phi3 = {"max_position_embeddings": 4096, "sliding_window": 2047, "rope_theta": 1e4}
    d = derived_max_len(phi3, disable_sliding_window=True)
    assert (str(d.value), d.key) == ("2047.0", "sliding_window")
    assert str(derived_max_len({"max_position_embeddings": 4096, "sliding_window": 2047},
                               disable_sliding_window=True).value) == "2047"
    # YaRN: 0.18.0 starts from original_max_position_embeddings x factor (model.py lines 2020-2024);
    # 0.33.0/0.34.0 take max_position_embeddings as already scaled (0.34.0 lines 2651-2663)
    yarn = {"max_position_embeddings": 40960, "rope_theta": 1e6,
            "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert derived_max_len(yarn, yarn_max_len="original_times_factor").value == 131072.0
    assert derived_max_len(yarn, yarn_max_len="factor_in_length").value == 40960.0
    # the smallest key wins; a config model_max_length replaces it (Command-R)
    d = derived_max_len({"max_position_embeddings": 8192, "seq_length": 4096, "model_max_length": 131072})
    assert (str(d.value), d.key, d.model_max_length) == ("131072.0", "model_max_length", 131072)
    # LongRoPE: the default length is original_max_position_embeddings (model.py 0.34.0 line 2688)
    lr = {"max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "rope_theta": 1e4,
          "rope_scaling": {"type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}}
    assert derive_max_model_len(lr) == 4096 and derived_max_len(lr).value == 131072.0


def test_yarn_model_ceiling_differs_between_018_and_034(tmp_path):
    # A YaRN config whose max_position_embeddings is not original x factor: 0.18.0 lets 131072
    # through (derived 32768 x 4), 0.34.0 refuses it (derived 40960.0).
    cfg = json.loads((__import__("pathlib").Path(kvplan.__file__).parent.parent / "configs" / LLAMA /
                      "config.json").read_text())
    cfg.update(max_position_embeddings=40960,
               rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    old = kvplan.simulate(str(tmp_path), kv_cache_memory="60GiB", max_model_len=131072, policy="vllm==0.18.0")
    new = kvplan.simulate(str(tmp_path), kv_cache_memory="60GiB", max_model_len=131072, policy="vllm==0.34.0")
    assert old["outcome"]["starts"] is True
    assert new["outcome"]["error"].startswith(
        "User-specified max_model_len (131072) is greater than the derived max_model_len "
        "(max_position_embeddings=40960.0 or model_max_length=None in model's config.json).")


# ------------------------------------------------------------------ VLLM_PP_LAYER_PARTITION


def test_pp_partition_errors_are_start_up_failures():
    # get_pp_indices (distributed/utils.py 0.18.0 lines 118-121, 0.34.0 lines 233-236): ValueError
    r = kvplan.simulate(LLAMA, kv_cache_memory="40GiB", pipeline_parallel_size=2, env="VLLM_PP_LAYER_PARTITION=10,20")
    assert r["outcome"]["stage"] == "model_init.pp_layer_partition"
    assert (r["outcome"]["error_type"], r["outcome"]["error"]) == (
        "ValueError", "sum(partitions)=30 does not match num_hidden_layers=32.")
    # vLLM calls get_pp_indices for PP 1 too: one entry, the layer count
    r = kvplan.simulate(LLAMA, kv_cache_memory="40GiB", env="VLLM_PP_LAYER_PARTITION=16,16")
    assert r["outcome"]["error"] == "len(partitions)=2 does not match pp_size=1."


def test_negative_pp_partition_entries():
    # 0.34.0 distributed/utils.py line 237-238: f"Negative layer count in {partition_list_str=}."
    r = kvplan.simulate(LLAMA, kv_cache_memory="40GiB", pipeline_parallel_size=2,
                        env="VLLM_PP_LAYER_PARTITION=-1,33")
    assert r["outcome"]["error"] == "Negative layer count in partition_list_str='-1,33'."
    # 0.33.0 has no such check: negative ranges are not modelled (exit 1, naming the variable)
    with pytest.raises(OptionError, match="VLLM_PP_LAYER_PARTITION=-1,33: negative layer counts"):
        kvplan.simulate(LLAMA, kv_cache_memory="40GiB", pipeline_parallel_size=2, policy="vllm==0.33.0",
                        env="VLLM_PP_LAYER_PARTITION=-1,33")


def test_layout_keeps_default_split_when_partition_is_invalid():
    layout = build_layout(Scenario(model=LLAMA, pipeline_parallel_size=2, env={"VLLM_PP_LAYER_PARTITION": "x"}))
    assert layout.pp_partition_error == "Invalid partition string: x"
    assert [len(r) for r in layout.ranks] == [16, 16]


# ------------------------------------------------------------------ against vLLM itself

GOLDEN = json.loads((__import__("pathlib").Path(__file__).parent / "data" / "prechecks_vllm.json").read_text())
# Cases vLLM's config accepts but kvplan refuses before simulating (exit 1, naming the option):
# an MTP method on a model without MTP layers (vLLM fails later, building the draft model).
KVPLAN_REFUSES = {"llama8b-mtp-without-mtp-layers"}
# vLLM refuses a drafter without num_speculative_tokens; kvplan's --drafter shorthand keeps going
# with 0 and a warning on attention-only targets (the layout does not depend on it).
KVPLAN_WARNS = {"llama8b-eagle3-no-num-tokens", "llama8b-draft-model-no-num-tokens"}
# Results the venv, not the release, decided: 0.18.0's venv has a transformers without the
# NemotronH config class, so vLLM wanted the repository's remote code before any check ran.
VENV_LIMITED = "contains custom code which must be executed"
RUNS = [(release, case) for release, results in sorted(GOLDEN["results"].items())
        for case in GOLDEN["cases"] if case["name"] in results]


@pytest.mark.parametrize("release,case", RUNS, ids=[f"{r}-{c['name']}" for r, c in RUNS])
def test_config_checks_match_vllm(release, case):
    """Each case ran through ``EngineArgs.create_engine_config`` of the release
    (scripts/golden/precheck_runner.py, CPU): kvplan fails at the same config check with the same
    exception and text, or, where vLLM's config accepts the deployment, does not fail at a config
    check and settles on the same batch sizes."""
    vllm = GOLDEN["results"][release][case["name"]]
    if VENV_LIMITED in (vllm.get("error") or ""):
        pytest.skip(f"vLLM {release}'s venv could not read the config without remote code")
    kwargs = dict(case["options"], kv_cache_memory="200GiB", policy=f"vllm=={release}", env=case["env"] or None)
    if case["name"] in KVPLAN_REFUSES:
        with pytest.raises(OptionError):
            kvplan.simulate(case["model"], **kwargs)
        return
    r = kvplan.simulate(case["model"], **kwargs)
    out = r["outcome"]
    if case["name"] in KVPLAN_WARNS:
        assert not vllm["ok"] and out["starts"] is True
        assert any(w.startswith("vLLM refuses a drafter without num_speculative_tokens") for w in r["warnings"])
        return
    if not vllm["ok"]:
        assert (out["error_type"], out["error"]) == (vllm["error_type"], vllm["error"])
        assert out["stage"].startswith("config.")
        return
    assert not (out["stage"] or "").startswith("config."), out
    assert (r["scheduler"]["max_num_batched_tokens"], r["scheduler"]["max_num_seqs"]) == (
        vllm["max_num_batched_tokens"], vllm["max_num_seqs"])
    assert r["scheduler"]["original_max_model_len"] == vllm["max_model_len"]
    long_warnings = [w for w in vllm["warnings"] if w.startswith("User-specified max_model_len")]
    assert [w for w in r["logs"] if w.startswith("User-specified max_model_len")] == long_warnings


def test_scheduler_refusals_get_the_batch_size_that_passes():
    # verify_max_model_len: 512 < max_num_seqs 1024 → the least token budget that passes is 1024
    r = kvplan.simulate(LLAMA, kv_cache_memory="60GiB", max_num_batched_tokens=512, max_num_seqs=1024)
    assert r["outcome"]["error"] == "max_num_batched_tokens (512) must be greater than or equal to max_num_seqs (1024)."
    assert [f["flag"] for f in r["fixes"]] == ["--max-num-batched-tokens 1024"]
    # without chunked prefill the budget must hold max_model_len (131072), or chunked prefill goes back on
    r = kvplan.simulate(LLAMA, kv_cache_memory="60GiB", enable_chunked_prefill=False, max_num_batched_tokens=4096)
    assert r["outcome"]["stage"] == "config.scheduler"
    assert [f["flag"] for f in r["fixes"]] == ["--max-num-batched-tokens 131072", "--enable-chunked-prefill"]
    # a default budget with chunked prefill off is raised to max_model_len (EngineArgs), so it starts
    r = kvplan.simulate(LLAMA, kv_cache_memory="60GiB", enable_chunked_prefill=False, max_model_len=32768)
    assert r["outcome"]["starts"] is True and r["scheduler"]["max_num_batched_tokens"] == 32768
