"""The verdict first (issue 25): every table output starts with one grep-able line, and --summary
is at most 20 lines on vllm (any position), fit, check and explain-log."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.report.verdict import verdict_line

app = ensure_registered()
LOGS = Path(__file__).resolve().parent.parent / "configs" / "logs"

DEPLOY = """\
deployments:
  - name: fits
    model: Qwen/Qwen3-8B
    gpu: H100-80GB
  - name: too-small
    model: Qwen/Qwen3-8B
    kv_cache_memory: 1GiB
"""


def invoke(*args):
    return CliRunner().invoke(app, list(args))


def test_ok_line_names_blocks_concurrency_release_and_card():
    d = kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB")
    m, band = d["memory"], d["budget"]["band"]
    # the band's ends in brackets: the blocks and concurrency vLLM would give at the pessimistic and optimistic end
    assert band["starts_at_low"] is True
    assert verdict_line(d) == (f"OK starts: {m['num_blocks']:,} blocks ({band['num_gpu_blocks_low']:,}-"
                               f"{band['num_gpu_blocks_high']:,}), {m['max_concurrency']:.2f} "
                               f"({band['max_concurrency_low']:.2f}-{band['max_concurrency_high']:.2f}) × 40,960 tokens "
                               "(vLLM 0.34.0, H100-80GB)")
    r = invoke("simulate", "Qwen/Qwen3-8B", "--gpu", "H100-80GB")
    assert r.exit_code == 0 and r.stdout.splitlines()[0] == verdict_line(d)


def test_fails_line_names_stage_text_and_fix():
    d = kvplan.simulate("Qwen/Qwen3-8B", kv_cache_memory="1GiB")
    # vLLM's estimate for 1 GiB at 0.34.0's block 64: 9,437,184 B per 64 tokens, 1 GiB holds 113 blocks, less
    # the null block 112 x 64 = 7,168 tokens; the available figure is 1 GiB less that null block (9,437,184 B):
    # 0.99 GiB
    assert d["outcome"]["fix"] == "--max-model-len 7168"
    assert verdict_line(d) == (
        "FAILS at admission: To serve at least one request with the model's max seq len (40960), (5.62 GiB KV "
        "cache is needed, which is larger than the available KV cache memory (0.99 GiB) — fix: --max-model-len 7168")
    r = invoke("simulate", "Qwen/Qwen3-8B", "--kv-cache-memory", "1GiB")
    # wrapped to the terminal: the first line starts with FAILS, continuation lines are indented
    head = r.stdout.split("\n\n")[0].splitlines()
    assert r.exit_code == 3 and head[0].startswith("FAILS at admission: ")
    assert " ".join(x.strip() for x in head[:1] + [x for x in head[1:] if x.startswith("  ")]).startswith(
        verdict_line(d)[:60])


def test_effective_concurrency_is_capped_by_max_num_seqs():
    d = kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB", max_num_seqs=4)
    m = d["memory"]
    assert m["max_concurrency"] > 10 and m["effective_concurrency"] == 4.0  # min(KV-limited, max_num_seqs)
    assert verdict_line(d).endswith("; scheduler cap 4 (max_num_seqs)")
    d = kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB")
    assert d["memory"]["effective_concurrency"] == d["memory"]["max_concurrency"]  # 1,024 seqs do not cap 10.5


@pytest.mark.parametrize("args", [
    ("vllm", "--gpu", "H100-80GB", "--summary", "serve", "Qwen/Qwen3-8B", "--max-model-len", "8k"),
    ("vllm", "--gpu", "H100-80GB", "serve", "Qwen/Qwen3-8B", "--summary", "--max-model-len", "8k"),
    ("vllm", "--gpu", "H100-80GB", "--line", "vllm serve Qwen/Qwen3-8B --max-model-len 8k", "--summary"),
    ("fit", "Qwen/Qwen3-8B", "--summary"),
    ("simulate", "Qwen/Qwen3-8B", "--gpu", "H100-80GB", "--summary"),
    ("explain-log", str(LOGS / "gemma-3-27b-it-40gib-vllm-0.18.0.log"), "--summary"),
])
def test_summary_is_one_screen_and_starts_with_the_verdict(args):
    r = invoke(*args)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert 3 <= len(lines) <= 20
    assert lines[0].startswith("OK ")


def test_check_verdict_and_summary(tmp_path):
    f = tmp_path / "deploy.yaml"
    f.write_text(DEPLOY)
    for extra in ((), ("--summary",)):
        r = invoke("check", *extra, str(f))
        assert r.exit_code == 3
        first = r.stdout.splitlines()[0]
        assert first.startswith("FAILS 1/2 deployments; too-small: FAILS at admission:")
        assert "— fix: --max-model-len 7168" in r.stdout
    assert len(r.stdout.splitlines()) <= 20


def test_explain_log_starts_with_the_logs_verdict():
    # the log's outcome is the verdict (the re-simulation's "ok" is not a second, contradicting OK line)
    log = str(LOGS / "vllm-issue-27508-gpt-oss-120b-h100.log")
    whole = invoke("explain-log", log)
    short = invoke("explain-log", log, "--summary")
    for r in (whole, short):
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines()[0].startswith("FAILS at admission: To serve at least one request")
        assert not any(line == "OK" for line in r.stdout.splitlines())
    lines = short.stdout.splitlines()
    assert len(lines) <= 20 and lines[-1].startswith("… ") and lines[-1].endswith("(drop --summary for the whole report)")
    assert len(whole.stdout.splitlines()) > 20
