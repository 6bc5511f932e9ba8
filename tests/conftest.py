"""Test-wide settings: no on-disk config cache unless a test sets its own directory, so every
test reads configs through transformers exactly as a first run does."""

import os
import sys
from pathlib import Path

os.environ.setdefault("KVPLAN_NO_CACHE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/factories.py

import pytest  # noqa: E402


@pytest.fixture
def fixed_profile_terms(monkeypatch):
    """The profile's estimated terms as kvplan's fixed rule had them (the sampler pass as two fp32 copies of the
    logits, no hidden states held beside it; non-torch 256 MiB on one GPU, 768 MiB on several, no calibration),
    for tests of a *sizing* rule whose hand derivations start from those terms (tests/test_extensible_kv_cache.py).
    The derived and calibrated terms themselves are tested in tests/test_hardware.py and test_profile_terms.py."""
    from kvplan.budget import estimate
    from kvplan.budget.weights import widest_intermediate

    def fixed(inventory, cfg, dtype_bytes, *, tp, max_num_batched_tokens, max_num_seqs, layers=None,
              last_stage=True, encoder=None, sampler_bytes=None):
        T, hidden, vocab = max_num_batched_tokens, int(cfg.get("hidden_size") or 0), int(cfg.get("vocab_size") or 0)
        forward = T * (4 * hidden + widest_intermediate(inventory, cfg, tp, layers)) * dtype_bytes
        peak = max(forward, min(max_num_seqs, T) * vocab * 4 * 2 if last_stage else 0)
        if encoder is not None:
            peak = max(encoder["forward_bytes"], encoder["cache_bytes"] + peak)
        return peak + estimate.ACTIVATION_WORKSPACE_BYTES

    monkeypatch.setattr(estimate, "estimate_activation_bytes", fixed)
    monkeypatch.setattr(estimate, "_calibration", lambda: {})
