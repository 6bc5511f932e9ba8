"""The vLLM releases kvplan accepts (PyPI's list, ``pip index versions vllm``, read 2026-12-02,
from 0.10.1, the first release with gpt-oss, to 0.34.0) and those whose own layout functions
produced goldens. Pure data: the bottom of the engine's import graph (eras → releases)."""

from __future__ import annotations

from kvplan.version import version_key as version_key  # the one parser, re-exported for the engines

VERSIONS: tuple[str, ...] = (
    "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1",
    "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0", "0.19.1", "0.20.0",
    "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0",
    "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0",
)

# Releases whose own layout functions produced committed goldens (tests/golden/*__<release>.json):
# the newest patch of every minor from 0.11 and the patch releases whose layout modules differ
# from it (0.11.0, 0.17.0, 0.18.0, 0.19.0, 0.20.0). Not run: 0.10.1, 0.10.1.1 and 0.10.2 (their
# kv_cache_utils predates _get_kv_cache_groups_uniform_page_size, which the runner drives; they
# map to vllm-0.10, checked on 0.11.0), 0.16.0 (its imports need torch._dynamo's
# NP_SUPPORTED_MODULES, absent from the CPU torch 2.13 here; it maps to vllm-0.16, vllm-0.15 as checked
# on 0.15.1 but for ROCM_AITER_FA's kernel blocks, read in its source). Same layout modules as a golden release (scripts/golden/diff_layout.py): 0.10.1 =
# 0.10.1.1, 0.11.1 = 0.11.2, 0.14.0 = 0.14.1, 0.15.0 = 0.15.1, 0.20.1 = 0.20.2, 0.22.0 = 0.22.1,
# 0.25.0 = 0.25.1, 0.27.0 = 0.27.1.
GOLDEN_RELEASES: tuple[str, ...] = (
    "0.11.0", "0.11.2", "0.12.0", "0.13.0", "0.14.1", "0.15.1", "0.17.0", "0.17.1", "0.18.0", "0.18.1",
    "0.19.0", "0.19.1", "0.20.0", "0.20.2", "0.21.0", "0.22.1", "0.23.0", "0.24.0", "0.25.1", "0.26.0",
    "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0",
)

NEWEST_CHECKED = VERSIONS[-1]


