"""Tables fit the width they are given ($COLUMNS, 100 when piped) and never cut a number.

inspect draws its tables with report.width.fitted_table (numbers as wide as their widest cell,
least important columns dropped with a note); every other command's lines fit the width too.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import ensure_registered

app = ensure_registered()

GPT_OSS_PEAGLE = ["openai/gpt-oss-20b", "--drafter", "amazon/GPT-OSS-20B-P-EAGLE"]
COMMANDS = [
    ["inspect", *GPT_OSS_PEAGLE],
    ["inspect", "meta-llama/Meta-Llama-3.1-8B"],
    ["simulate", *GPT_OSS_PEAGLE, "--kv-cache-memory", "40GiB"],
    ["compare", "google/gemma-3-27b-it", "--kv-cache-memory", "20GiB", "--target-len", "32768"],
    ["fit", "Qwen/Qwen3-8B", "--gpus", "H100-80GB", "--tp-sizes", "1,2"],
    ["models"],
    ["explain-log", "configs/logs/gemma-3-27b-it-40gib-vllm-0.18.0.log"],
]


def run(args: list[str], columns: int):
    return CliRunner(env={"COLUMNS": str(columns)}).invoke(app, args)


@pytest.mark.parametrize("columns", [80, 100, 200])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: "-".join(a[:2]) if isinstance(a, list) else str(a))
def test_no_line_exceeds_the_width(args, columns):
    r = run(args, columns)
    assert r.exit_code == 0, r.stderr
    too_wide = [line for line in r.stdout.splitlines() if len(line) > columns]
    assert too_wide == []


@pytest.mark.parametrize("columns", [80, 100, 200])
def test_inspect_keeps_every_number_whole(columns):
    # gpt-oss-20b + P-EAGLE: 12 sliding + 12 full target layers and 4 drafter layers, each with a
    # page of 16 tokens x 8 KV heads x (64 + 64) x 2 bytes = 32,768 B; 28 layers in all.
    d = json.loads(run(["inspect", *GPT_OSS_PEAGLE, "--format", "json"], columns).stdout)
    assert {layer["page_size_bytes"] for layer in d["layers"]} == {16 * 8 * (64 + 64) * 2}
    out = run(["inspect", *GPT_OSS_PEAGLE], columns).stdout
    rows = [line.split() for line in out.splitlines()]
    # every layer row ends with its whole page size; the index column (never dropped) counts them,
    # a run of identical layers being one row "a-b" (here the four P-EAGLE layers, 24-27)
    def count(index: str) -> int:
        a, _, b = index.partition("-")
        return int(b) - int(a) + 1 if b else 1

    layer_rows = [r for r in rows if r and r[0].replace("-", "").isdigit() and r[-1] == "32,768"]
    assert [r[0] for r in layer_rows][-2:] == ["23", "24-27"]
    assert sum(count(r[0]) for r in layer_rows) == d["num_layers"] == 28
    # the summary's per-token total: 28 layers x 32,768 B / 16 tokens = 57,344 B per token
    assert d["kv_bytes_per_token"] == 57_344 and "57,344" in out
