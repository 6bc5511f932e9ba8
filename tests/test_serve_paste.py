"""Lines as people paste them (issue 25): prompts, CRLF, spaces after a continuation backslash,
redirections, `nohup … &`, pipes, image tags with .postN / rcN / NGC tags, glued flags."""

from __future__ import annotations

import pytest

import kvplan
from kvplan.engines.vllm.serve_flags import generated_releases
from kvplan.errors import OptionError
from kvplan.serve.line import parse_line, read_text

BASE = ("Qwen/Qwen3-8B", "--max-model-len", "8k")


@pytest.mark.parametrize("text", [
    "$ vllm serve Qwen/Qwen3-8B --max-model-len 8k",
    "user@gpu-box:~/work$ vllm serve Qwen/Qwen3-8B --max-model-len 8k",
    "(venv) $ vllm serve Qwen/Qwen3-8B --max-model-len 8k",
    "[root@node1 ~]# vllm serve Qwen/Qwen3-8B --max-model-len 8k",
    "# vllm serve Qwen/Qwen3-8B --max-model-len 8k",
    "vllm serve Qwen/Qwen3-8B \\  \n  --max-model-len 8k",          # spaces after the backslash
    "vllm serve Qwen/Qwen3-8B \\\r\n  --max-model-len 8k\r\n",      # CRLF
    "vllm serve Qwen/Qwen3-8B --max-model-len 8k > vllm.log 2>&1 &",
    "nohup vllm serve Qwen/Qwen3-8B --max-model-len 8k &>> vllm.log &",
    "vllm serve Qwen/Qwen3-8B --max-model-len 8k 2>&1 | tee serve.log",
    "cd /srv && source .venv/bin/activate && vllm serve Qwen/Qwen3-8B --max-model-len 8k",
    "# start the server\nvllm serve Qwen/Qwen3-8B --max-model-len 8k  # 8k context",
    "vllm serve Qwen/Qwen3-8B --max-model-len 8k >/dev/null 2>/tmp/err </dev/null",
])
def test_paste_artifacts_leave_the_words(text):
    assert parse_line(text).argv == BASE


def test_python_options_before_the_module():
    line = parse_line("nohup python3 -O -u -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B "
                      "--max-model-len 8k > api.log 2>&1 &")
    assert line.form == "api_server" and line.argv == ("--model", "Qwen/Qwen3-8B", "--max-model-len", "8k")


def test_redirection_characters_inside_quotes_stay():
    assert read_text("vllm serve m --chat-template '<s>{{x}}</s>' > log") .split() == [
        "vllm", "serve", "m", "--chat-template", "'<s>{{x}}</s>'"]


def test_a_comment_line_is_not_a_prompt():
    # '# ' followed by words that start no command stays a comment: the line after it is the command
    assert parse_line("# Serve Qwen on one GPU\nvllm serve Qwen/Qwen3-8B --max-model-len 8k").argv == BASE


@pytest.mark.parametrize("tag, release, warning", [
    ("v0.18.0", "0.18.0", None),
    ("v0.18.0.post1", "0.18.0", None),  # a post release is its release's fix
    ("v0.11.0rc1", "0.11.0", "image tag v0.11.0rc1 is a pre-release of vLLM 0.11.0: read with 0.11.0's flags and rules"),
    ("v0.6.6.post1", "0.10.1", "image tag v0.6.6.post1 is vLLM 0.6.6, older than every release kvplan models; "
                               "assuming 0.10.1's flags and rules (the oldest kvplan knows), which may differ "
                               "from 0.6.6's"),
])
def test_image_tags_name_their_release(tag, release, warning):
    d = kvplan.vllm_serve(line=f"docker run --gpus all vllm/vllm-openai:{tag} --model Qwen/Qwen3-8B "
                               "--kv-cache-memory-bytes 8G")
    assert d["serve"]["release"] == release
    assert (warning in d["warnings"]) if warning else not any("image tag" in w for w in d["warnings"])


def test_ngc_tag_says_what_it_assumes():
    d = kvplan.vllm_serve(line="docker run --gpus all nvcr.io/nvidia/vllm:25.09-py3 vllm serve Qwen/Qwen3-8B "
                               "--kv-cache-memory-bytes 8G")
    assert d["serve"]["release"] == "0.34.0"
    assert ("image tag '25.09-py3' names an NGC container tag (its vLLM release is in NVIDIA's release notes): "
            "assuming the newest release kvplan checked, vllm==0.34.0; give --policy vllm==X to read it as "
            "another") in d["warnings"]


