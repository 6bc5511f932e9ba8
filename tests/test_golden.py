"""kvplan against vLLM's own layout functions, field by field.

Each file in tests/golden was written by scripts/golden/make_goldens.py, which ran the
released vLLM wheels (every release in kvplan.engines.vllm.releases.GOLDEN_RELEASES) on CPU
on the scenario kvplan simulated (kvplan.verify.case). Here the same specs and options go through
kvplan's engine and every field vLLM reported must match (kvplan.verify.compare, the comparison
`simulate --cross-check` uses): the start-up error, the model runner and tokens in flight, vLLM's
log lines verbatim, groups (layers, spec class, block size, page size), the final max_model_len,
num_blocks per worker and global, tensors, admission bytes, and max concurrency.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engines.vllm.releases import GOLDEN_RELEASES
from kvplan.verify.compare import mismatches

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))
@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_matches_vllm(path):
    assert mismatches(json.loads(path.read_text())) == []


def test_goldens_cover_the_golden_releases():
    """Every release the registry says was golden-tested has goldens, and no other (≥ 25)."""
    versions = {json.loads(p.read_text())["vllm_version"] for p in GOLDEN}
    assert versions == set(GOLDEN_RELEASES)
    assert len(versions) >= 25


# vLLM 0.10.1 (the first release kvplan knows, before the golden set): Llama-4-Scout only, for its
# hybrid-manager default (issue 35). VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaulted to "0"
# (0.10.1 vllm/envs.py line 1140), so VllmConfig.__post_init__ turned the hybrid manager off for a
# chunked-local model (config/__init__.py line 3674, with its "latency regression" warning); kvplan's
# runner case carries that decision (disable_hybrid_kv_cache_manager True) and the wheel's
# get_kv_cache_config + unify_kv_cache_configs (0.10's per-worker API) size it: 13653 blocks, 1.67x.
PRE_011 = sorted((Path(__file__).parent / "golden" / "pre-0.11").glob("*.json"))


@pytest.mark.parametrize("path", PRE_011, ids=[p.stem for p in PRE_011])
def test_matches_vllm_before_the_golden_set(path):
    assert mismatches(json.loads(path.read_text())) == []


def test_llama4_scout_on_0101_runs_without_the_hybrid_manager():
    g = json.loads((Path(__file__).parent / "golden" / "pre-0.11" / "llama-4-scout__40gib__0.10.1.json").read_text())
    assert g["vllm_version"] == "0.10.1" and g["result"]["api"] == "per_worker"
    assert g["case"]["disable_hybrid_kv_cache_manager"] is True  # kvplan's default for 0.10.1
    assert g["result"]["num_blocks"] == 13653
    assert g["result"]["max_concurrency"] == pytest.approx(1.6666259765625)
