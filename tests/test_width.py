"""Tables fit the width they are given ($COLUMNS, 100 when piped) and never cut a number.

Every renderer draws its tables with report.width.fitted_table (numbers as wide as their widest
cell, text wrapped at spaces, least important columns dropped with a note), so no command prints
Rich's "…" (a cut cell) or a line wider than the width; ``--help`` never cuts a flag name.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

app = ensure_registered()

GPT_OSS_PEAGLE = ["openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE", "--num-speculative-tokens", "5"]
GEMMA = "google/gemma-3-27b-it"
DEPLOYMENTS = ["configs/deployments/gemma-3-27b.yaml", "configs/deployments/failing/gpt-oss-20b-peagle-vllm-0.17.yaml"]
# (arguments, expected exit code): every command and the shapes that print the most
COMMANDS = [
    (["inspect", *GPT_OSS_PEAGLE], 0),
    (["inspect", "meta-llama/Meta-Llama-3.1-8B"], 0),
    (["inspect", "Qwen/Qwen3-Next-80B-A3B-Thinking", "-tp", "2", "-pp", "2"], 0),
    (["simulate", *GPT_OSS_PEAGLE, "--kv-cache-memory", "40GiB"], 0),
    (["simulate", GEMMA, "-pp", "2", "--kv-cache-memory", "40GiB"], 0),
    (["simulate", GEMMA, "--kv-cache-memory", "40GiB", "--num-gpu-blocks-override", "1000"], 3),
    (["simulate", "meta-llama/Llama-3.3-70B-Instruct", "--kv-cache-memory", "80GiB", "--explain"], 0),
    (["simulate", GEMMA, "--kv-cache-memory", "20GiB", "--sweep-threshold", "1:2:0.25"], 0),
    (["simulate", GEMMA, "--kv-cache-memory", "40GiB", "--num-gpu-blocks-override", "1000", "--summary"], 3),
    # the model's 128k context on one H100 at 0.34.0: 18.0 GiB of KV cache against the 18.0 GiB one request needs,
    # refused at admission (the failure report's width)
    (["simulate", GEMMA, "--gpu", "H100"], 3),
    (["simulate", GEMMA, "--gpu", "H100", "--max-model-len", "16384"], 0),
    (["compare", GEMMA, "--kv-cache-memory", "20GiB", "--target-len", "32768", "--target-concurrency", "8"], 0),
    (["fit", "Qwen/Qwen3-8B", "--gpus", "H100-80GB,L4", "--tp-sizes", "1,2", "--max-model-len", "32768",
      "--concurrency", "8"], 0),
    (["fit", GEMMA, "--gpu", "H100"], 0),
    (["fit", "--list-gpus"], 0),
    (["check", *DEPLOYMENTS], 3),
    (["models"], 0),
    (["policies"], 0),
    (["explain-log", "configs/logs/gemma-3-27b-it-40gib-vllm-0.18.0.log"], 0),
    (["explain-log", "configs/logs/vllm-issue-27508-gpt-oss-120b-h100.log"], 0),
    (["explain-log", "tests/logs/10-club3090-612-qwen3.6-35b-a3b-v0.24.0.log"], 0),
    (["vllm", "--gpu", "H100-80GB", "serve", "openai/gpt-oss-20b", "--max-model-len", "128k"], 0),
]


def app_commands() -> list[str]:
    from kvplan.cli.app import COMMANDS

    return list(COMMANDS)


def run(args: list[str], columns: int):
    return CliRunner(env={"COLUMNS": str(columns)}).invoke(app, args)


@pytest.mark.parametrize("columns", [80, 100, 200])
@pytest.mark.parametrize("args, code", COMMANDS, ids=lambda a: "-".join(a[:3]) if isinstance(a, list) else str(a))
def test_no_line_exceeds_the_width_and_nothing_is_cut(args, code, columns):
    r = run(args, columns)
    assert r.exit_code == code, r.stderr
    too_wide = [line for line in r.stdout.splitlines() if len(line) > columns]
    assert too_wide == []
    # Rich marks a cut cell with "…"; kvplan's own text never uses the character
    assert [line for line in r.stdout.splitlines() if "…" in line] == []


@pytest.mark.parametrize("args", [a for a, _ in COMMANDS if a[0] == "inspect"], ids=lambda a: "-".join(a[:2]))
def test_inspect_fits_80_columns_in_bytes_too(args):
    # a log viewer or `awk length` counts bytes: the header rule is ASCII ("─" is 3 bytes, so an
    # 80-column rule was 240), and inspect's tables hold no other non-ASCII character
    r = run(args, 80)
    assert r.exit_code == 0, r.stderr
    assert [line for line in r.stdout.splitlines() if len(line.encode()) > 80] == []
    assert "-" * 20 in r.stdout


def test_piped_output_is_100_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    from kvplan.report.terminal import terminal_width

    assert terminal_width() == 100  # pytest captures stdout: not a terminal
    monkeypatch.setenv("COLUMNS", "83")
    assert terminal_width() == 83


@pytest.mark.parametrize("columns", [80, 40])
@pytest.mark.parametrize("command", [None, *sorted(app_commands())])
def test_help_never_cuts_a_flag(command, columns):
    # 40 columns: the narrowest kvplan lays out for (report.terminal.MIN_WIDTH); a longer
    # VLLM_* name breaks after an underscore, a flag never breaks
    import typer

    args = [command, "--help"] if command else ["--help"]
    if command is None:  # the root help is written without Typer (no command module imported)
        import subprocess
        import sys

        out = subprocess.run([sys.executable, "-m", "kvplan.cli", "--help"], capture_output=True, text=True,
                             env={**__import__("os").environ, "COLUMNS": str(columns)}, check=True).stdout
        flags = []
    else:
        r = run(args, columns)
        assert r.exit_code == 0, r.stderr
        out = r.stdout
        cmd = typer.main.get_command(app).commands[command]
        flags = [o for p in cmd.params if not getattr(p, "hidden", False) for o in (*p.opts, *p.secondary_opts)
                 if o.startswith("-")]
        assert len(flags) >= 2
    lines = out.splitlines()
    assert [line for line in lines if len(line) > columns] == [] and "…" not in out
    words = set(out.replace(",", " ").split())
    assert [f for f in flags if f not in words] == []  # every spelling of every flag, whole


def test_dense_model_collapses_its_tensor_rows():
    # Llama-3.3-70B: 80 identical full layers → one group of 80 slots, one tensor per layer:
    # 80 GiB // (80 slots × 65,536 B) = 16,384 blocks; each tensor 16,384 × 65,536 B = 1,073,741,824 B
    out = run(["simulate", "meta-llama/Llama-3.3-70B-Instruct", "--kv-cache-memory", "80GiB"], 80).stdout
    rows = [line.split() for line in out.splitlines()]
    assert ["0-79", "1,073,741,824", "0-79", "(one", "layer", "each)"] in rows
    assert len(out.splitlines()) < 40


def test_tensor_rows_collapse_by_common_step():
    from kvplan.report.tables import tensor_rows
    from kvplan.results.records import TensorRow

    def t(i, layers, size=10):
        return TensorRow(index=i, size_bytes=size, shared_by=tuple(f"model.layers.{n}.self_attn.attn" for n in layers))

    # gpt-oss + P-EAGLE: tensor i holds layers 2i and 2i+1 (12 tensors), then the drafter's 24-27 alone
    tensors = [t(i, [2 * i, 2 * i + 1]) for i in range(12)] + [t(12 + i, [24 + i]) for i in range(4)]
    assert tensor_rows(tensors) == [["0-11", "10", "0, 1 to 22, 23 (+2 per tensor)"],
                                    ["12-15", "10", "24-27 (one layer each)"]]
    # two in a row stay two rows; a size change breaks a run
    assert tensor_rows([t(0, [0]), t(1, [1])]) == [["0", "10", "0"], ["1", "10", "1"]]
    assert [r[0] for r in tensor_rows([t(0, [0]), t(1, [1]), t(2, [2], size=20)])] == ["0", "1", "2"]


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_inspect_keeps_every_number_whole(columns):
    # gpt-oss-20b + P-EAGLE: 12 sliding + 12 full target layers and 4 drafter layers, each with a
    # page of 16 tokens x 8 KV heads x (64 + 64) x 2 bytes = 32,768 B; 28 layers in all.
    d = json.loads(run(["inspect", *GPT_OSS_PEAGLE, "--format", "json"], columns).stdout)
    assert {layer["page_size_bytes"] for layer in d["layers"]} == {64 * 8 * (64 + 64) * 2}  # block 64 (0.34.0)
    out = run(["inspect", *GPT_OSS_PEAGLE], columns).stdout
    rows = [line.split() for line in out.splitlines()]
    # every layer row ends with its whole page size; the index column (never dropped) counts them,
    # a repeating pattern being one row per position "a-b/s" (the alternating target layers
    # 0-22/2 and 1-23/2) and a run of identical layers one row "a-b" (the P-EAGLE layers, 24-27)
    def count(index: str) -> int:
        span, _, step = index.partition("/")
        a, _, b = span.partition("-")
        return (int(b) - int(a)) // int(step or 1) + 1 if b else 1

    layer_rows = [r for r in rows if r and r[0].replace("-", "").replace("/", "").isdigit() and r[-1] == "131,072"]
    assert [r[0] for r in layer_rows] == ["0-22/2", "1-23/2", "24-27"]
    assert sum(count(r[0]) for r in layer_rows) == d["num_layers"] == 28
    # the summary's per-token total: 28 layers x 32,768 B / 16 tokens = 57,344 B per token
    assert d["kv_bytes_per_token"] == 57_344 and "57,344" in out


SUMMARY_CASES = [
    ([GEMMA, "--kv-cache-memory", "40GiB", "--num-gpu-blocks-override", "1000"], 3),
    ([GEMMA, "-pp", "2", "--kv-cache-memory", "40GiB"], 0),
    ([*GPT_OSS_PEAGLE, "--kv-cache-memory", "40GiB", "--policy", "vllm==0.17.1"], 3),
    (["meta-llama/Llama-3.3-70B-Instruct", "--kv-cache-memory", "40GiB"], 3),
    (["Qwen/Qwen3-Next-80B-A3B-Thinking", "--kv-cache-memory", "40GiB"], 0),
]


@pytest.mark.parametrize("args, code", SUMMARY_CASES, ids=lambda a: "-".join(a[:3]) if isinstance(a, list) else str(a))
def test_summary_is_one_screen(args, code):
    r = run(["simulate", *args, "--summary"], 80)
    assert r.exit_code == code, r.stderr
    lines = r.stdout.splitlines()
    assert 5 <= len(lines) <= 20 and all(len(line) <= 80 for line in lines)
    text = " ".join(r.stdout.split())
    assert "max_concurrency" in text and "steady_state_concurrency" in text and "outcome:" in text


def test_summary_of_a_failure_keeps_the_decision_and_the_fix():
    # gemma-3-27b: 52 sliding ≥ 10 full × 1.5 → group size 10; 1,000 overridden blocks hold 1.22 GiB
    # (999 × 1,310,720 B) where one 131,072-token request needs 17.98 GiB; vLLM estimates 2,256 tokens
    # (figures at block 16, where test_failure_reports derived them: --block-size 16 on 0.34.0)
    r = run(["simulate", GEMMA, "--block-size", "16", "--kv-cache-memory", "40GiB", "--num-gpu-blocks-override",
             "1000", "--summary"], 100)
    text = " ".join(r.stdout.split())
    assert "decision: 52 sliding(1024) + 10 full; 52 ≥ 10 × 1.5 → group_size 10, 7 groups" in text
    assert "padding: 8 layers (vLLM: may waste at most 15.38%)" in text
    assert "num_blocks: not allocated; 17.98 GiB needed, 1.22 GiB available" in text
    assert "max_model_len: 131,072 (vLLM's estimated maximum: 2,256)" in text
    assert "fix (verified by re-simulating): --max-model-len 2256 → starts; num_blocks 1,000" in text


def test_summary_of_a_config_refusal_sizes_nothing():
    # a drafter without num_speculative_tokens: vLLM 0.34.0's SpeculativeConfig refuses it before
    # any KV cache is sized, so the summary shows no zero memory figures, only the refusal and
    # the fix (1 token: Llama-3.1-8B + its EAGLE-3 head, 33 full layers of 262,144 B per block at 0.34.0's
    # block 64, 40 GiB // (33 × 262,144 B) = 4,964 blocks, the golden llama-3.1-8b-speculator__40gib__0.34.0's)
    r = run(["simulate", "meta-llama/Llama-3.1-8B-Instruct", "--drafter", "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
             "--kv-cache-memory", "40GiB", "--summary"], 100)
    text = " ".join(r.stdout.split())
    assert r.exit_code == 3
    assert "KV cache: not sized (vLLM refuses the configuration before it)" in text
    assert "num_blocks: not allocated" not in text and "KV tokens" not in text
    assert ("outcome: the engine would fail at start-up (config.speculative): ValidationError: A speculative model "
            "was provided, but `num_speculative_tokens` was not provided") in text
    assert "num_blocks 4,964" in text and 40 * 2**30 // (33 * 262_144) == 4_964


def test_warnings_fit_the_width_too():
    # inspect's warning for a drafter without num_speculative_tokens is 291 characters as one line; on
    # stderr it wraps at $COLUMNS like the tables
    import subprocess
    import sys

    env = {**__import__("os").environ, "COLUMNS": "80"}
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "inspect", "openai/gpt-oss-20b", "--drafter",
                        "amazon/GPT-OSS-20B-P-EAGLE"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("Warning: vLLM (0.34.0) refuses this speculative method without")
    assert all(len(line) <= 80 for line in (r.stdout + r.stderr).splitlines())
    assert all(line.startswith(" " * 9) for line in lines[1:])


def test_repeating_layer_patterns_fold_into_one_row_per_position():
    import kvplan
    from kvplan.report.tables import collapse_layers

    def index_and_kind(model, **kw):
        return [(r[0], r[3]) for r in collapse_layers(kvplan.inspect(model, **kw)["layers"])]

    # gpt-oss-20b (config layer_types: sliding, full, alternating over 24 layers) + the 4 full
    # P-EAGLE layers registered after them (24-27)
    assert index_and_kind("openai/gpt-oss-20b", drafter="amazon/GPT-OSS-20B-P-EAGLE", num_speculative_tokens=5) == [
        ("0-22/2", "sliding_window"), ("1-23/2", "full_attention"), ("24-27", "full_attention")]
    # gemma-3-27b: 62 layers, every 6th full (5, 11, …, 59; sliding_window_pattern 6); 60 and 61
    # continue the pattern, so position 0 runs 0-60 and position 1 runs 1-61
    assert index_and_kind("google/gemma-3-27b-it") == [
        ("0-60/6", "sliding_window"), ("1-61/6", "sliding_window"), ("2-56/6", "sliding_window"),
        ("3-57/6", "sliding_window"), ("4-58/6", "sliding_window"), ("5-59/6", "full_attention")]
    # fewer than 3 repeats stay one row per layer
    layer = {"source": "model", "kind": "full_attention", "window": None, "num_kv_heads": 8, "head_size": 64,
             "head_size_v": 64, "dtype": "bfloat16", "block_size": 16, "page_size_bytes": 32768}
    two = [dict(layer, index=i, name=f"model.layers.{i}.attn") for i in range(2)]
    assert [r[0] for r in collapse_layers(two)] == ["0", "1"]
