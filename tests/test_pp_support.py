"""vLLM refuses --pipeline-parallel-size > 1 for a model whose class lacks SupportsPP
(``ModelConfig.verify_with_parallel_config``: ``NotImplementedError``), release by release.

The goldens (tests/golden/pp_support/<release>.json) are scripts/golden/pp_support.py's reading of each
release's registry and model files, cross-checked by running the release's own ``supports_pp``;
kvplan's table (kvplan/engines/vllm/pp_support.json) is generated from them (``regenerate.py pp-support``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import script_module
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm import prechecks
from kvplan.version import version_key

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests/golden/pp_support"
RELEASES = sorted((f.stem for f in GOLDEN.glob("*.json")), key=version_key)
GPT_OSS = "configs/openai/gpt-oss-20b"  # architectures: ["GptOssForCausalLM"]
LLAMA = "meta-llama/Meta-Llama-3.1-8B"  # LlamaForCausalLM, 32 layers
# vLLM's text, the same two string literals in every golden release (0.10.1 config/__init__.py lines 1318-1319,
# 0.34.0 config/model.py lines 1594-1595; read, and found by the script's CHECK_RE in each release)
TEXT = ("Pipeline parallelism is not supported for this model. "
        "Supported models implement the `SupportsPP` interface.")

app = ensure_registered()
runner = CliRunner()
pp_support = script_module("scripts/golden/pp_support.py", "pp_support_script")


def golden(release: str) -> dict:
    return json.loads((GOLDEN / f"{release}.json").read_text())


def test_every_golden_release_is_recorded_with_the_check():
    assert RELEASES[0] == "0.10.1" and RELEASES[-1] == "0.34.0" and len(RELEASES) == 39
    for r in RELEASES:
        check = golden(r)["check"]
        assert (check["exception"], check["text"]) == ("NotImplementedError", TEXT), r
    # where it is raised: config/__init__.py before the config package was split (0.10.x), config/model.py after
    assert [(golden(r)["check"]["file"], golden(r)["check"]["line"]) for r in ("0.10.1", "0.10.2", "0.11.0",
                                                                              "0.34.0")] == [
        ("vllm/config/__init__.py", 1318), ("vllm/config/__init__.py", 1368), ("vllm/config/model.py", 1062),
        ("vllm/config/model.py", 1594)]


def test_gpt_oss_entries_follow_the_cited_source_lines():
    # vllm/model_executor/models/gpt_oss.py (read in each release):
    #   0.10.1 and 0.10.1.1 line 229: class GptOssForCausalLM(nn.Module):           -> no SupportsPP
    #   0.10.2 line 616:               class GptOssForCausalLM(nn.Module, SupportsPP): -> SupportsPP
    #   0.11.0 line 635 (nn.Module, SupportsPP, SupportsEagle3), 0.34.0 line 1369 (a multi-line base list
    #   with SupportsPP): supported in every later release
    for r in RELEASES:
        module_class, supports, why = golden(r)["architectures"]["GptOssForCausalLM"]
        assert module_class == "gpt_oss:GptOssForCausalLM", r
        expected = version_key(r) >= (0, 10, 2)
        assert supports is expected, r
        assert why == (None if expected else "SupportsPP not in the MRO"), r


def test_cross_checks_agree_with_the_releases_own_supports_pp():
    # supports_pp(cls) run in the release's environment on every registered class that imported on the CPU
    for r in ("0.10.1", "0.19.0", "0.29.0"):
        g = golden(r)
        cross = g["cross_check"]
        assert cross["disagree"] == {}, r
        assert cross["num_agree"] == cross["num_run"] > 0.8 * g["num_architectures"], r
        assert cross["num_run"] + len(cross["not_imported"]) == g["num_architectures"], r
        # the cross-check compared against the static answer recorded here
        assert cross["static_digest"] == pp_support.digest(pp_support.read(GOLDEN / f"{r}.json")), r
    assert "GptOssForCausalLM" not in golden("0.10.1")["cross_check"]["not_imported"]


def test_table_is_generated_from_the_goldens():
    table = json.loads(prechecks.PP_SUPPORT_TABLE.read_text())
    assert table == json.loads(json.dumps(pp_support.table(GOLDEN)))
    assert table["text"] == TEXT
    assert table["lacking"]["GptOssForCausalLM"] == [["0.10.1", "0.10.1.1"]]
    assert table["supported"]["GptOssForCausalLM"] == [["0.10.2", "0.34.0"]]
    assert "LlamaForCausalLM" not in table["lacking"]


def test_the_fix_names_the_next_release_that_supports_pp():
    assert prechecks.next_pp_release("GptOssForCausalLM", "0.10.1") == "0.10.2"
    # DeepSeekMTPModel (golden): SupportsPP in 0.10.1-0.13.0, lacking in 0.14.0-0.29.0, again from 0.30.0 (deepseek_mtp.py:
    # 0.13.0 line 183 "class DeepSeekMTP(nn.Module, SupportsPP, DeepseekV2MixtureOfExperts)", 0.14.0 line 183 without
    # SupportsPP, 0.30.0 line 235 with it again)
    assert [golden(r)["architectures"]["DeepSeekMTPModel"][1] for r in ("0.13.0", "0.14.0", "0.29.0", "0.30.0")] == [
        True, False, False, True]
    assert prechecks.next_pp_release("DeepSeekMTPModel", "0.19.0") == "0.30.0"
    assert prechecks.next_pp_release("DeepSeekMTPModel", "0.34.0") is None


def test_lacks_pp_reads_the_table():
    assert prechecks.lacks_pp("GptOssForCausalLM", "0.10.1")
    assert prechecks.lacks_pp("GptOssForCausalLM", "0.10.1.1")
    assert not prechecks.lacks_pp("GptOssForCausalLM", "0.10.2")
    assert not prechecks.lacks_pp("LlamaForCausalLM", "0.10.1")
    assert not prechecks.lacks_pp("NoSuchArchitectureForCausalLM", "0.34.0")  # not registered: not judged


@pytest.mark.parametrize("policy", ["vllm==0.10.1", "vllm==0.10.1.1"])
def test_gpt_oss_pp2_is_refused_before_0_10_2(policy):
    r = runner.invoke(app, ["simulate", GPT_OSS, "--kv-cache-memory", "20GiB", "--pipeline-parallel-size", "2",
                            "--policy", policy, "--format", "json"])
    assert r.exit_code == 3
    out = json.loads(r.stdout)["outcome"]
    release = policy.split("==")[1]
    assert out == {"ok": False, "starts": False, "stage": "config.pipeline_parallel",
                   "error_type": "NotImplementedError", "error": TEXT,
                   "fix": f"--tensor-parallel-size 2 --pipeline-parallel-size 1 (GptOssForCausalLM lacks SupportsPP "
                          f"in vllm=={release}), or --policy vllm==0.10.2 (the first release after it whose "
                          "GptOssForCausalLM supports PP)"}
    assert "Traceback" not in r.output


def test_gpt_oss_pp2_table_output_is_one_error_line_without_traceback():
    r = runner.invoke(app, ["simulate", GPT_OSS, "--kv-cache-memory", "20GiB", "--pipeline-parallel-size", "2",
                            "--policy", "vllm==0.10.1"])
    assert r.exit_code == 3 and "Traceback" not in r.output
    outcome = [line for line in r.output.splitlines() if line.startswith("Outcome:")]
    assert len(outcome) == 1 and "(config.pipeline_parallel): NotImplementedError" in outcome[0]


@pytest.mark.parametrize("policy", ["vllm==0.10.2", "vllm==0.34.0"])
def test_gpt_oss_pp2_starts_from_0_10_2(policy):
    r = kvplan.simulate(GPT_OSS, kv_cache_memory="20GiB", pipeline_parallel_size=2, policy=policy)
    assert r["outcome"]["starts"] is True, r["outcome"]


def test_gpt_oss_pp1_starts_on_0_10_1():
    r = kvplan.simulate(GPT_OSS, kv_cache_memory="20GiB", policy="vllm==0.10.1")
    assert r["outcome"]["starts"] is True


@pytest.mark.parametrize("release", RELEASES)
def test_dense_llama_pp2_starts_in_every_release(release):
    # LlamaForCausalLM(nn.Module, SupportsLoRA, SupportsPP, ...) in every release (golden: supports_pp true)
    assert golden(release)["architectures"]["LlamaForCausalLM"][1] is True
    r = kvplan.simulate(LLAMA, kv_cache_memory="20GiB", pipeline_parallel_size=2, policy=f"vllm=={release}")
    assert r["outcome"]["starts"] is True, (release, r["outcome"])


def test_static_rule_on_a_small_package(tmp_path):
    """The rule pp_support.py applies, on a package shaped like vLLM's models: SupportsPP imported under its name
    from .interfaces, reached through a base class of another module and through an adapter call, and a
    forward without intermediate_tensors (vLLM's supports_pp then says no: supports_kw)."""
    models = tmp_path / "vllm/model_executor/models"
    models.mkdir(parents=True)
    (models / "interfaces.py").write_text("class SupportsPP:\n    supports_pp = True\n")
    (models / "adapters.py").write_text("def as_embedding_model(cls):\n    return cls\n")
    (models / "base.py").write_text(
        "from torch import nn\nfrom .interfaces import SupportsPP\n"
        "class BaseForCausalLM(nn.Module, SupportsPP):\n"
        "    def forward(self, input_ids, positions, intermediate_tensors=None): ...\n"
        "class NoPP(nn.Module):\n    def forward(self, input_ids, positions): ...\n")
    (models / "child.py").write_text(
        "from vllm.model_executor.models.base import BaseForCausalLM as B, NoPP\n"
        "from .adapters import as_embedding_model\n"
        "class ChildForCausalLM(B):\n    pass\n"
        "class EmbedModel(as_embedding_model(B)):\n    pass\n"
        "class DraftForCausalLM(B):\n    def forward(self, input_ids, positions, hidden_states): ...\n"
        "class KwargsForCausalLM(B):\n    def forward(self, input_ids, **kwargs): ...\n"
        "class PlainForCausalLM(NoPP):\n    pass\n")
    m = pp_support.Models(tmp_path)
    key = "vllm.model_executor.models.child"
    assert [pp_support.supports_pp(m, (key, c))[0] for c in ("ChildForCausalLM", "EmbedModel", "DraftForCausalLM",
                                                             "KwargsForCausalLM", "PlainForCausalLM")] == [
        True, True, False, True, False]
    assert pp_support.supports_pp(m, (key, "DraftForCausalLM"))[1] == "child.DraftForCausalLM.forward takes no " \
                                                                      "intermediate_tensors"


def test_draft_architecture_follows_eagle_configs_rename():
    # EAGLEConfig (0.29.0 transformers_utils/configs/eagle.py lines 46-73): eagle prefixes "Eagle" unless the name
    # starts with it; eagle3 / dflash prefix unless the name starts or ends with "Eagle3" / "DFlash"
    assert prechecks.draft_architecture("eagle3", "LlamaForCausalLM") == "Eagle3LlamaForCausalLM"
    assert prechecks.draft_architecture("eagle3", "LlamaForCausalLMEagle3") == "LlamaForCausalLMEagle3"
    assert prechecks.draft_architecture("eagle", "LlamaForCausalLM") == "EagleLlamaForCausalLM"
    assert prechecks.draft_architecture("eagle", "EagleLlamaForCausalLM") == "EagleLlamaForCausalLM"
    assert prechecks.draft_architecture("eagle", "LlamaForCausalLMEagle") == "EagleLlamaForCausalLMEagle"
    assert prechecks.draft_architecture("draft_model", "LlamaForCausalLM") == "LlamaForCausalLM"
    assert prechecks.draft_architecture("mtp", "DeepseekV3ForCausalLM") is None  # MTP: mtp_draft_architecture
    assert prechecks.draft_architecture("eagle3", "Eagle3Speculator") is None  # the speculators format


EAGLE3_PP2 = ["simulate", LLAMA, "--kv-cache-memory", "20GiB", "--pipeline-parallel-size", "2", "--drafter",
              "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "--speculative-method", "eagle3", "--num-speculative-tokens", "3",
              "--format", "json"]


@pytest.mark.parametrize("release", ["0.10.1", "0.19.0", "0.29.0"])
def test_eagle3_head_refuses_pp_while_the_draft_runs_at_the_targets_pp(release):
    # the draft config's architecture LlamaForCausalLM -> Eagle3LlamaForCausalLM, whose forward takes no
    # intermediate_tensors (golden); run: 0.19.0 and 0.29.0 refuse it (tests/data/prechecks_vllm.json)
    assert golden(release)["architectures"]["Eagle3LlamaForCausalLM"][1] is False
    r = runner.invoke(app, [*EAGLE3_PP2, "--policy", f"vllm=={release}"])
    assert r.exit_code == 3 and "Traceback" not in r.output
    out = json.loads(r.stdout)["outcome"]
    assert (out["stage"], out["error_type"], out["error"]) == (
        "config.speculative_pipeline_parallel", "NotImplementedError", TEXT)
    assert out["fix"].startswith("--policy vllm==0.30.0 (the draft model runs at PP 1 from 0.30.0; "
                                 "Eagle3LlamaForCausalLM lacks SupportsPP)")


@pytest.mark.parametrize("release", ["0.30.0", "0.34.0"])
def test_eagle3_head_with_pp_starts_once_the_draft_runs_at_pp_1(release):
    # still no SupportsPP for the head, but create_draft_parallel_config gives the draft PP 1 (0.30.0 line 1755)
    assert golden(release)["architectures"]["Eagle3LlamaForCausalLM"][1] is False
    r = runner.invoke(app, [*EAGLE3_PP2, "--policy", f"vllm=={release}"])
    assert r.exit_code == 0, r.stdout[-500:]


def test_model_without_layer_rule_meets_the_pp_check_from_its_config(tmp_path):
    # CanaryForConditionalGeneration: registered in 0.34.0 without SupportsPP (golden), no kvplan layer rule; its
    # config from the architecture golden. vLLM's config check runs before the model class is built.
    assert golden("0.34.0")["architectures"]["CanaryForConditionalGeneration"][1] is False
    assert prechecks.next_pp_release("CanaryForConditionalGeneration", "0.10.1") is None  # no release supports PP
    g = json.loads((ROOT / "tests/golden/architectures/0.34.0/CanaryForConditionalGeneration.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(g["config"]))
    r = runner.invoke(app, ["simulate", str(tmp_path), "--kv-cache-memory", "40GiB", "-pp", "2"])
    assert r.exit_code == 3 and "Traceback" not in r.output
    assert r.output.strip().splitlines()[-1].startswith(
        f"Error: vLLM 0.34.0 would fail at start-up (config.pipeline_parallel): NotImplementedError: {TEXT}; fix: "
        "--tensor-parallel-size 2 --pipeline-parallel-size 1 (CanaryForConditionalGeneration lacks SupportsPP in "
        "vllm==0.34.0) (kvplan ran vLLM's config checks only")
    r = runner.invoke(app, ["simulate", str(tmp_path), "--kv-cache-memory", "40GiB"])
    assert "(config.pipeline_parallel)" not in r.output


def test_mtp_override_is_the_releases_function_run_on_stand_in_configs(tmp_path):
    """pp_support.py's MTP mapping on a SpeculativeConfig shaped like vLLM's: an override by model_type (renamed
    first, then given its architecture), one by architectures[0] that a model_type branch above it pre-empts, a
    name it imports inside the function, a branch that needs more of a real config (no answer), and where the
    draft config is verified and at which PP the draft runs."""
    config = tmp_path / "vllm/config"
    config.mkdir(parents=True)
    (config / "speculative.py").write_text(
        "from vllm.logger import init_logger\nlogger = init_logger(__name__)\n"
        "class SpeculativeConfig:\n"
        "    @staticmethod\n"
        "    def hf_config_override(hf_config: PretrainedConfig) -> PretrainedConfig:\n"
        "        if hf_config.model_type in ('deepseek_v3', 'deepseek_v32'):\n"
        "            hf_config.model_type = 'deepseek_mtp'\n"
        "        if hf_config.model_type == 'deepseek_mtp':\n"
        "            hf_config.update({'n_predict': hf_config.num_nextn_predict_layers,\n"
        "                              'architectures': ['DeepSeekMTPModel']})\n"
        "        if hf_config.architectures[0] == 'MiMoForCausalLM':\n"
        "            from vllm.model_executor.models.mimo_mtp import LAYERS\n"
        "            logger.info('mimo %d', LAYERS)\n"
        "            hf_config.update({'architectures': ['MiMoMTPModel']})\n"
        "        if hf_config.model_type == 'needs_text':\n"
        "            hf_config.update({'architectures': [hf_config.text_config.architectures[0]]})\n"
        "        return hf_config\n"
        "    def _verify_args(self):\n"
        "        if self.draft_model_config:\n"
        "            self.draft_model_config.verify_with_parallel_config(self.draft_parallel_config)\n"
        "    @staticmethod\n"
        "    def create_draft_parallel_config(target_parallel_config, tp):\n"
        "        return ParallelConfig(pipeline_parallel_size=target_parallel_config.pipeline_parallel_size,\n"
        "                              tensor_parallel_size=tp)\n")
    assert pp_support.mtp_override(tmp_path) == {
        "file": "vllm/config/speculative.py", "line": 5,
        "model_type": {"deepseek_mtp": "DeepSeekMTPModel", "deepseek_v3": "DeepSeekMTPModel",
                       "deepseek_v32": "DeepSeekMTPModel"},
        "architecture": {"MiMoForCausalLM": "MiMoMTPModel"}}
    assert pp_support.draft_verify(tmp_path) == {
        "file": "vllm/config/speculative.py", "verify_line": 20,
        "draft_pp": "target_parallel_config.pipeline_parallel_size", "draft_pp_line": 23}


# ------------------------------------------------------------------ MTP drafts (method: mtp)

def test_every_golden_release_records_where_the_draft_is_verified_and_at_which_pp():
    # SpeculativeConfig._verify_args: self.draft_model_config.verify_with_parallel_config(self.draft_parallel_config)
    # (0.10.1 config/__init__.py line 2338, 0.29.0 config/speculative.py line 1749); create_draft_parallel_config
    # gives the draft the target's PP up to 0.29.0 (0.10.1 line 2309, 0.29.0 line 1690), 1 from 0.30.0
    for r in RELEASES:
        v = golden(r)["draft_verify"]
        assert v["verify_line"] is not None, r
        assert v["draft_pp"] == ("target_parallel_config.pipeline_parallel_size" if version_key(r) < (0, 30)
                                 else "1"), r
    assert [(golden(r)["draft_verify"]["file"], golden(r)["draft_verify"]["verify_line"],
             golden(r)["draft_verify"]["draft_pp_line"]) for r in ("0.10.1", "0.29.0")] == [
        ("vllm/config/__init__.py", 2338, 2309), ("vllm/config/speculative.py", 1749, 1690)]
    table = json.loads(prechecks.PP_SUPPORT_TABLE.read_text())
    assert table["draft_pp_target"] == [["0.10.1", "0.29.0"]]
    assert prechecks.DRAFT_PP_ONE_FROM == version_key(RELEASES[RELEASES.index("0.29.0") + 1])[:2]


def test_mtp_override_per_release_follows_the_cited_source_lines():
    # 0.10.1 config/__init__.py lines 2009-2037: deepseek_v3 -> deepseek_mtp -> DeepSeekMTPModel; architectures[0]
    # MiMoForCausalLM -> MiMoMTPModel, Glm4MoeForCausalLM -> Glm4MoeMTPModel; nothing else
    assert golden("0.10.1")["mtp_override"] == {
        "file": "vllm/config/__init__.py", "line": 2009,
        "model_type": {"deepseek_mtp": "DeepSeekMTPModel", "deepseek_v3": "DeepSeekMTPModel"},
        "architecture": {"Glm4MoeForCausalLM": "Glm4MoeMTPModel", "MiMoForCausalLM": "MiMoMTPModel"}}
    # 0.29.0 config/speculative.py line 643: deepseek_v32 and glm_moe_dsa -> DeepseekV32MTPModel (lines 645,
    # 672-674), qwen3_5 / qwen3_5_moe -> Qwen3_5MTP / Qwen3_5MoeMTP (lines 882-899), qwen3_next -> Qwen3NextMTP
    # (lines 814-820); MiMoV2FlashForCausalLM -> MiMoV2MTPModel (line 737-752)
    o = golden("0.29.0")["mtp_override"]
    assert (o["file"], o["line"]) == ("vllm/config/speculative.py", 643)
    assert {m: o["model_type"][m] for m in ("deepseek_v3", "deepseek_v32", "glm_moe_dsa", "qwen3_5", "qwen3_5_moe",
                                            "qwen3_next")} == {
        "deepseek_v3": "DeepSeekMTPModel", "deepseek_v32": "DeepseekV32MTPModel",
        "glm_moe_dsa": "DeepseekV32MTPModel", "qwen3_5": "Qwen3_5MTP", "qwen3_5_moe": "Qwen3_5MoeMTP",
        "qwen3_next": "Qwen3NextMTP"}
    assert o["architecture"]["MiMoV2FlashForCausalLM"] == "MiMoV2MTPModel"
    # every MTP class the overrides name is registered (its SupportsPP answer is in the same golden)
    for r in RELEASES:
        o = golden(r)["mtp_override"]
        named = {*o["model_type"].values(), *o["architecture"].values()}
        assert named <= set(golden(r)["architectures"]), (r, named - set(golden(r)["architectures"]))


def test_mtp_draft_architecture_reads_the_table():
    assert prechecks.mtp_draft_architecture("deepseek_v3", "DeepseekV3ForCausalLM", "0.10.1") == "DeepSeekMTPModel"
    assert prechecks.mtp_draft_architecture("deepseek_v32", "DeepseekV32ForCausalLM", "0.29.0") == \
        "DeepseekV32MTPModel"
    assert prechecks.mtp_draft_architecture("qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration", "0.19.0") == \
        "Qwen3_5MoeMTP"
    assert prechecks.mtp_draft_architecture("glm4_moe", "Glm4MoeForCausalLM", "0.19.0") == "Glm4MoeMTPModel"
    assert prechecks.mtp_draft_architecture("llama", "LlamaForCausalLM", "0.29.0") is None
    # Qwen3.5 is mapped from the release that registers it
    assert prechecks.mtp_draft_architecture("qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration", "0.10.1") is None


QWEN35 = "Qwen/Qwen3.5-35B-A3B"  # qwen3_5_moe, Qwen3_5MoeForConditionalGeneration, mtp_num_hidden_layers 1
MTP_PP2 = ["--kv-cache-memory", "20GiB", "--pipeline-parallel-size", "2", "--speculative-method", "mtp",
           "--num-speculative-tokens", "1", "--format", "json"]


@pytest.mark.parametrize("release", ["0.19.0", "0.29.0"])
def test_qwen35_mtp_refuses_pp_while_the_draft_runs_at_the_targets_pp(release):
    # qwen3_5_moe -> Qwen3_5MoeMTP (golden mtp_override), which lacks SupportsPP in 0.17.0-0.29.0 (golden; qwen3_5_mtp.py
    # class Qwen3_5MoeMTP without SupportsPP); run: 0.19.0 and 0.29.0 refuse it (tests/data/prechecks_vllm.json)
    assert golden(release)["mtp_override"]["model_type"]["qwen3_5_moe"] == "Qwen3_5MoeMTP"
    assert golden(release)["architectures"]["Qwen3_5MoeMTP"][1] is False
    r = runner.invoke(app, ["simulate", QWEN35, *MTP_PP2, "--policy", f"vllm=={release}"])
    assert r.exit_code == 3 and "Traceback" not in r.output
    out = json.loads(r.stdout)["outcome"]
    assert (out["stage"], out["error_type"], out["error"]) == (
        "config.speculative_pipeline_parallel", "NotImplementedError", TEXT)
    assert out["fix"] == ("--policy vllm==0.30.0 (the draft model runs at PP 1 from 0.30.0; Qwen3_5MoeMTP lacks "
                          "SupportsPP), or serve without MTP, or --pipeline-parallel-size 1")


@pytest.mark.parametrize("release", ["0.30.0", "0.34.0"])
def test_qwen35_mtp_with_pp_starts_once_the_draft_runs_at_pp_1(release):
    r = runner.invoke(app, ["simulate", QWEN35, *MTP_PP2, "--policy", f"vllm=={release}"])
    assert r.exit_code == 0, r.stdout[-500:]


DSV3 = "deepseek-ai/DeepSeek-V3"  # deepseek_v3, num_nextn_predict_layers 1


@pytest.mark.parametrize("release,refused", [("0.10.1", False), ("0.13.0", False), ("0.14.0", True),
                                             ("0.29.0", True), ("0.30.0", False)])
def test_deepseek_v3_mtp_at_pp_2_follows_deepseek_mtp_models_supports_pp(release, refused):
    # deepseek_v3 -> DeepSeekMTPModel in every release (golden mtp_override); its class has SupportsPP in
    # 0.10.1-0.13.0, not in 0.14.0-0.29.0 (golden); from 0.30.0 the draft runs at PP 1
    assert golden(release)["mtp_override"]["model_type"]["deepseek_v3"] == "DeepSeekMTPModel"
    lacks = golden(release)["architectures"]["DeepSeekMTPModel"][1] is False
    assert refused == (lacks and version_key(release) < prechecks.DRAFT_PP_ONE_FROM)
    r = runner.invoke(app, ["simulate", DSV3, *MTP_PP2, "--policy", f"vllm=={release}"])
    out = json.loads(r.stdout)["outcome"]
    if refused:
        assert r.exit_code == 3 and out["stage"] == "config.speculative_pipeline_parallel", out
        assert "DeepSeekMTPModel lacks SupportsPP" in out["fix"]
    else:
        assert r.exit_code == 0, out


def test_mtp_cross_checks_agree_with_the_releases_own_override():
    # the release's own SpeculativeConfig.hf_config_override, imported, on a transformers PretrainedConfig for every
    # model_type and architecture the static reading names (pp_support.py --cross-check-mtp)
    for r in ("0.10.1", "0.19.0", "0.29.0"):
        g = golden(r)
        o = g["mtp_override"]
        cross = g["cross_check"]
        assert cross["mtp_disagree"] == {}, r
        assert cross["mtp_num_agree"] == len(o["model_type"]) + len(o["architecture"]) > 0, r
        assert cross["mtp_digest"] == pp_support.mtp_digest(o), r


PRECHECKS = json.loads((ROOT / "tests/data/prechecks_vllm.json").read_text())["results"]
REFUSED = ("NotImplementedError", TEXT)


@pytest.mark.parametrize("case,outcomes", [
    # Qwen3NextMTP has SupportsPP in 0.13.0 (the draft, verified at PP 2, passes), not in 0.19.0 / 0.29.0; from 0.30.0
    # the draft runs at PP 1
    ("qwen3-next-mtp-pp2", {"0.13.0": None, "0.19.0": REFUSED, "0.29.0": REFUSED, "0.30.0": None}),
    ("qwen35-35b-mtp-pp2", {"0.19.0": REFUSED, "0.29.0": REFUSED, "0.30.0": None}),
])
def test_mtp_pp2_runs_refuse_where_the_goldens_say(case, outcomes):
    """create_engine_config run on the CPU (tests/data/prechecks_vllm.json): the refusal where the MTP class the
    release's override names lacks SupportsPP and the draft runs at the target's PP, and only there (the targets'
    own classes have SupportsPP: golden)."""
    for release, expected in outcomes.items():
        ran = PRECHECKS[release][case]
        got = None if ran["ok"] else (ran["error_type"], ran["error"])
        assert got == expected, (release, ran)
        g = golden(release)
        model_type = {"qwen3-next-mtp-pp2": "qwen3_next", "qwen35-35b-mtp-pp2": "qwen3_5_moe"}[case]
        draft = g["mtp_override"]["model_type"][model_type]
        lacks = g["architectures"][draft][1] is False
        assert (expected is not None) == (lacks and g["draft_verify"]["draft_pp"] != "1"), release
