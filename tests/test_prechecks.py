"""vLLM's checks before the KV cache (kvplan.engines.vllm.prechecks): start-up failures (exit 3)
with vLLM's own text, the same through simulate, fit, check and compare.

Each test cites where the release raises it; texts marked "run" were produced by that release's
own function in .golden-venvs/vllm-0.34.0 (ModelConfig on the catalog's config.json, CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm import environment
from kvplan.errors import OptionError
from kvplan.model.limits import derive_max_model_len, derived_max_len
from kvplan.usecases.pipeline import layout_of
from kvplan.usecases.scenario import Scenario

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


def test_layout_carries_the_lengths_of_every_era(tmp_path):
    # The model stage works the lengths out once (ConfigFacts.max_lengths); a layout simulated under
    # another era (compare reuses it) reads that era's YaRN reading, not the one it was built under.
    from kvplan.engines.vllm.releases import era_names, get_era
    from kvplan.engines.vllm.proposals import PROPOSALS
    from kvplan.model.limits import YARN_MAX_LEN_READINGS
    from kvplan.usecases.pipeline import config_max_model_len, model_facts

    assert {get_era(n).yarn_max_len for n in era_names()} | {e.yarn_max_len for e in PROPOSALS.values()} \
        <= set(YARN_MAX_LEN_READINGS)
    cfg = json.loads((__import__("pathlib").Path(kvplan.__file__).parent.parent / "configs" / LLAMA /
                      "config.json").read_text())
    cfg.update(max_position_embeddings=40960, sliding_window=2047,
               rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    layout = layout_of(Scenario(model=str(tmp_path)).deployment)
    for era in (get_era("vllm==0.18.0"), get_era("vllm==0.34.0")):
        for dsw in (False, True):
            kw = dict(disable_sliding_window=dsw, yarn_max_len=era.yarn_max_len)
            facts = model_facts(layout, era, disable_sliding_window=dsw)
            assert facts.max_model_len == derive_max_model_len(cfg, **kw)
            assert facts.derived_max_len == derived_max_len(cfg, **kw)
            assert config_max_model_len(layout, era, None, disable_sliding_window=dsw) == facts.max_model_len
    assert model_facts(layout, get_era("vllm==0.18.0")).max_model_len == 131072
    assert model_facts(layout, get_era("vllm==0.34.0")).max_model_len == 40960


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
    s = Scenario(model=LLAMA, pipeline_parallel_size=2, env={"VLLM_PP_LAYER_PARTITION": "x"})
    layout = layout_of(s.deployment)
    assert layout.pp_partition_error == "Invalid partition string: x"
    assert [len(r) for r in layout.ranks] == [16, 16]


# ------------------------------------------------------------------ against vLLM itself

GOLDEN = json.loads((__import__("pathlib").Path(__file__).parent / "data" / "prechecks_vllm.json").read_text())
# Cases vLLM's config accepts but kvplan refuses before simulating (exit 1, naming the option):
# an MTP method on a model without MTP layers (vLLM fails later, building the draft model).
KVPLAN_REFUSES = {"llama8b-mtp-without-mtp-layers"}
# Results the venv, not the release, decided: 0.18.0's venv has a transformers without the
# NemotronH config class, so vLLM wanted the repository's remote code before any check ran.
# 0.18.0 and 0.33.0 check for the arctic_inference package (not in the light venvs) before suffix
# decoding's default token count.
VENV_LIMITED = ("contains custom code which must be executed", "Arctic Inference is required")
RUNS = [(release, case) for release, results in sorted(GOLDEN["results"].items())
        for case in GOLDEN["cases"] if case["name"] in results]


@pytest.mark.parametrize("release,case", RUNS, ids=[f"{r}-{c['name']}" for r, c in RUNS])
def test_config_checks_match_vllm(release, case):
    """Each case ran through ``EngineArgs.create_engine_config`` of the release
    (scripts/golden/precheck_runner.py, CPU): kvplan fails at the same config check with the same
    exception and text, or, where vLLM's config accepts the deployment, does not fail at a config
    check and settles on the same batch sizes."""
    vllm = GOLDEN["results"][release][case["name"]]
    if any(text in (vllm.get("error") or "") for text in VENV_LIMITED):
        pytest.skip(f"vLLM {release}'s venv lacks what this case needs: {vllm['error']}")
    kwargs = dict(case["options"], kv_cache_memory="200GiB", policy=f"vllm=={release}", env=case["env"] or None)
    if case["name"] in KVPLAN_REFUSES:
        with pytest.raises(OptionError):
            kvplan.simulate(case["model"], **kwargs)
        return
    r = kvplan.simulate(case["model"], **kwargs)
    out = r["outcome"]
    if not vllm["ok"]:
        assert (out["error_type"], out["error"]) == (vllm["error_type"], vllm["error"])
        assert out["stage"].startswith("config.")
        return
    assert not (out["stage"] or "").startswith("config."), out
    assert (r["scheduler"]["max_num_batched_tokens"], r["scheduler"]["max_num_seqs"]) == (
        vllm["max_num_batched_tokens"], vllm["max_num_seqs"])
    assert r["scheduler"]["original_max_model_len"] == vllm["max_model_len"]
    if vllm["num_speculative_tokens"] is not None:  # given, or vLLM's default (suffix decoding: 8 in 0.34.0)
        assert r["speculative"]["num_speculative_tokens"] == vllm["num_speculative_tokens"]
    long_warnings = [w for w in vllm["warnings"] if w.startswith("User-specified max_model_len")]
    assert [w for w in r["logs"] if w.startswith("User-specified max_model_len")] == long_warnings
    if "drafts_in_parallel" in vllm:  # speculative_config.parallel_drafting as the release holds it
        assert r["speculative"]["parallel_drafting"] == vllm["drafts_in_parallel"]
    deprecated = [w for w in vllm["warnings"] if w.startswith("parallel_drafting is deprecated")]
    assert [w for w in r["logs"] if w.startswith("parallel_drafting is deprecated")] == deprecated


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


# ------------------------------------------------------------------ num_speculative_tokens

PEAGLE = ("openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE")
# Run in each release (tests/data/prechecks_vllm.json, gpt-oss-20b-p-eagle-no-num-tokens): the draft
# model is refused while its config is read. 0.18.0 config/speculative.py lines 565-570 also names
# speculative_token_tree; 0.33.0 lines 1614-1617 and 0.34.0 spec_decode/speculator_config.py lines
# 222-226 do not.
DRAFT_TEXT_018 = ("A speculative model was provided, but neither `speculative_token_tree` nor "
                  "`num_speculative_tokens` was provided")
DRAFT_TEXT = "A speculative model was provided, but `num_speculative_tokens` was not provided"
# SpeculativeConfig._verify_args (0.18.0 lines 762-767, 0.33.0 1946-1951, 0.34.0 1653-1658), run for
# ngram (llama8b-ngram-no-num-tokens) and MTP (deepseek-v3-mtp-no-num-tokens) in all three releases
VERIFY_TEXT = ("num_speculative_tokens must be provided with speculative model unless the draft model config "
               "contains an n_predict parameter.")


@pytest.mark.parametrize("policy, text, num_blocks, max_concurrency", [
    # gpt-oss-20b + P-EAGLE: 12 sliding + 16 full layers, group size 16, 32,768-byte pages at block 16: 40 GiB //
    # (16 × 32,768) = 81,920 blocks. A request: 8192 full blocks + the sliding layers' cdiv(127 + B, 16) + 1
    # with B the tokens in flight: 2 batches (16,384) from 0.26 (1033 blocks), 1 batch (8192) in 0.18 (521).
    # 0.34.0's block is 64 (golden gpt-oss-20b-peagle__40gib__0.34.0: 20,480 blocks, 8.877330): 131,072-byte
    # pages, 40 GiB // (16 × 131,072) = 20,480; cdiv(127 + 16,384, 64) + 1 = 259 sliding + 2048 full blocks.
    ("vllm==0.34.0", DRAFT_TEXT, 20480, round(20480 / (259 + 2048), 6)),
    ("vllm==0.33.0", DRAFT_TEXT, 81920, round(81920 / (1033 + 8192), 6)),
    ("vllm==0.18.0", DRAFT_TEXT_018, 81920, round(81920 / (521 + 8192), 6)),
])
def test_drafter_without_num_tokens_fails_at_start(policy, text, num_blocks, max_concurrency):
    code, data = cli("simulate", *PEAGLE, "--kv-cache-memory", "40GiB", "--policy", policy)
    assert code == 3
    assert data["outcome"] == {"ok": False, "starts": False, "stage": "config.speculative",
                               "error_type": "ValidationError", "error": text, "fix": "--num-speculative-tokens 1"}
    assert "num_speculative_tokens" not in json.dumps(data["warnings"])  # a failure now, not a warning
    # the fix, re-simulated with 1 token (the least vLLM accepts); the attention layout does not depend on it
    (fix,) = data["fixes"]
    assert (fix["option"], fix["value"], fix["verified"], fix["num_blocks"], fix["max_concurrency"]) == (
        "num_speculative_tokens", 1, True, num_blocks, max_concurrency)
    assert fix["result"].startswith("starts with 1 speculative token (simulated with 1, the least vLLM accepts")
    code, given = cli("simulate", *PEAGLE, "--kv-cache-memory", "40GiB", "--policy", policy,
                      "--num-speculative-tokens", "1")
    assert code == 0 and given["memory"]["num_blocks"] == num_blocks
    assert given["memory"]["max_concurrency"] == max_concurrency
    assert given["memory"]["steady_state_concurrency"] == fix["steady_state_concurrency"]


def test_drafter_with_num_tokens_starts():
    # 0.34.0 (block 64), 5 tokens (the README's P-EAGLE examples): a decode step holds 1 + 5 tokens, so a
    # sliding layer keeps cdiv(127 + 6, 64) + 1 = 4 blocks at steady state; the reserve is 259 − 4 = 255 and
    # steady_state_concurrency (20,479 − 255) / (4 + 2048) (test_capacity's derivation at 64 tokens)
    code, data = cli("simulate", *PEAGLE, "--kv-cache-memory", "40GiB", "--num-speculative-tokens", "5")
    assert code == 0 and data["outcome"]["starts"] is True and data["fixes"] == []
    assert data["memory"]["num_blocks"] == 20480
    assert data["memory"]["steady_state_concurrency"] == round((20479 - 255) / 2052, 6)


def test_pasted_serve_line_without_num_tokens_fails_like_vllm():
    # the brief's pasted line, with vLLM's own budget flag (40 GiB = 42,949,672,960 bytes)
    line = ["vllm", "--format", "json", "serve", "openai/gpt-oss-20b", "--kv-cache-memory-bytes", "42949672960",
            "--speculative-config", '{"method":"eagle3","model":"amazon/gpt-oss-20b-p-eagle"}']
    r = runner.invoke(app, line)
    assert r.exit_code == 3, r.output
    data = json.loads(r.stdout)
    assert data["command"] == "vllm" and data["serve"]["release"] == "0.34.0"
    # the fix is written as the serve line gives it: the key added to its own --speculative-config
    fix = ('--speculative-config \'{"method": "eagle3", "model": "amazon/gpt-oss-20b-p-eagle", '
           '"num_speculative_tokens": 1}\'')
    assert data["outcome"] == {"ok": False, "starts": False, "stage": "config.speculative",
                               "error_type": "ValidationError", "error": DRAFT_TEXT, "fix": fix}
    assert [(f["flag"], f["num_blocks"]) for f in data["fixes"]] == [(fix, 20480)]  # block 64 (above)
    # with the tokens on the line it starts
    given = '{"method":"eagle3","model":"amazon/gpt-oss-20b-p-eagle","num_speculative_tokens":5}'
    r = runner.invoke(app, [*line[:-1], given])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["outcome"]["starts"] is True
    # the same line read with vLLM 0.18.0: its wording, the same fix
    r = runner.invoke(app, [line[0], "--policy", "vllm==0.18.0", *line[1:]])
    assert r.exit_code == 3, r.output
    data = json.loads(r.stdout)
    assert (data["serve"]["release"], data["outcome"]["error"], data["outcome"]["fix"]) == (
        "0.18.0", DRAFT_TEXT_018, fix)
    # the --spec-* flags (0.33.0+): the fix is --spec-tokens
    r = runner.invoke(app, [*line[:-2], "--spec-method", "eagle3", "--spec-model", "amazon/gpt-oss-20b-p-eagle"])
    assert r.exit_code == 3, r.output
    assert json.loads(r.stdout)["outcome"]["fix"] == "--spec-tokens 1"


@pytest.mark.parametrize("args", [
    ("meta-llama/Meta-Llama-3.1-8B", "--speculative-method", "ngram"),
    ("deepseek-ai/DeepSeek-V3", "--speculative-method", "mtp"),
    ("Qwen/Qwen3-Next-80B-A3B-Thinking", "--speculative-method", "mtp"),  # GDN: the conv state depends on it
])
@pytest.mark.parametrize("policy", ["vllm==0.34.0", "vllm==0.18.0"])
def test_ngram_and_mtp_without_num_tokens_fail_with_verify_args_text(args, policy):
    # MTP gets no default from num_nextn_predict_layers: vLLM sets the draft model (and reads its
    # n_predict) only when num_speculative_tokens is given (0.18.0 config/speculative.py line 360,
    # 0.34.0 lines 1386-1389)
    code, data = cli("simulate", *args, "--kv-cache-memory", "80GiB", "--max-model-len", "4096", "--policy", policy)
    assert code == 3
    assert (data["outcome"]["stage"], data["outcome"]["error_type"], data["outcome"]["error"]) == (
        "config.speculative", "ValidationError", VERIFY_TEXT)
    assert data["outcome"]["fix"] == "--num-speculative-tokens 1" and data["fixes"][0]["verified"] is True


def test_mamba_fix_is_simulated_on_the_rebuilt_layout():
    # Qwen3-Next MTP: the GDN conv state holds kernel − 1 + num_speculative_tokens rows, so the fix's
    # figures are those of a layout built with 1 token (not the failing one's 0)
    common = ("simulate", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--speculative-method", "mtp", "--kv-cache-memory",
              "40GiB", "--max-model-len", "32768")
    code, failing = cli(*common)
    code1, given = cli(*common, "--num-speculative-tokens", "1")
    assert code == 3 and code1 == 0
    (fix,) = failing["fixes"]
    assert (fix["num_blocks"], fix["max_concurrency"]) == (given["memory"]["num_blocks"],
                                                           given["memory"]["max_concurrency"])
    assert given["memory"]["page_size_bytes"] != 0


@pytest.mark.parametrize("policy, tokens", [("vllm==0.34.0", 8), ("vllm==0.33.0", 24), ("vllm==0.18.0", 24)])
def test_suffix_decoding_gets_vllms_default(policy, tokens):
    # 0.34.0 spec_decode/suffix/config.py line 28: min(8, suffix_decoding_max_tree_depth = 24);
    # 0.18.0 config/speculative.py line 615, 0.33.0 line 1735: the depth itself
    r = kvplan.simulate(LLAMA, speculative_method="suffix", kv_cache_memory="40GiB", policy=policy)
    assert r["outcome"]["starts"] is True
    assert r["speculative"] == {"method": "suffix", "num_speculative_tokens": tokens, "parallel_drafting": False,
                                    "parallel_drafting_given": None, "note": None}


def test_inspect_warns_and_shows_the_layout():
    # inspect runs none of vLLM's checks before the KV cache (a TP that does not divide the heads
    # passes too): it warns with the default release's text and keeps exit 0
    code, data = cli("inspect", *PEAGLE)
    assert code == 0
    assert data["warnings"] == [
        f"vLLM (0.34.0) refuses this speculative method without num_speculative_tokens at start-up "
        f"(ValidationError: {DRAFT_TEXT}); pass --num-speculative-tokens. The layout shown is built with 0 "
        "(simulate reports the refusal, exit 3)"]
    code, data = cli("inspect", *PEAGLE, "--num-speculative-tokens", "5")
    assert code == 0 and data["warnings"] == []
    code, data = cli("inspect", LLAMA, "-tp", "3")
    assert code == 0


def test_compare_fit_and_check_predict_it(tmp_path):
    code, data = cli("compare", *PEAGLE, "--kv-cache-memory", "40GiB")
    row = data["engines"][0]
    assert row["engine"] == "vllm" and (row["outcome"]["stage"], row["outcome"]["error"]) == (
        "config.speculative", DRAFT_TEXT)
    # fit: no length starts; the outcome names the one change that lets it answer
    code, data = cli("fit", *PEAGLE, "--gpu", "H100-80GB")
    assert code == 3 and data["outcome"]["fix"] == "--num-speculative-tokens 1"
    assert data["max_model_len"]["max_model_len"] is None
    assert data["max_model_len"]["layout"]["outcome"]["error"] == DRAFT_TEXT
    # check: the deployment fails its `starts` expectation with vLLM's text and simulate's verified fix
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n  - name: peagle\n    model: openai/gpt-oss-20b\n"
                 "    drafter: amazon/GPT-OSS-20B-P-EAGLE\n    kv_cache_memory: 40GiB\n    expect:\n      starts: true\n")
    (dep,) = kvplan.check([str(f)])["deployments"]
    assert dep["failed_expectations"] == ["starts"]
    assert dep["outcome"] == {"ok": False, "starts": False, "stage": "config.speculative",
                              "error_type": "ValidationError", "error": DRAFT_TEXT, "fix": "--num-speculative-tokens 1"}


# A model kvplan has no layer rule for still meets vLLM's config checks first (issue 35): vLLM raises them
# in create_engine_config, before it constructs the model class. Qwen4ExpForCausalLM: vLLM 0.34.0 registers it
# and passes its config checks, then fails constructing it here (tests/golden/architectures/0.34.0/
# Qwen4ExpForCausalLM.json, Qwen4ExpTextConfig() defaults: max_position_embeddings 32768, 16 attention heads);
# kvplan has no rule for it (every architecture vLLM builds here has one since issue 35).
def _no_rule_config(tmp_path):
    golden = json.loads((Path(__file__).parent / "golden" / "architectures" / "0.34.0" /
                         "Qwen4ExpForCausalLM.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(golden["config"]))
    return str(tmp_path)


@pytest.mark.parametrize("args, text", [
    # ModelConfig._get_and_verify_max_len (0.34.0 config/model.py line 2708): the text LLAMA_200K's test
    # shows, for 65536 > max_position_embeddings 32768 (a float after vLLM's RoPE scaling arithmetic)
    (["--max-model-len", "65536"],
     "(config.max_model_len): ValidationError: User-specified max_model_len (65536) is greater than the derived "
     "max_model_len (max_position_embeddings=32768.0 or model_max_length=None in model's config.json)."),
    # ModelConfig.verify_with_parallel_config (0.34.0 config/model.py line 1581): 16 heads, TP 3
    (["-tp", "3"], "(config.tensor_parallel): ValidationError: Total number of attention heads (16) must be "
                   "divisible by tensor parallel size (3)."),
    # SpeculativeConfig._verify_args: ngram without num_speculative_tokens (SPEC_TOKENS_REQUIRED)
    (["--speculative-method", "ngram"], "(config.speculative): ValidationError: num_speculative_tokens must be "
                                        "provided with speculative model"),
])
def test_model_without_layer_rule_gets_vllms_config_error_first(tmp_path, args, text):
    path = _no_rule_config(tmp_path)
    r = runner.invoke(app, ["simulate", path, "--kv-cache-memory", "40GiB", *args])
    assert r.exit_code == 3, r.output
    assert "vLLM 0.34.0 would fail at start-up " + text in r.output
    assert "no layer rule" in r.output  # and says the checks it could run are the config's only
    if args[0] == "--max-model-len":
        assert "fix: --max-model-len 32768 or less" in r.output


def test_model_without_layer_rule_that_passes_the_config_checks_is_refused_for_its_rule(tmp_path):
    r = runner.invoke(app, ["simulate", _no_rule_config(tmp_path), "--kv-cache-memory", "40GiB",
                            "--max-model-len", "32768"])
    assert r.exit_code not in (0, 3), r.output
    assert "registers 'Qwen4ExpForCausalLM', but kvplan has no layer rule" in r.output
