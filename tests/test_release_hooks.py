"""Mamba/GDN settings as each vLLM release resolves them, against the release's own config
hooks (tests/golden/hooks/<release>.json, written by ``make_goldens.py``: the runner calls
``MambaModelConfig.verify_and_update_config`` and ``NemotronHForCausalLMConfig`` inside
each release's environment).

* the Mamba cache mode from (--enable-prefix-caching, --mamba-cache-mode): 0.33+ ignores
  the flag, 0.15-0.32 reconcile it with prefix caching, earlier releases have no modes;
* Nemotron-H's ssm state dtype when config.json has no mamba_ssm_cache_dtype (float16 from
  0.13's hook, float32 from 0.20's), whatever transformers is installed beside kvplan.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kvplan.engines.vllm.hybrid import resolve_mamba_cache_mode
from kvplan.engines.vllm.releases import era_of_release

HOOKS = sorted((Path(__file__).parent / "golden" / "hooks").glob("*.json"))


def _cases(kind: str):
    for path in HOOKS:
        doc = json.loads(path.read_text())
        for c in doc["cases"]:
            if c["case"]["kind"] == kind:
                yield pytest.param(doc["vllm_version"], c["case"], c["result"], id=f"{doc['vllm_version']}:{c['case']['case']}")


@pytest.mark.parametrize("release, case, result", list(_cases("mamba_mode")))
def test_mamba_cache_mode_matches_the_release(release, case, result):
    assert result["error"] is None
    era = era_of_release(release)
    logs: list[str] = []
    ours = resolve_mamba_cache_mode(
        era, enable_prefix_caching=case["enable_prefix_caching"], mamba_cache_mode=case["mamba_cache_mode"],
        supports_all=case["supports_mamba_prefix_caching"], logs=logs,
    )
    if result["mamba_cache_mode"] is None:  # the release has no Mamba cache modes
        assert era.mamba_cache_mode_rule == "as_given"
    else:
        assert ours == result["mamba_cache_mode"]


@pytest.mark.parametrize("release, case, result", list(_cases("nemotron_h_ssm")))
def test_nemotron_h_ssm_dtype_matches_the_release(release, case, result, tmp_path):
    from kvplan.model import ServingOptions, build_model_layout

    assert result["error"] is None
    era = era_of_release(release)
    (tmp_path / "config.json").write_text(json.dumps(case["hf_config"]))
    layout = build_model_layout(str(tmp_path), None,
                                replace(ServingOptions(), nemotron_h_ssm_cache_dtype=era.nemotron_h_ssm_cache_dtype))
    ssm = {ls.spec.dtypes[1] for ls in layout.layers if ls.spec.kind == "mamba"}
    # "auto" = no hook in that release: the state takes the model dtype (bfloat16 here)
    expected = "bfloat16" if result["mamba_ssm_cache_dtype"] == "auto" else result["mamba_ssm_cache_dtype"]
    assert ssm == {expected}


def test_hook_goldens_cover_several_releases():
    releases = {json.loads(p.read_text())["vllm_version"] for p in HOOKS}
    # the three rules: no modes / reconcile / prefix caching decides; float16 and float32 hooks
    rules = {era_of_release(r).mamba_cache_mode_rule for r in releases}
    dtypes = {era_of_release(r).nemotron_h_ssm_cache_dtype for r in releases}
    assert len(releases) >= 4 and {"reconcile", "prefix_caching"} <= rules and {"float16", "float32"} <= dtypes
