"""`kvplan vllm`: serve lines read as vLLM reads them, each flag applied, listed or refused.

Release facts are from the wheels' own parsers (kvplan/engines/vllm/serve_flags/*.json, dumped
by scripts/golden/serve_flags.py) and vllm/utils/argparse_utils.py (FlexibleArgumentParser.parse_args,
vLLM 0.34.0).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm.serve_flags import flag_table, generated_releases, nearest_generated
from kvplan.engines.vllm.versions import VERSIONS, version_key
from kvplan.errors import OptionError
from kvplan.serve import parse_line, read_serve
from kvplan.serve.effects import effect_of

app = ensure_registered()
runner = CliRunner()

PEAGLE_SEQUENTIAL_034 = ("the drafter is a P-EAGLE head (ptd_token_id in its config); vLLM 0.34.0 drafts EAGLE "
                         "heads sequentially (parallel_drafting is only for the dflash and dspark methods)")
PEAGLE_SPEC = '{"method":"eagle3","model":"amazon/gpt-oss-20b-p-eagle","num_speculative_tokens":5}'


def cli(args: list[str], stdin: str | None = None):
    return runner.invoke(app, args, input=stdin)


# ---------------------------------------------------------------------------------------- flag lists

def test_every_flag_of_every_generated_list_is_classified():
    # a new list (a new release) must decide each new flag: applied, no effect, estimate or refused
    # every minor of the registry from 0.11 has its own list (0.10.x's wheels do not build in the shared
    # release environment: they use 0.11.0's, the nearest)
    minors = {version_key(v)[:2] for v in generated_releases()}
    assert {version_key(v)[:2] for v in VERSIONS if version_key(v) >= (0, 11)} <= minors
    for release in generated_releases():
        table = flag_table(release)
        assert [f.dest for f in table.flags if effect_of(f.dest, f.group) is None] == [], release


def test_flag_lists_hold_the_releases_own_spellings():
    t34, t18 = flag_table("0.34.0"), flag_table("0.18.0")
    # vllm/engine/arg_utils.py 0.34.0: add_argument("--speculative-config", "-sc", ...), "--spec-method"
    assert t34.by_option["-sc"].dest == "speculative_config"
    assert t34.by_option["--spec-tokens"].dest == "spec_tokens"
    assert "--spec-method" not in t18.by_option  # added after 0.18
    # EnableDisableAction (0.34): --enable-x, --no-enable-x and --disable-x are one flag
    f = t34.by_option["--disable-prefix-caching"]
    assert f.dest == "enable_prefix_caching" and "--disable-prefix-caching" in f.negative
    assert t34.by_option["-tp"].dest == "tensor_parallel_size"
    assert len(t34.flags) == 327 and len(flag_table("0.33.0").flags) == 320 and len(t18.flags) == 225


def test_a_release_without_a_list_uses_the_nearest_and_says_so():
    # a release with a list uses its own
    assert nearest_generated("0.32.0") == "0.32.0" and nearest_generated("0.28.0") == "0.28.0"
    # a patch release reads its minor's list: 0.27.0's and 0.25.0's parsers (dumped by
    # scripts/golden/serve_flags.py) have the option strings of 0.27.1's and 0.25.1's, while 0.26.0's
    # and 0.24.0's, as near in the registry, differ by 15 and 5
    assert nearest_generated("0.27.0") == "0.27.1" and nearest_generated("0.25.0") == "0.25.1"
    assert nearest_generated("0.34.1") == "0.34.0" and nearest_generated("0.19.1") == "0.19.0"
    # registry order: 0.10.2 sits next to 0.11.0 (no 0.10 list)
    assert nearest_generated("0.10.2") == "0.11.0"
    t = flag_table("0.19.1")
    assert t.release == "0.19.0"
    assert t.note == ("vllm serve's flags of 0.19.1 were not generated; using the list of 0.19.0, the nearest "
                      "release kvplan read")


# ---------------------------------------------------------------------------------------- acceptance

def test_acceptance_peagle_layout_on_h100():
    r = cli(["vllm", "--gpu", "H100-80GB", "serve", "openai/gpt-oss-20b", "--speculative-config", PEAGLE_SPEC])
    assert r.exit_code == 0, r.stderr
    # 12 sliding + 12 full target layers + 4 P-EAGLE layers (full attention): group_size 16, the
    # sliding group padded with 4 slots, the drafter inside the full group. The hub id is matched
    # case-insensitively: amazon/gpt-oss-20b-p-eagle is the catalog's amazon/GPT-OSS-20B-P-EAGLE.
    assert "drafter amazon/GPT-OSS-20B-P-EAGLE" in r.stdout
    assert "KV cache groups (group_size 16; vLLM's own figures)" in r.stdout
    assert "full +drafter" in r.stdout
    d = kvplan.vllm_serve(["openai/gpt-oss-20b", "--speculative-config", PEAGLE_SPEC], gpu="H100-80GB")
    assert d["grouping"]["group_size"] == 16 and d["grouping"]["num_groups"] == 2
    assert [(g["kind"], g["num_layers"]) for g in d["groups"]] == [("sliding_window", 12), ("full_attention", 16)]
    # parallel_drafting not given: 0.34.0 drafts the P-EAGLE head sequentially (kvplan's note)
    assert d["speculative"] == {"method": "eagle3", "num_speculative_tokens": 5, "parallel_drafting": False,
                                "parallel_drafting_given": None, "note": PEAGLE_SEQUENTIAL_034}
    # the same library path as simulate: everything but the command, inputs and serve is identical
    s = kvplan.simulate("openai/gpt-oss-20b", drafter="amazon/GPT-OSS-20B-P-EAGLE", speculative_method="eagle3",
                        num_speculative_tokens=5, gpu="H100-80GB")
    assert {k: v for k, v in d.items() if k not in ("command", "inputs", "serve")} == \
        {k: v for k, v in s.items() if k not in ("command", "inputs")}


def test_acceptance_kv_cache_memory_bytes_40G():
    d = kvplan.vllm_serve(["openai/gpt-oss-20b", "--kv-cache-memory-bytes", "40G"])
    # vLLM's human_readable_int: G = 2**30 -> 40 * 1,073,741,824
    assert d["memory"]["available_bytes"] == 42_949_672_960
    assert d["inputs"]["options"]["kv_cache_memory"] == {"value": 42_949_672_960, "given": True}


def test_acceptance_docker_tag_names_the_release():
    line = "docker run --gpus all vllm/vllm-openai:v0.18.0 --model openai/gpt-oss-20b"
    r = cli(["vllm", "--gpu", "H100-80GB", "--line", line])
    assert r.exit_code == 0, r.stderr
    assert "policy vllm==0.18.0: era vllm-0.18" in r.stdout
    d = kvplan.vllm_serve(line=line, gpu="H100-80GB")
    assert d["inputs"]["policy"]["vllm_release"] == "0.18.0"
    assert d["serve"]["release"] == "0.18.0" and d["serve"]["release_source"] == "image tag v0.18.0"
    assert d["serve"]["flag_list"]["release"] == "0.18.0" and d["serve"]["flag_list"]["note"] is None
    assert d["serve"]["form"] == "docker" and d["serve"]["image"] == "vllm/vllm-openai:v0.18.0"


# ---------------------------------------------------------------------------------------- line forms

def test_latest_tag_is_the_newest_checked_release_with_a_warning():
    d = kvplan.vllm_serve(line="docker run --runtime nvidia --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface "
                               "--env \"HUGGING_FACE_HUB_TOKEN=<secret>\" -p 8000:8000 --ipc=host "
                               "vllm/vllm-openai:latest --model mistralai/Mistral-7B-v0.1 --kv-cache-memory-bytes 8G")
    assert d["serve"]["release"] == "0.34.0"
    assert any(w.startswith("image tag 'latest' names no release: assuming the newest release kvplan checked, vllm==0.34.0") for w in d["warnings"])
    assert d["serve"]["environment"] == {} and d["serve"]["environment_ignored"] == ["HUGGING_FACE_HUB_TOKEN"]


def test_environment_of_the_line_is_applied():
    # vLLM 0.34.0 refuses max_model_len 200000 > the derived 131072 (Llama 3.1's max_position_embeddings)
    # unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set (vllm/config/model.py, _get_and_verify_max_len)
    args = "meta-llama/Meta-Llama-3.1-8B --kv-cache-memory-bytes 60G --max-model-len 200000"
    refused = kvplan.vllm_serve(args.split())
    assert refused["outcome"]["starts"] is False and refused["outcome"]["stage"] == "config.max_model_len"
    d = kvplan.vllm_serve(line=f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve {args}")
    assert d["outcome"]["starts"] is True
    assert d["serve"]["environment"] == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"} and d["serve"]["environment_applied"]
    assert d["inputs"]["options"]["env"] == {"value": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}, "given": True}


def test_api_server_form_and_env_prefixes():
    sl = parse_line("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 CUDA_VISIBLE_DEVICES=0,1 python3 -m "
                    "vllm.entrypoints.openai.api_server --model openai/gpt-oss-120b --tensor-parallel-size 2")
    assert sl.form == "api_server"
    assert sl.env == {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1", "CUDA_VISIBLE_DEVICES": "0,1"}
    req = read_serve(line=sl)
    assert req.model == "openai/gpt-oss-120b" and req.options["tensor_parallel_size"] == 2


def test_docker_env_flags_and_export_prefix():
    sl = parse_line("export VLLM_USE_V2_MODEL_RUNNER=0 && docker run -d --rm -e VLLM_X=1 --env=VLLM_Y=2 -eVLLM_Z=3 "
                    "-p 8000:8000 --ipc host nvcr.io/nvidia/vllm:25.08-py3 vllm serve Qwen/Qwen3-8B")
    assert sl.form == "docker" and sl.argv == ("Qwen/Qwen3-8B",)
    assert sl.env == {"VLLM_USE_V2_MODEL_RUNNER": "0", "VLLM_X": "1", "VLLM_Y": "2", "VLLM_Z": "3"}
    assert sl.image_tag == "25.08-py3" and sl.image_release is None  # an NGC tag names no vLLM release


def test_line_from_stdin_joins_backslash_continuations():
    text = ("# from a recipe\nvllm serve Qwen/Qwen3-Next-80B-A3B-Thinking \\\n  --tensor-parallel-size 4 \\\n"
            "  --served-model-name qwen3-next \\\n  --enable-prefix-caching --kv-cache-memory-bytes 20G\n")
    r = cli(["vllm", "--format", "json", "--line", "-"], stdin=text)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["serve"]["model"] == "Qwen/Qwen3-Next-80B-A3B-Thinking"
    assert [(f["flag"], f["effect"]) for f in d["serve"]["flags"]] == [
        ("--tensor-parallel-size", "applied"), ("--served-model-name", "no effect"),
        ("--enable-prefix-caching", "applied"), ("--kv-cache-memory-bytes", "applied")]
    assert d["inputs"]["options"]["tensor_parallel_size"]["value"] == 4


def test_config_file_keys_are_flags_and_the_line_wins(tmp_path):
    (tmp_path / "serve.yaml").write_text(
        "max-model-len: 8192\ntensor-parallel-size: 2\nenable-prefix-caching: false\n"
        "speculative-config:\n  method: eagle3\n  model: amazon/GPT-OSS-20B-P-EAGLE\n  num_speculative_tokens: 3\n")
    req = read_serve(["openai/gpt-oss-20b", "--config", "serve.yaml", "--max-model-len", "4k"], base=tmp_path)
    # vLLM inserts the file's flags after the model, so the line's own --max-model-len 4k (4,000) wins
    assert req.options["max_model_len"] == 4000
    assert req.options["tensor_parallel_size"] == 2
    assert req.options["enable_prefix_caching"] is False  # `false` -> --no-enable-prefix-caching
    assert req.options["drafter"] == "amazon/GPT-OSS-20B-P-EAGLE" and req.options["num_speculative_tokens"] == 3
    assert [r.origin for r in req.flags].count("line") == len(req.flags)


def test_vllm_spellings_prefixes_and_dotted_json():
    req = read_serve(["--model=openai/gpt-oss-20b", "--tensor_parallel_size=2", "--max-model", "10K",
                      "--speculative-config.method", "eagle3", "--speculative_config.model",
                      "amazon/GPT-OSS-20B-P-EAGLE", "--speculative-config.num_speculative_tokens", "5",
                      "-O3", "--no-enable-prefix-caching"])
    assert req.model == "openai/gpt-oss-20b"
    # --max-model is a unique prefix of --max-model-len (argparse allow_abbrev); vLLM's human_readable_int:
    # upper-case K is binary, 10K = 10 * 1024 = 10,240 (lower-case k would be 10,000)
    assert req.options["max_model_len"] == 10_240 and req.options["tensor_parallel_size"] == 2
    assert req.options["speculative_method"] == "eagle3" and req.options["num_speculative_tokens"] == 5
    assert req.options["enable_prefix_caching"] is False
    rows = {r.dest: r for r in req.flags}
    assert rows["optimization_level"].effect == "applied" and rows["speculative_config"].origin == "dotted"
    assert req.options["optimization_level"] == 3


def test_mtp_aliases_and_ngram():
    req = read_serve(["deepseek-ai/DeepSeek-R1", "-tp", "8",
                      "--speculative-config={\"method\": \"deepseek_mtp\", \"num_speculative_tokens\": 1}"])
    assert req.options["speculative_method"] == "mtp" and "drafter" not in req.options
    req = read_serve(["Qwen/Qwen3-8B", "--speculative-config",
                      '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'])
    assert req.options["speculative_method"] == "ngram" and req.options["num_speculative_tokens"] == 5


# ---------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("args, message", [
    (["openai/gpt-oss-20b", "--max-model-length", "3"],
     "--max-model-length: not a flag of vllm serve 0.34.0; did you mean --max-model-len?"),
    (["openai/gpt-oss-20b", "--speculative-config", '{"method": "eagle3", "model": "x", "draft_tensor_parallel_size": 1}',
      "-tp", "2"],
     "--speculative-config: draft_tensor_parallel_size 1 differs from the target's tensor_parallel_size 2; kvplan "
     "models a drafter sharded like its target"),
    (["openai/gpt-oss-20b", "--speculative-config", '{"method": "medusa", "model": "x"}'],
     "--speculative-config: method 'medusa' is not modelled by kvplan (eagle, eagle3, mtp and its *_mtp aliases, "
     "draft_model, ngram, suffix are)"),
    (["openai/gpt-oss-20b", "--speculative-config", "{method: eagle3}"],
     # 0.34.0 parses --speculative-config with json.loads (optional_type(json.loads) in arg_utils.py)
     "--speculative-config: vllm serve 0.34.0 reads it as JSON and '{method: eagle3}' is not JSON (argparse "
     "refuses it); write e.g. '{\"key\": 3}'"),
    (["openai/gpt-oss-20b", "--kv-cache-dtype", "fp7"],
     # the flag has no argparse choices in 0.34.0; kvplan's option table checks the value (every release's
     # CacheDType values, kvplan/model/cache_dtypes.json)
     "--kv-cache-dtype: 'fp7' is not one of: auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_ds_mla, float16, "
     "fp8_per_token_head, int8_per_token_head, nvfp4, turboquant_3bit_nc, turboquant_4bit_nc, turboquant_k3v4_nc, "
     "turboquant_k8v4, int4_per_token_head, nvfp4_4over6, nvfp4_ds_mla, ultraquant_4bit, octave_k3v4, octave_k3v3, "
     "octave_k3v3_compact"),
    (["openai/gpt-oss-20b", "--format", "json"],
     "--format is kvplan's option, not vllm serve's: put it before `serve` (kvplan vllm --format ... serve MODEL ...)"),
    (["--port", "8000"], "no model on the serve line; write `vllm serve MODEL ...` (or --model MODEL)"),
])
def test_one_line_errors(args, message):
    with pytest.raises(OptionError) as e:
        read_serve(args)
    assert e.value.message == message
    r = cli(["vllm", "serve", *args])
    assert r.exit_code == 1 and r.stderr == f"Error: {message}\n"


def test_a_refused_flag_with_its_default_value_has_no_effect():
    req = read_serve(["openai/gpt-oss-20b", "--prefill-context-parallel-size", "1", "--no-enable-chunked-prefill"])
    assert [(r.flag, r.effect, r.note) for r in req.flags] == [
        ("--prefill-context-parallel-size", "no effect", "the default value"),
        ("--no-enable-chunked-prefill", "applied", None)]
    assert req.options == {"enable_chunked_prefill": False}


def test_kvplan_options_go_before_serve():
    r = cli(["vllm", "--kv-cache-memory", "40GiB", "serve", "openai/gpt-oss-20b"])
    assert r.exit_code == 2
    assert r.stderr == ("Error: --kv-cache-memory is a vllm serve flag: write --kv-cache-memory-bytes on the serve "
                        "line, after `serve MODEL`\n")
    with pytest.raises(OptionError, match=r"^--max-model-len is a vllm serve flag: write it on the serve line"):
        kvplan.vllm_serve(["openai/gpt-oss-20b"], max_model_len=4096)


# ---------------------------------------------------------------------------------------- check files

def test_check_entry_with_a_serve_line(tmp_path):
    f = tmp_path / "d.yaml"
    f.write_text(
        "deployments:\n"
        "  - name: peagle\n"
        "    gpu: H100-80GB\n"
        f"    vllm_serve: vllm serve openai/gpt-oss-20b --speculative-config '{PEAGLE_SPEC}'\n"
        "  - name: docker018\n"
        "    kv_cache_memory: 40GiB\n"
        "    vllm_serve: docker run --gpus all vllm/vllm-openai:v0.18.0 --model openai/gpt-oss-20b\n")
    d = kvplan.check([str(f)])
    assert [x["status"] for x in d["deployments"]] == ["pass", "pass"]
    f.write_text("deployments:\n  - name: bad\n    kv_cache_memory: 40GiB\n    max_model_len: 4096\n"
                 "    vllm_serve: vllm serve openai/gpt-oss-20b --max-model-len 8192\n")
    r = cli(["check", str(f)])
    assert r.exit_code == 1
    assert r.stderr == (f"Error: {f}:5: deployment 'bad': key 'max_model_len': set by the key and by vllm_serve; "
                        "give it once\n")


# ---------------------------------------------------------------------------------------- weights flags

def _weights(model: str, *args: str, gpu: str = "H200-141GB") -> dict:
    return kvplan.vllm_serve([model, *args], gpu=gpu)["budget"]


def test_data_and_expert_parallel_split_the_experts():
    # Mixtral-8x7B: 32 layers, 8 experts, H 4096, I 14336, bf16. vLLM splits FusedMoE over tp x dp ranks
    # (FusedMoEParallelConfig.make, vllm 0.34.0): at TP 2 each rank holds per layer
    # w13 8 x (2 x 14336 / 2) x 4096 + w2 8 x 4096 x (14336 / 2) values = 704,643,072 x 2 bytes = 1,409,286,144;
    # x 32 layers = 45,097,156,608. DP 2 halves it (22,548,578,304 less per GPU).
    tp2 = _weights("mistralai/Mixtral-8x7B-v0.1", "-tp", "2")["weights_bytes"]
    dp2 = _weights("mistralai/Mixtral-8x7B-v0.1", "-tp", "2", "-dp", "2")["weights_bytes"]
    assert tp2 - dp2 == 22_548_578_304
    # expert parallelism: 8 / 4 = 2 whole experts per rank, the same bytes as a quarter of each expert
    assert _weights("mistralai/Mixtral-8x7B-v0.1", "-tp", "2", "-dp", "2", "--enable-expert-parallel")[
        "weights_bytes"] == dp2


def test_cpu_offload_and_online_fp8():
    base = _weights("mistralai/Mixtral-8x7B-v0.1", "-tp", "2")
    off = _weights("mistralai/Mixtral-8x7B-v0.1", "-tp", "2", "--cpu-offload-gb", "10")
    # vLLM's uva offloader: cpu_offload_max_bytes = int(cpu_offload_gb * 1024**3) (offloader/base.py, 0.34.0)
    assert base["weights_bytes"] - off["weights_bytes"] == 10 * 2**30
    assert off["weights_source"] == "analytic count from the config, minus --cpu-offload-gb 10"
    q = _weights("mistralai/Mistral-7B-v0.1", "-q", "fp8", gpu="H100-80GB")
    # online fp8: one e4m3 byte per value + one fp32 scale per matrix. Per layer, attention
    # 2 x 4096 x 4096 + 2 x 1024 x 4096 = 41,943,040 bytes + 4 scales x 4 = 41,943,056 (x 32 = 1,342,177,792);
    # MLP 3 x 14336 x 4096 = 176,160,768 + 12 = 176,160,780 (x 32 = 5,637,144,960)
    assert q["weights"]["bytes_by_kind"]["attention"] == 1_342_177_792
    assert q["weights"]["bytes_by_kind"]["mlp"] == 5_637_144_960
    with pytest.raises(Exception, match=r"^--quantization fp8: the checkpoint declares 'mxfp4'"):
        kvplan.vllm_serve(["openai/gpt-oss-120b", "-q", "fp8"], gpu="H100-80GB")


def test_hf_overrides_change_the_config_kvplan_reads():
    d = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--kv-cache-memory-bytes", "10G", "--hf-overrides",
                           '{"max_position_embeddings": 65536}'])
    # Qwen3-8B's config says 40960; the override sets the derived max_model_len
    assert d["scheduler"]["max_model_len"] == 65536
    assert kvplan.inspect("Qwen/Qwen3-8B", hf_overrides={"num_hidden_layers": 4})["num_layers"] == 4


def test_shell_variables_uv_run_and_an_unset_model():
    sl = parse_line("MODEL=Qwen/Qwen3-8B\nexport VLLM_X=1\nTP=2 && uv run vllm serve $MODEL -tp ${TP} --port 8000")
    # MODEL and TP are shell variables (not exported: vLLM's process does not see them); VLLM_X is exported
    assert sl.form == "vllm serve" and sl.argv == ("Qwen/Qwen3-8B", "-tp", "2", "--port", "8000")
    assert sl.env == {"VLLM_X": "1"}
    with pytest.raises(OptionError, match=r"^the line names its model through \$MODEL_PATH, which the line does not "
                                          r"set; write the model id"):
        kvplan.vllm_serve(line="vllm serve $MODEL_PATH --port 8000")


def test_no_chunked_prefill_reaches_vllms_scheduler_check():
    # vLLM 0.34.0 SchedulerConfig.verify_max_model_len: without chunked prefill, max_num_batched_tokens
    # (4096) below max_model_len (32k = 32,000) is refused before the KV cache
    d = kvplan.vllm_serve(["meta-llama/Meta-Llama-3.1-8B", "--kv-cache-memory-bytes", "20G", "--max-model-len", "32k",
                           "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"])
    assert d["outcome"]["starts"] is False
    assert d["outcome"]["error"].startswith("max_num_batched_tokens (4096) is smaller than max_model_len (32000).")
    assert d["inputs"]["options"]["enable_chunked_prefill"] == {"value": False, "given": True}


def test_no_cuda_graphs_from_O0_or_the_compilation_config():
    """-O0 sets cudagraph_mode NONE from vLLM 0.12.0 (OPTIMIZATION_LEVEL_00, config/vllm.py:64-66, 165), as does
    --compilation-config with cudagraph_mode NONE: no graphs, as --enforce-eager; -O3 keeps the release's graphs
    (FULL_AND_PIECEWISE, as -O2: tests/test_capture_sizes.py)."""
    for extra in (["-O0"], ["--compilation-config", '{"cudagraph_mode": "NONE"}']):
        d = kvplan.vllm_serve(["Qwen/Qwen3-8B", *extra], gpu="H100-80GB", policy="vllm==0.19.0")
        assert (d["budget"]["cudagraph_bytes"], d["budget"]["cudagraph_source"]) == (0, "override")
        assert d["budget"]["band"]["warmup_need_bytes"] == 0  # nothing captured after the KV cache
    d = kvplan.vllm_serve(["Qwen/Qwen3-8B", "-O3"], gpu="H100-80GB", policy="vllm==0.19.0")
    assert d["budget"]["band"]["warmup_need_bytes"] > 0
