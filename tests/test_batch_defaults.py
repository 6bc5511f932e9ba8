"""--performance-mode throughput's doubled batch defaults: kvplan's ``SchedulerInput.batch_sizes`` (the card's
defaults, ``kvplan.budget.hardware.card_batch_defaults``, doubled before the max_model_len caps) against what each
release's own ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` left on CPU with a stand-in platform of
the card's memory and name (tests/golden/scheduler/batch_defaults.json, written by
scripts/golden/batch_defaults.py)."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from kvplan.errors import OptionError

GOLDEN = json.loads((Path(__file__).parent / "golden" / "scheduler" / "batch_defaults.json").read_text())


def _points():
    for release, points in GOLDEN["releases"].items():
        for i, p in enumerate(points):
            yield pytest.param(release, p, id=f"{release}-{i}-{p['card']}-{p['performance_mode']}")


def test_the_golden_covers_the_flag_s_releases():
    """0.16.0 (no field), 0.17.0 (the first with it), the 0.19+ large tier, 0.34.0 (the GB10 query)."""
    assert {"0.16.0", "0.17.0", "0.20.2", "0.29.0", "0.34.0"} <= set(GOLDEN["releases"])


@pytest.mark.parametrize("release,point", list(_points()))
def test_batch_defaults_match_the_release_code(release, point):
    from kvplan.budget.hardware import card_batch_defaults, gpu_card
    from kvplan.engines.vllm.prechecks import check_performance_mode
    from kvplan.engines.vllm.releases import get_era
    from kvplan.usecases.deployment import SchedulerInput

    era = get_era(f"vllm=={release}")
    if "error" in point:  # the release's own missing field: kvplan refuses the flag there
        assert point["error"] == "TypeError: no performance_mode before 0.17.0"
        with pytest.raises(OptionError, match=f"--performance-mode: vllm=={release} has no such flag"):
            check_performance_mode(SimpleNamespace(performance_mode=point["performance_mode"]), era)
        return
    card = gpu_card(point["card"], None)
    s = SchedulerInput(max_num_seqs=point["R"], max_num_batched_tokens=point["T"],
                       enable_chunked_prefill=point["chunked"], performance_mode=point["performance_mode"],
                       card_batch_defaults=card_batch_defaults(card, large_tier=era.large_batch_tier))
    assert s.batch_sizes(point["L"]) == (point["max_num_batched_tokens"], point["max_num_seqs"])