def test_glued_flags_name_the_broken_word():
    with pytest.raises(OptionError) as e:
        kvplan.vllm_serve(line="vllm serve Qwen/Qwen3-8B --port 8111--gpu-memory-utilization 0.95")
    assert e.value.message == ("'8111--gpu-memory-utilization': two words glued together (vLLM's parser would "
                               "refuse it); put a space before --gpu-memory-utilization: 8111 "
                               "--gpu-memory-utilization")


def test_a_budget_below_one_block_is_refused_with_the_unit():
    # Qwen3-8B: 36 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes x 64 tokens (0.34.0's default block) =
    # 9,437,184 bytes per block
    expected = ("--kv-cache-memory 40: that is 40 bytes, less than one KV block of Qwen/Qwen3-8B (9,437,184 bytes); "
                "give the unit, e.g. --kv-cache-memory 40GiB (40G = 40 GiB, 40g = 40*10^9 bytes)")
    with pytest.raises(OptionError) as e:
        kvplan.simulate("Qwen/Qwen3-8B", kv_cache_memory=40)
    assert e.value.message == expected
    with pytest.raises(OptionError) as e:
        kvplan.vllm_serve(["Qwen/Qwen3-8B", "--kv-cache-memory-bytes", "40"])
    assert e.value.message == expected


# the generated flag lists (kvplan/engines/vllm/serve_flags/), named in "not a flag of" messages
LISTS = ", ".join(generated_releases())


def test_a_flag_of_other_releases_is_reported_with_them_and_skipped_without_kv_effect():
    # the generated lists: --max-num-partial-prefills is in 0.18.0's to 0.26.0's, not in 0.27.1's to 0.34.0's
    d = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--kv-cache-memory-bytes", "8G", "--max-num-partial-prefills", "2"])
    assert d["outcome"]["starts"] is True
    assert ("--max-num-partial-prefills: not a flag of vllm serve 0.34.0: removed after 0.26.0 (in the flag lists "
            f"of 0.11.0 to 0.26.0; kvplan has the lists of {LISTS}); it does not change the KV cache, so the "
            "line is read without it") in d["warnings"]
    # a removed flag that would change the KV cache stays refused, naming the releases that have it
    with pytest.raises(OptionError) as e:
        kvplan.vllm_serve(["Qwen/Qwen3-8B", "--kv-cache-memory-bytes", "8G", "--override-attention-dtype", "float16"])
    assert e.value.message == ("--override-attention-dtype: not a flag of vllm serve 0.34.0; removed after 0.27.1 "
                               f"(in the flag lists of 0.11.0 to 0.27.1; kvplan has the lists of {LISTS})")


def test_flags_of_the_0_24_to_0_32_lists_are_read_under_their_release_and_reported_under_0_34():
    # --enable-bf16x3-router-gemm (a MoE kernel switch) is in the parsers of 0.26.0 to 0.29.0 only
    d = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--kv-cache-memory-bytes", "8G", "--enable-bf16x3-router-gemm"],
                          policy="vllm==0.29.0")
    assert d["serve"]["flag_list"]["release"] == "0.29.0" and d["serve"]["flag_list"]["note"] is None
    assert d["serve"]["flag_list"]["source"].startswith("vllm.entrypoints.launchers.cli_args.make_arg_parser")
    f = next(f for f in d["serve"]["flags"] if f["flag"] == "--enable-bf16x3-router-gemm")
    assert (f["dest"], f["effect"], f["value"]) == ("enable_bf16x3_router_gemm", "no effect", True)
    assert not any("bf16x3" in w for w in d["warnings"])
    d = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--kv-cache-memory-bytes", "8G", "--enable-bf16x3-router-gemm"])
    assert ("--enable-bf16x3-router-gemm: not a flag of vllm serve 0.34.0: removed after 0.29.0 (in the flag "
            f"lists of 0.26.0 to 0.29.0; kvplan has the lists of {LISTS}); it does not change the KV cache, so "
            "the line is read without it") in d["warnings"]
    # --enable-mamba-fine-grained-prefix-cache: 0.30.0 only (vllm/config/cache.py:187); registers
    # extra Mamba checkpoints, so it is refused unless off, and under 0.34.0 it is not a flag
    d = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--kv-cache-memory-bytes", "8G",
                           "--no-enable-mamba-fine-grained-prefix-cache"], policy="vllm==0.30.0")
    assert d["outcome"]["starts"] is True
    with pytest.raises(OptionError) as e:
        kvplan.vllm_serve(["Qwen/Qwen3-8B", "--enable-mamba-fine-grained-prefix-cache"], policy="vllm==0.30.0")
    assert e.value.message == ("--enable-mamba-fine-grained-prefix-cache: not modelled by kvplan (registers extra "
                               "Mamba checkpoints at the shared-prefix junction); drop it to simulate without it")
    with pytest.raises(OptionError) as e:
        kvplan.vllm_serve(["Qwen/Qwen3-8B", "--enable-mamba-fine-grained-prefix-cache"])
    assert e.value.message == ("--enable-mamba-fine-grained-prefix-cache: not a flag of vllm serve 0.34.0; removed "
                               f"after 0.30.0 (in the flag lists of 0.30.0; kvplan has the lists of {LISTS})")


