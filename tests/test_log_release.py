"""Release inference and wording coverage of `kvplan explain-log` (kvplan/logs/release.py over
kvplan/logs/fingerprints.py, generated from 43 release wheels by scripts/golden/log_fingerprint.py).

Every wording a release prints for a line explain-log reads is rendered from that release's own
format string (the placeholders filled with numbers) and must be read as its fact; the wordings
that are not yet read are listed exactly, so one that starts or stops being read fails the test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import kvplan
from golden_logs import golden_cases, golden_log
from kvplan.logs import facts_of, read_records
from kvplan.logs.extract import PATTERNS
from kvplan.logs.fingerprints import RELEASES, WORDINGS
from kvplan.logs.release import _PLACEHOLDER, _spans, infer_release

from factories import script_module

ROOT = Path(__file__).resolve().parents[1]
LOGS = Path(__file__).parent / "logs"


def _generator():
    return script_module("scripts/golden/log_fingerprint.py")


def test_markers_cover_every_fact_kind_and_the_generated_table():
    gen = _generator()
    kinds = {p.kind for p in PATTERNS} - {"serve_command", "exception"}
    assert kinds <= set(gen.MARKERS), kinds - set(gen.MARKERS)
    assert {k for k, *_ in WORDINGS} <= set(gen.MARKERS) | set(gen.SITE_MARKERS)
    assert RELEASES[0] == "0.6.6.post1" and RELEASES[-1] == "0.34.0" and len(RELEASES) == 43


def _render(fmt: str) -> str:
    def number(m: re.Match) -> str:
        t = m.group(0)
        return "1.50" if t.endswith("f}") or re.fullmatch(r"%[-+ #0]*\d*\.\d+f|%f", t) else "1024"

    text = _PLACEHOLDER.sub(number, fmt.split("\n", 1)[0]).replace("%%", "%")
    return text.replace("1024 KV cache size", "GPU KV cache size").replace("# 1024 blocks", "# GPU blocks")


# (kind, first release, the wording's start): printed by a release, not read by explain-log yet
KNOWN_UNREAD: set = {
    ('autofit', '0.14.0', 'Auto-fit max_model_len: attention-free model, us'),
    ('autofit', '0.32.0', 'Auto-fit max_model_len: full model context lengt'),
    ('autofit', '0.32.0', 'Auto-fit max_model_len: reduced from %d to %d to'),
    ('autofit', '0.34.0', 'Auto-fit max_model_len: full model context lengt'),
    ('autofit', '0.34.0', 'Auto-fit max_model_len: reduced from %d to %d to'),
    ('autofit', '0.34.0', 'Auto-fit max_model_len: using max_model_len=%d, '),
    ('available_kv_memory', '0.6.6.post1', 'Memory profiling takes {result.profile_time:.2f}'),
    ('available_kv_memory', '0.7.3', 'Memory profiling takes {result.profile_time:.2f}'),
    ('engine_config', '0.9.2', 'Dumping input data for V1 LLM engine (v%s) with '),
    ('hma_off_converted', '0.9.2', 'Hybrid KV cache manager is disabled but failed t'),
    ('memory_account', '0.14.0', 'Free memory on device {init_snapshot.device_} ({'),
    ('memory_account', '0.32.0', 'Free memory on device {init_snapshot.device_} ({'),
    ('memory_account', '0.34.0', 'Free memory on device {init_snapshot.device_} ({'),
    ('memory_account', '0.9.2', 'Free memory on device ({GiB(self.init_snapshot.f'),
    ('memory_profile', '0.6.6.post1', 'Memory profiling takes {result.profile_time:.2f}'),
    ('memory_profile', '0.7.3', 'Memory profiling takes {result.profile_time:.2f}'),
    ('num_gpu_blocks', '0.6.6.post1', '# CPU blocks: %d'),
    ('num_gpu_blocks', '0.6.6.post1', '# HPU blocks: %d, # CPU blocks: %d'),
    ('num_gpu_blocks', '0.6.6.post1', '# TPU blocks: %d, # CPU blocks: %d'),
}
_ERRORS = {"admission_error", "admission_error_tokens", "no_memory_error", "drafter_split", "page_error"}
_ALSO = {"concurrency": {"capacity"}, "available_kv_memory": {"memory_account", "memory_profile"}}
_RENDER_ONLY = {"async_scheduling", "attention_backend", "non_default_args", "release"}  # %s is a word/dict/version


def test_every_wording_of_every_release_is_read():
    unread = set()
    kinds = {p.kind for p in PATTERNS}
    for kind, fmt, rels, _sites in WORDINGS:
        if kind not in kinds or kind in _RENDER_ONLY:
            continue
        text = ("ValueError: " if kind in _ERRORS else "") + _render(fmt)
        got = {f.kind for f in facts_of(read_records(text)).items}
        if kind not in got and not got & _ALSO.get(kind, set()):
            unread.add((kind, sorted(_spans(rels), key=RELEASES.index)[0], fmt[:48]))
    assert unread == KNOWN_UNREAD, sorted(unread ^ KNOWN_UNREAD, key=repr)


# what each real log's lines show (tests/logs/INDEX.md gives the release each post states)
REAL = {
    "01-vllm-27508-gpt-oss-120b-h100.log": ("0.11.0", "0.11.0"),
    "02-vllm-23278-gpt-oss-120b-negative-memory.log": ("0.10.1", "0.10.1.1"),  # "0.10.1 era" (post)
    "03-vllm-33155-gpt-oss-120b-v0.14.1.log": ("0.14.0", "0.14.1"),  # 0.14.1 (title)
    "04-lmcache-1739-qwen3-14b.log": ("0.10.2", "0.10.2"),
    # a line cut short or wrapped counts by the wordings it is the start of
    "05-vllm-34076-qwen3-coder-pp2-admission.log": ("0.13.0", "0.21.0"),  # 0.15.2rc1 (post)
    "06-intel-arc-b70-4-wrapped-admission.log": ("0.22.0", "0.34.0"),
    "08-vllm-41830-deepseek-v4-flash-kv-transfer.log": ("0.8.5.post1", "0.21.0"),
    "07-gpustack-4660-qwen3-8b-fp8-kv-transfer-v0.13.0.log": ("0.13.0", "0.13.0"),  # engine config line
    "10-club3090-612-qwen3.6-35b-a3b-v0.24.0.log": ("0.24.0", "0.24.0"),  # engine config line
    "11-club3090-295-qwen3.6-27b-mtp-tp2.log": ("0.22.0", "0.22.1"),
    "12-vllm-17469-qwen3-docker-v0.8.5.log": ("0.8.5.post1", "0.8.5.post1"),  # 0.8.5 (title)
    "16-vllm-10517-llama-3.1-8b-v0-tokens-error.log": ("0.6.6.post1", "0.6.6.post1"),  # V0 (0.6)
    "19-vllm-50722-qwen3.5-35b-a3b-memory-account.log": ("0.26.0", "0.26.0"),  # "0.2x" (post)
    "20-vllm-10517-llama-3.1-8b-v0-20k-ok.log": ("0.6.6.post1", "0.7.3"),  # V0 (0.6), no prefixes
    "21-vllm-pr13596-gpu-blocks-before.log": ("0.7.3", "0.7.3"),  # main of 2025-02-20, before 0.8
    # sites 524/527 are a development build's (no release has them): the wording alone counts
    "22-vllm-pr13596-kv-cache-tokens-after.log": ("0.8.5.post1", "0.27.1"),
    # July 2024 (0.5): older than the oldest fingerprinted release, so the range ends there
    "24-vllm-6746-llama-3.1-405b-fp8-v0-workers.log": ("0.6.6.post1", "0.7.3"),
    "25-vllm-25650-pp4-workers-available-kv.log": ('0.10.2', '0.11.0'),
    "26-vllm-32105-pp-admission-models-s.log": ('0.13.0', '0.21.0'),
    "27-vllm-32105-pp0-kv-memory-failed.log": ('0.14.0', '0.14.1'),
    "28-vllm-49878-gemma4-kv-cache-memory-bytes.log": ('0.26.0', '0.26.0'),
    "29-vllm-pr57047-one-line-capacity-memory-account.log": ('0.28.0', '0.34.0'),
    "30-vllm-pr3120-opt-125m-v0-mb.log": ('0.6.6.post1', '0.6.6.post1'),
    "31-vllm-13061-r1-distill-qwen-14b-tp2-tokens-error.log": ('0.7.3', '0.7.3'),
    "32-pytorch-serve-3315-torchserve-prefix.log": ('0.6.6.post1', '0.6.6.post1'),
    "33-vllm-ascend-1007-ray-repeated.log": ('0.6.6.post1', '0.7.3'),
    "34-vllm-5248-deepseek-coder-tp2-v0-blocks.log": ('0.6.6.post1', '0.6.6.post1'),
    "35-qwen-295-qwen1.5-7b-v0-tokens-error.log": ('0.6.6.post1', '0.10.2'),
    "36-gpustack-1800-qwen2.5-vl-v0-tokens-error.log": ('0.6.6.post1', '0.10.2'),
    "37-vllm-49011-qwen3.5-1m-padding.log": ('0.24.0', '0.25.1'),
    "38-spark-vllm-docker-396-quoted-admission.log": ('0.22.0', '0.34.0'),
    "39-vllm-25350-fp8-kv-100k.log": ('0.10.2', '0.10.2'),
    "40-lmcache-3326-cuda-graph-profiled.log": ('0.21.0', '0.21.0'),
    "41-xinference-4926-kv-memory-failed.log": ('0.17.0', '0.17.1'),
    "42-vllm-omni-469-negative-memory.log": ('0.11.0', '0.11.0'),
    "43-vllm-25350-fp8-kv-221k-admission.log": ('0.9.2', '0.12.0'),
    "46-club3090-1087-tp2-consumed-memory-account.log": ('0.27.0', '0.27.1'),
    "47-syv-ai-39-admission-cpu-backend-hint.log": ('0.22.0', '0.33.0'),
    "48-club3090-1047-qwen3.8-27b-mamba-page.log": ('0.27.0', '0.27.1'),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_release_inferred_from_real_logs(name):
    guess = infer_release(read_records((LOGS / name).read_text()))
    assert (guess.releases[0], guess.releases[-1]) == REAL[name] and not guess.conflicts


def test_prefix_cut_to_its_source_site_is_read():
    """Issue 17469's lines (0.8.5) with the prefix cut to "[kv_cache_utils.py:634]": the same facts
    as the whole line, and the same release."""
    whole = (LOGS / "12-vllm-17469-qwen3-docker-v0.8.5.log").read_text().splitlines()[:2]
    cut = [line[line.index("["):] for line in whole]
    assert cut[0] == "[kv_cache_utils.py:634] GPU KV cache size: 198,784 tokens"
    a, b = facts_of(read_records("\n".join(whole))), facts_of(read_records("\n".join(cut)))
    assert [(f.kind, f.values) for f in a.items] == [(f.kind, f.values) for f in b.items] and len(a.items) == 2
    assert infer_release(read_records("\n".join(cut))).releases == ("0.8.5.post1",)


def test_stat_logger_blocks_and_v0_profile_wordings():
    """0.11.0's v1/metrics/loggers.py and 0.6.6.post1's worker/worker.py wordings, as printed."""
    f = facts_of(read_records("INFO 10-31 15:07:50 [loggers.py:147] Engine 000: vllm cache_config_info with "
                              "initialization after num_gpu_blocks is: 8305"))
    assert [(x.kind, x.values) for x in f.items] == [("num_gpu_blocks", {"num_blocks": 8305})]
    f = facts_of(read_records("model weights take 14.99GiB; non_torch_memory takes 0.12GiB; PyTorch activation "
                              "peak memory takes 1.23GiB; the rest of the memory reserved for KV Cache is 2.89GiB."))
    assert [(x.kind, x.values) for x in f.items] == [("memory_profile", {"kv_cache_gib": 2.89})]
    f = facts_of(read_records("ValueError: To serve at least one request with the models's max seq len (32768), "
                              "(4.00 GB KV cache is needed, which is larger than the available KV cache memory "
                              "(2.50 GB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
                              "when initializing the engine."))
    assert [(x.kind, x.values) for x in f.items] == [
        ("admission_error", {"max_model_len": 32768, "needed_gib": 4.0, "available_gib": 2.5})]


def test_a_line_every_worker_prints_is_one_figure_with_its_count():
    """TP over multiprocessing: each worker prints the capacity lines; the repeats are one figure
    (printed N times), not N figures that disagree."""
    texts = (golden_log(json.loads(p.read_text()), exact_budget=False) for p in golden_cases()
             if p.stem.startswith("gpt-oss-20b__") and p.stem.endswith("0.24.0"))
    lines = next(t for t in texts if "GPU KV cache size" in t).splitlines()
    sized = [line for line in lines if "GPU KV cache size" in line or "Maximum concurrency" in line]
    repeated = lines + [line.replace("EngineCore_DP0 pid=4242", f"VllmWorker rank={r} pid={40 + r}")
                        for r in (1, 2, 3) for line in sized]
    r = kvplan.explain_log("\n".join(repeated))
    rows = [x for x in r["figures"] if x["kind"] in ("kv_cache_size", "concurrency")]
    assert rows and all(x["count"] == 4 and x["agrees"] for x in rows)
    assert r["outcome"]["ok"] is True and r["verdict"].startswith("agrees on all")


def test_set_gives_a_vllm_flag_the_log_does_not_show():
    """--set KEY=VALUE by vLLM's flag names (dest or flag spelling) wins over the log; a name the
    release's parser does not have is a one-line error (exit 1), never a traceback."""
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    name = str(LOGS / "11-club3090-295-qwen3.6-27b-mtp-tp2.log")
    r = kvplan.explain_log(name, settings=["tensor_parallel_size=4", "--max-num-seqs=8"])
    opts, src = r["rebuild"]["options"], r["rebuild"]["option_sources"]
    assert (opts["tensor_parallel_size"], src["tensor_parallel_size"]) == (4, "--set")
    assert (opts["max_num_seqs"], src["max_num_seqs"]) == (8, "--set")
    res = CliRunner().invoke(ensure_registered(), ["explain-log", name, "--set", "tensor_paralel=4"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "--set tensor_paralel=4: not a vllm serve flag of" in res.output + (res.stderr or "")


def test_capacity_line_gives_the_tokens_per_request():
    """Issue 17469 (0.8.5): no args line; the concurrency line's 8,192 tokens per request is the
    max_model_len the rebuild uses, not the config's default."""
    r = kvplan.explain_log(str(LOGS / "12-vllm-17469-qwen3-docker-v0.8.5.log"))
    assert r["rebuild"]["options"]["max_model_len"] == 8192
    assert r["rebuild"]["option_sources"]["max_model_len"] == "the capacity line's tokens per request (line 2)"
