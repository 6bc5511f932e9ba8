"""The speculative drafter's part of vLLM's profile run, per release, from the table derived from each release's code.

What the profile sees of a drafter (vLLM's V1 model runner, v1/worker/gpu_model_runner.py):

* its **weights** are loaded in ``load_model`` beside the target's (inside 'Model loading took'); an EAGLE head
  without its own ``embed_tokens`` / ``lm_head`` shares the target's (``EagleProposer._maybe_share_embeddings`` /
  ``_maybe_share_lm_head``, v1/spec_decode/eagle.py 0.19.0 lines 1322-1440; one with its own, identical to the
  target's, shares them too, a distinct one keeps its own). kvplan's drafter inventory counts them so
  (``kvplan.model.drafters``: "embedding shared with the target (vLLM shares it when the head ships none)"; an
  EAGLE-3 head's own lm_head over its draft vocabulary is counted).
* its **dummy forward**: ``_dummy_run`` calls ``self.drafter.dummy_run(num_tokens)``, the head's forward over the
  same T tokens, ``num_speculative_tokens`` times one after the other (eagle.py 0.19.0 lines 1486-1535), after the
  target's forward has returned: its peak is the head's one layer, below the target's (kvplan's forward rule on the
  target bounds it; no logits are computed there).
* the **dummy sampler pass** (``_dummy_sampler_run``, 0.11-0.33): with any speculative config it ends with a
  rejection-sampler pass over ``torch.randn(2·R, V)`` target logits (one dummy draft token per request, 0.19.0
  lines 5609-5631), whose probabilities are computed in fp32 beside them. Derived by running each release's own
  method with its own ``RejectionSampler`` on the CPU under the memory-tracking mode
  (``scripts/golden/profile_terms.py --spec-all``, tests/golden/profile_terms/spec/): the whole call's peak is
  30 B per logit (R·V) from 0.17 to 0.33 against 14 without a drafter, 36 in 0.12.0 and 40 in 0.15.1 against
  28; in 0.11.0 the sampler's sort (28 B) stays the peak. kvplan reads it here (``spec_sampler.json``, written
  by ``--spec-table``). The V2 runner (the default of 0.34) has no such pass: its ``_dummy_run`` runs the
  speculator's ``propose`` instead (v1/worker/gpu/model_runner.py 0.34.0 lines 993-1030), not derived here.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from kvplan.version import newest_at_or_before

TABLE = Path(__file__).with_name("spec_sampler.json")


@cache
def _table() -> dict:
    return json.loads(TABLE.read_text())["releases"] if TABLE.exists() else {}


def spec_sampler_row(release: str) -> tuple[dict | None, str, bool]:
    """The rejection-sampler row for ``release`` on the V1 runner: its own golden's, else the newest derived golden
    release's before it (None when none is); that release, and whether it is the release's own."""
    rows = _table()
    src = newest_at_or_before((r for r in rows if "bytes_per_logit" in rows[r]), release)
    if src is None:
        return None, "", False
    return rows[src], src, src == release


def spec_sampler_bytes(row: dict, sampler_row: dict, reqs: int, vocab: int) -> int:
    """The dummy sampler call's peak with a speculative config, for ``reqs`` dummy requests over ``vocab``: the
    golden's bytes per logit, and the Triton top-k/top-p buffer's rows as the sampler's table sizes them for the
    card's SMs (``kvplan.budget.profile.sampler_bytes`` with the golden's per-logit figure and no fixed part; the
    golden's fixed part, measured at 8 SMs, is past the SM rows and under a MiB)."""
    from kvplan.budget.profile import per_logit_key, sampler_bytes

    # on CUDA the sorts' workspace per logit differs below 128 requests (kvplan.budget.profile.per_logit_key)
    per_logit = row.get(per_logit_key(reqs), row["bytes_per_logit"])
    return sampler_bytes({**sampler_row, "fixed_bytes": 0}, reqs, vocab, per_logit=per_logit)