def test_flags_that_only_old_releases_had_are_reported_with_their_lists():
    # the issue's lines: --swap-space is in the generated lists (the releases' make_arg_parser) of 0.11.0 to
    # 0.17.0, --task in 0.11.0's and 0.12.0's, in none of the later ones. --swap-space sizes CPU swap space
    # (0.11.0 config/cache.py l.51-52, 212): skipped with a warning; --task generate is generation as
    # without the flag
    d = kvplan.vllm_serve(["meta-llama/Meta-Llama-3.1-8B", "--swap-space", "16", "--task=generate",
                           "--kv-cache-memory-bytes", "40G"])
    assert d["outcome"]["starts"] is True and d["memory"]["num_blocks"] == 5120  # golden llama-3.1-8b 0.34.0
    assert [w.split(":")[0] for w in d["warnings"] if "removed after 0.17.0 (in the flag lists of 0.11.0 to 0.17.0;"
            in w] == ["--swap-space"]
    assert [w.split(":")[0] for w in d["warnings"] if "removed after 0.12.0 (in the flag lists of 0.11.0 to 0.12.0;"
            in w] == ["--task"]
    # --task embed makes a pooling model (0.11.0 config/model.py l.460-473): refused, naming the release
    with pytest.raises(OptionError) as e:
        kvplan.vllm_serve(["meta-llama/Meta-Llama-3.1-8B", "--task", "embed", "--kv-cache-memory-bytes", "40G"])
    assert e.value.message == ("--task: not a flag of vllm serve 0.34.0; removed after 0.12.0 (in the flag lists of "
                               f"0.11.0 to 0.12.0; kvplan has the lists of {LISTS})")


def test_an_unknown_flag_gets_no_far_fetched_suggestion():
    with pytest.raises(OptionError) as e:
        kvplan.vllm_serve(["Qwen/Qwen3-8B", "--enable-reasoning"])
    assert e.value.message == "--enable-reasoning: not a flag of vllm serve 0.34.0; `vllm serve --help=all` lists the flags"
    with pytest.raises(OptionError) as e:
        kvplan.vllm_serve(["Qwen/Qwen3-8B", "--max-model-lenn", "8k"])
    assert e.value.message == "--max-model-lenn: not a flag of vllm serve 0.34.0; did you mean --max-model-len?"


def test_kv_cache_dtype_skip_layers_and_unknown_speculative_keys_run_with_a_warning():
    req = kvplan.serve.read_serve(["openai/gpt-oss-20b", "--kv-cache-dtype-skip-layers", "sliding_window"])
    [row] = req.flags
    assert (row.effect, row.note) == ("no effect", "kv_cache_dtype auto: every layer's KV is in the model "
                                                         "dtype already")
    req = kvplan.serve.read_serve(["openai/gpt-oss-20b", "--kv-cache-dtype", "fp8", "--kv-cache-dtype-skip-layers",
                                   "sliding_window"])
    assert req.flags[-1].effect == "applied"
    assert req.options["kv_cache_dtype_skip_layers"] == "sliding_window"
    req = kvplan.serve.read_serve(["meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-dtype", "nvfp4",
                                   "--kv-cache-dtype-skip-layers", "0", "31"])
    assert req.options["kv_cache_dtype_skip_layers"] == "0,31"
    req = kvplan.serve.read_serve(["Qwen/Qwen3-8B", "--speculative-config",
                                   '{"method": "ngram", "num_speculative_tokens": 5, '
                                   '"num_speculative_tokens_per_batch_size": [[1, 5]]}'])
    assert req.options["num_speculative_tokens"] == 5
    assert ("--speculative-config: key 'num_speculative_tokens_per_batch_size' is not modelled by kvplan (it may "
            "change the drafter's KV cache or the tokens proposed per step); simulated without it") in req.warnings
