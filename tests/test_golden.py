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
