"""``--env VAR=VALUE``: vLLM's environment variables that change the layout or start-up
(kvplan.engines.vllm.environment), given on the command line, in a deployments entry, through
the library, or set in kvplan's own environment (given wins).

Each variable's parse and default were read in the wheels' ``vllm/envs.py`` (0.18.0, 0.33.0,
0.34.0); the PP partition checks in ``vllm/distributed/utils.py get_pp_indices`` (0.18.0 lines
110-121, 0.34.0 lines 227-238)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm import environment, get_era
from kvplan.errors import OptionError, UnsupportedError
from kvplan.model.layout import get_pp_indices, parse_pp_partition
from kvplan.options import OPTIONS, env_value
from kvplan.usecases.pipeline import layout_of, simulate_options
from kvplan.usecases.scenario import Scenario

app = ensure_registered()
runner = CliRunner()
LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # 32 layers, 8 KV heads x 128


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch):
    for name in environment.APPLIED:
        monkeypatch.delenv(name, raising=False)


def test_parse_forms_and_non_vllm_names_dropped():
    opt = OPTIONS["env"]
    assert opt.parse("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1") == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}
    # repeated --env; the value keeps its commas and '=' signs; CUDA_VISIBLE_DEVICES is not vLLM's
    assert opt.parse(["VLLM_PP_LAYER_PARTITION=10,11,11", "CUDA_VISIBLE_DEVICES=0", "VLLM_X=a=b"]) == {
        "VLLM_PP_LAYER_PARTITION": "10,11,11", "VLLM_X": "a=b"}
    # a YAML mapping: numbers and booleans become the text a shell would hold
    assert opt.parse({"VLLM_ALLOW_LONG_MAX_MODEL_LEN": True, "VLLM_USE_V2_MODEL_RUNNER": 0}) == {
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1", "VLLM_USE_V2_MODEL_RUNNER": "0"}
    with pytest.raises(OptionError, match=r"^--env: expected VAR=VALUE .*got a string \('VLLM_X'\)"):
        opt.parse("VLLM_X")
    with pytest.raises(OptionError, match=r"^--env: '1BAD' is not an environment variable name"):
        opt.parse("1BAD=x")


def test_process_environment_is_read_and_given_wins(monkeypatch):
    monkeypatch.setenv("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
    monkeypatch.setenv("VLLM_PP_LAYER_PARTITION", "16,16")
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")  # read by vLLM, not applied by kvplan: not taken
    assert env_value(None) == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1", "VLLM_PP_LAYER_PARTITION": "16,16"}
    assert env_value("VLLM_ALLOW_LONG_MAX_MODEL_LEN=0") == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "0",
                                                            "VLLM_PP_LAYER_PARTITION": "16,16"}
    # the Scenario (deployments entries, library) merges the same way
    assert Scenario(model=LLAMA, env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "0"}).env["VLLM_ALLOW_LONG_MAX_MODEL_LEN"] == "0"


def test_flags_as_each_release_reads_them():
    e34, e33, e18 = (get_era(f"vllm=={v}") for v in ("0.34.0", "0.33.0", "0.18.0"))
    # envs.py: strip().lower() in ("1", "true")
    assert environment.allow_long_max_model_len({"VLLM_ALLOW_LONG_MAX_MODEL_LEN": " True "}, e34) is True
    assert environment.allow_long_max_model_len({"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "yes"}, e34) is False
    # bool(int(v)), default 1
    assert environment.allow_chunked_local_with_hma({}, e34) is True
    assert environment.allow_chunked_local_with_hma({"VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": "0"},
                                                    e18) is False
    with pytest.raises(OptionError, match="vLLM reads it with int"):
        environment.allow_chunked_local_with_hma({"VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": "no"}, e34)
    # VLLM_USE_V2_MODEL_RUNNER: in 0.18.0's and 0.33.0's envs.py, gone from 0.34.0's
    v2 = {"VLLM_USE_V2_MODEL_RUNNER": "0"}
    assert environment.use_v2_model_runner(v2, e33) is False
    assert environment.use_v2_model_runner(v2, e34) is None
    assert environment.warnings(v2, e34) == [
        "vLLM 0.34.0 does not read VLLM_USE_V2_MODEL_RUNNER (vllm/envs.py of 0.34.0; read by 0.18.0, 0.23.0, "
        "0.33.0); ignored"]
    # a release between checked ones reads what the next checked release reads
    assert environment.checked_release("0.24.0") == "0.33.0"
    assert environment.checked_release("0.11.0") == "0.18.0"
    assert environment.warnings({"VLLM_ALLOW_LONG_MAX_MODEL_LENGTH": "1"}, e34) == [
        "VLLM_ALLOW_LONG_MAX_MODEL_LENGTH is not an environment variable of vLLM (not in vllm/envs.py of 0.18.0, "
        "0.23.0, 0.33.0, 0.34.0); vLLM ignores it"]


def test_v2_runner_variable_sets_the_runner_when_the_flag_is_absent():
    e33 = "vllm==0.33.0"
    s = Scenario(model=LLAMA, policy=e33, env={"VLLM_USE_V2_MODEL_RUNNER": "0"})
    d = Scenario(model=LLAMA, policy=e33, env={"VLLM_USE_V2_MODEL_RUNNER": "0"}).deployment
    assert simulate_options(d.scheduler, d.serving, d.era, 1 << 30, None).use_v2_model_runner is False
    d = Scenario(model=LLAMA, policy=e33, env={"VLLM_USE_V2_MODEL_RUNNER": "0"}, model_runner="v2").deployment
    assert simulate_options(d.scheduler, d.serving, d.era, 1 << 30, None).use_v2_model_runner is True  # the flag wins


def test_pp_layer_partition_parse_like_get_pp_indices():
    # vLLM's ValueError texts (f"{len(partitions)=} ..." renders as "len(partitions)=3")
    assert parse_pp_partition("10,11,11", 32, 3) == ((10, 11, 11), None)
    assert parse_pp_partition("10,x", 32, 2) == (None, "Invalid partition string: 10,x")
    assert parse_pp_partition("10,11,11", 32, 2) == (None, "len(partitions)=3 does not match pp_size=2.")
    assert parse_pp_partition("10,11", 32, 2) == (None, "sum(partitions)=21 does not match num_hidden_layers=32.")
    assert [get_pp_indices(32, r, 3, (10, 11, 11)) for r in range(3)] == [(0, 10), (10, 21), (21, 32)]


def test_pp_layer_partition_moves_layers_between_stages():
    # Llama-3.1-8B, 32 layers, PP 2: default 16 + 16; with "12,20" stage 0 holds layers 0-11.
    s = Scenario(model=LLAMA, pipeline_parallel_size=2, env={"VLLM_PP_LAYER_PARTITION": "12,20"})
    layout = layout_of(s.deployment)
    assert [len(r) for r in layout.ranks] == [12, 20]
    assert layout.ranks[0][-1] == "model.layers.11.self_attn.attn"
    assert layout.pp_partition == (12, 20) and layout.pp_partition_error is None
    # 12 layers x 2 (K,V) x 8 heads x 128 x 2 bytes x 64 tokens (0.34.0's default block) = 3,145,728 bytes
    # per block on stage 0, 20 layers → 5,242,880 on stage 1: with 12 GiB each, stage 0 has 4,096 blocks,
    # stage 1 12 GiB // 5,242,880 = 2,457, and the engine keeps the minimum.
    r = kvplan.simulate(LLAMA, pipeline_parallel_size=2, kv_cache_memory="12GiB", max_model_len=65536,
                        env=["VLLM_PP_LAYER_PARTITION=12,20"])
    assert r["outcome"]["starts"] is True
    assert [w["own_num_blocks"] for w in r["workers"]] == [4096, 2457]
    assert r["memory"]["num_blocks"] == 2457


def test_env_shown_in_inputs_and_warnings_on_the_cli(monkeypatch):
    monkeypatch.setenv("VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE", "1")
    res = runner.invoke(app, ["simulate", LLAMA, "--kv-cache-memory", "40GiB", "--env", "VLLM_FOO=1",
                              "--env", "HOME=/x", "--format", "json"])
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["inputs"]["options"]["env"] == {
        "value": {"VLLM_FOO": "1", "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE": "1"}, "given": True}
    assert any(w.startswith("VLLM_FOO is not an environment variable of vLLM") for w in data["warnings"])


def test_mla_disable_on_an_mla_model_is_refused():
    with pytest.raises(UnsupportedError, match="VLLM_MLA_DISABLE=1"):
        layout_of(Scenario(model="deepseek-ai/DeepSeek-V3", env={"VLLM_MLA_DISABLE": "1"}).deployment)
    # no effect on a model without MLA
    assert layout_of(Scenario(model=LLAMA, env={"VLLM_MLA_DISABLE": "1"}).deployment).warnings == ()


def test_mxfp4_use_marlin_is_read_where_the_release_reads_it():
    """VLLM_MXFP4_USE_MARLIN (envs.py ``maybe_convert_bool``: bool(int(v))): in 0.18.0's and 0.23.0's envs.py
    (0.19-0.23 read it through 0.23.0's names), gone from 0.24 (absent from 0.33.0's and 0.34.0's)."""
    marlin = {"VLLM_MXFP4_USE_MARLIN": "1"}
    assert environment.mxfp4_use_marlin(marlin, get_era("vllm==0.19.0")) is True
    assert environment.mxfp4_use_marlin({"VLLM_MXFP4_USE_MARLIN": "0"}, get_era("vllm==0.19.0")) is False
    assert environment.mxfp4_use_marlin(marlin, get_era("vllm==0.29.0")) is False
    assert environment.warnings(marlin, get_era("vllm==0.29.0")) == [
        "vLLM 0.29.0 does not read VLLM_MXFP4_USE_MARLIN (vllm/envs.py of 0.33.0; read by 0.18.0, 0.23.0); ignored"]
    with pytest.raises(OptionError, match="vLLM reads it with int"):
        environment.mxfp4_use_marlin({"VLLM_MXFP4_USE_MARLIN": "yes"}, get_era("vllm==0.19.0"))
