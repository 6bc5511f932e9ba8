"""Real serve lines (tests/data/serve_lines.yaml, each cited by URL) read and simulated by `kvplan vllm`.

Each entry's `expect` was derived from its flags by hand (vLLM's spellings: -tp is
--tensor-parallel-size, --gpu_memory_utilization is --gpu-memory-utilization, --model moves to the
front, human_readable_int); `error` is the one line kvplan prints for a line it refuses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import kvplan
from kvplan.engines.vllm.serve_flags import generated_releases
from kvplan.errors import KvplanError

DATA = Path(__file__).resolve().parent / "data"
LINES = yaml.safe_load((DATA / "serve_lines.yaml").read_text())["lines"]


def test_the_collection_covers_what_the_issue_asks():
    simulated = [e for e in LINES if "expect" in e]
    assert len(simulated) >= 30
    assert all(e["url"].startswith("https://") for e in LINES)
    assert len({e["id"] for e in LINES}) == len(LINES)
    spec = [e for e in simulated if "--speculative" in e["line"] or "--speculative_config" in e["line"]]
    tp2 = [e for e in simulated if e["expect"]["options"].get("tensor_parallel_size", 1) >= 2]
    docker = [e for e in simulated if e["line"].startswith("docker run")]
    assert len(spec) >= 8 and len(tp2) >= 5 and len(docker) >= 3
    # a substituted model is always said so, with the published words
    for e in LINES:
        assert ("substitution" in e) == ("published" in e), e["id"]
    # across the catalog's families: kvplan's family rules (llama, gpt_oss, deepseek MLA, gdn hybrids,
    # nemotron_h Mamba, layer_types sliding windows, ...) and the architectures behind them
    infos = [kvplan.inspect(e["expect"]["model"])["model"] for e in simulated]
    assert len({i["family"] for i in infos}) >= 7
    assert len({i["architecture"] for i in infos}) >= 12, sorted({i["architecture"] for i in infos})


@pytest.mark.parametrize("entry", LINES, ids=[e["id"] for e in LINES])
def test_real_line(entry):
    run = lambda: kvplan.vllm_serve(line=entry["line"], base=DATA, **entry.get("kvplan", {}))  # noqa: E731
    if "error" in entry:
        with pytest.raises(KvplanError) as e:
            run()
        # {flag_lists}: the generated flag lists (kvplan/engines/vllm/serve_flags/), as the message names them
        assert e.value.message == entry["error"].replace("{flag_lists}", ", ".join(generated_releases()))
        return
    d = run()
    exp = entry["expect"]
    assert d["serve"]["release"] == exp["release"]
    assert d["serve"]["model"] == exp["model"]
    given = {k: v["value"] for k, v in d["inputs"]["options"].items()
             if v["given"] and k not in entry.get("kvplan", {})}
    assert given == exp["options"]
    flags = d["serve"]["flags"]
    assert [f["flag"] for f in flags if f["effect"] == "no effect"] == exp["no_effect"]
    assert [f["flag"] for f in flags if f["effect"] == "estimate"] == exp["estimate"]
    assert d["outcome"]["starts"] is exp["starts"]


# vLLM 0.34.0's own parser on the same words (scripts/golden/serve_lines_check.py, run in the 0.34.0
# wheel's venv): which dests each line sets, a few values, or argparse's error.
VLLM = yaml.safe_load((DATA / "serve_lines_vllm-0.34.0.json").read_text())
CHECKED = {"tensor_parallel_size", "pipeline_parallel_size", "decode_context_parallel_size", "data_parallel_size",
           "max_model_len", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "kv_cache_dtype",
           "enable_prefix_caching", "enable_expert_parallel"}


@pytest.mark.parametrize("entry", LINES, ids=[e["id"] for e in LINES])
def test_vllm_parser_agrees(entry):
    assert VLLM["vllm_version"] == "0.34.0"
    theirs = VLLM["lines"][entry["id"]]
    if "error" in entry:
        if "error" in theirs:  # vLLM refuses the line too, at the flag kvplan names
            assert entry["error"].split(":")[0] in theirs["error"], theirs["error"]
        else:  # vLLM parses it; kvplan refuses what it does not model, and says so
            assert "kvplan" in entry["error"]
        return
    d = kvplan.vllm_serve(line=entry["line"], base=DATA, **entry.get("kvplan", {}))
    if "error" in theirs:  # vLLM refuses a flag of older releases; kvplan reads the line without it, and warns
        skipped = entry["read_without"]
        assert any(f in theirs["error"] for f in skipped), theirs["error"]
        assert [w.split(":")[0] for w in d["warnings"] if "the line is read without it" in w] == skipped
        return
    mine = {f["dest"] for f in d["serve"]["flags"]} - {"model", "config"}
    assert mine == set(theirs["dests"]) - {"model", "model_tag"}
    options = d["inputs"]["options"]
    for dest, value in theirs["values"].items():
        if dest in CHECKED:
            assert options[dest]["value"] == value, dest
    if "speculative_config" in theirs["values"]:
        spec = theirs["values"]["speculative_config"]
        assert options["num_speculative_tokens"]["value"] == spec["num_speculative_tokens"]
