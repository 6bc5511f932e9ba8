"""The speculative drafter's part of vLLM's profile run, per release, from the table derived from each release's code.

What the profile sees of a drafter (vLLM's V1 model runner, v1/worker/gpu_model_runner.py):

* its **weights** are loaded in ``load_model`` beside the target's (inside 'Model loading took'); an EAGLE head
  without its own ``embed_tokens`` / ``lm_head`` shares the target's (``EagleProposer._maybe_share_embeddings`` /
  ``_maybe_share_lm_head``, v1/spec_decode/eagle.py 0.19.0 lines 1322-1440; one with its own, identical to the
  target's, shares them too, a distinct one keeps its own). kvplan's drafter inventory counts them so
  (``kvplan.model.drafters``: "embedding shared with the target (vLLM shares it when the head ships none)"; an
  EAGLE-3 head's own lm_head over its draft vocabulary is counted).
* its **dummy forward**: after the target's forward has returned, the V1 runner's ``_dummy_run`` calls
  ``self.drafter.dummy_run(num_tokens, ...)`` (gpu_model_runner.py 0.11.0 line 3167, 0.14.1 4497, 0.19.0 5521, 0.24.0
  6010, 0.27.1 6207, 0.29.0 6273, 0.32.0 5894): the head's forward over the same T tokens, ``num_speculative_tokens``
  times one after the other, each output dropped (eagle.py 0.11.0 lines 919-923, 0.14.1 1209-1214, 0.19.0
  1486-1537; ``llm_base_proposer.py`` 0.24.0 1515-1557, 0.27.1 1679-1680, 0.29.0 1652-1694, 0.32.0 1669-1670), its
  inputs the
  proposer's persistent buffers (``hidden_states`` ``[max_num_batched_tokens, draft hidden]``), while the target's
  ``hidden_states`` and, for an EAGLE-3 head fed the target's auxiliary states, the ``outputs`` tuple's aux list
  (``hidden_states, _ = outputs``: 0.24.0 line 5968, 0.29.0 6231) are still held. The V2 runner's ``_dummy_run``
  calls ``self.speculator.propose(..., dummy_run=True)`` (v1/worker/gpu/model_runner.py 0.29.0 lines 803-822, 0.34.0
  1010-1030) with the target's ``hidden_states`` and ``aux_hidden_states`` held; an EAGLE-3 head first combines the
  aux states, ``self.model.combine_hidden_states(torch.cat(aux_hidden_states, dim=-1))`` (the ``[T, k·H_target]``
  concatenation and the ``fc``'s ``[T, H]`` output; 0.29.0 ``autoregressive/speculator.py`` 248, 0.34.0
  ``target_dependent_ar/speculator.py`` 150), and keeps the combined states through the prefill, the same forward
  over T tokens (``_run_model``). The drafter's forward is measured per release on the meta device
  (``scripts/golden/profile_terms.py --drafter-all``, tests/golden/profile_terms/drafter/): the table's ``drafter``
  rows give its bytes per token over kvplan's rule (``kvplan.budget.estimate.drafter_rule_bytes_per_token``), and
  ``drafter_phase`` the phase's peak, which ``kvplan.budget.estimate`` sets beside the target's forward and the
  sampler pass.
* the **dummy sampler pass** (``_dummy_sampler_run``, 0.11-0.33): with any speculative config it ends with a
  rejection-sampler pass over ``torch.randn(2·R, V)`` target logits (one dummy draft token per request, 0.19.0
  lines 5609-5631), whose probabilities are computed in fp32 beside them. Derived by running each release's own
  method with its own ``RejectionSampler`` on the CPU under the memory-tracking mode
  (``scripts/golden/profile_terms.py --spec-all``, tests/golden/profile_terms/spec/): the whole call's peak is
  30 B per logit (R·V) from 0.17 to 0.33 against 14 without a drafter, 36 in 0.12.0 and 40 in 0.15.1 against
  28; in 0.11.0 the sampler's sort (28 B) stays the peak. kvplan reads it here (``spec_sampler.json``, written
  by ``--spec-table``). The V2 runner (the default of 0.34) has no such pass: its ``_dummy_run`` runs the
  speculator's ``propose`` instead (v1/worker/gpu/model_runner.py 0.34.0 lines 993-1030): the drafter phase above.
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



def drafter_phase(row: dict, *, runner: str, tokens: int, rule_bytes_per_token: int, aux_states: int,
                  target_hidden: int, draft_hidden: int, dtype_bytes: int, mtp: bool, end: str = "value") -> dict:
    """The drafter's part of the dummy run on the stage that runs it, beside what the target left (the caller adds
    the target's held ``[T, H]`` states, ``aux_states`` more of them, and the fused-MoE workspace where
    ``moe_held``): ``forward_bytes`` the drafter's forward over ``tokens`` (``T · rule · factor``, ``row`` the
    release's drafter factors, ``kvplan.budget.profile.drafter_factors``: ``end`` "value" the custom-op path's,
    "high" the native graph's), ``combine_bytes`` / ``combine_kept_bytes`` the V2 speculator's EAGLE-3 combination
    (its peak ``T·(k·H_target + H)·a``, the concatenation beside the ``fc``'s output, and the output it keeps
    through the prefill; 0 on the V1 runner, whose dummy run feeds the persistent ``hidden_states`` buffer
    instead). ``mtp``: an MTP layer, whose fused experts take the target's held workspace (none added)."""
    v2 = runner == "v2" and aux_states > 0
    return {"forward_bytes": round(tokens * rule_bytes_per_token * row[end]),
            "rule_bytes_per_token": rule_bytes_per_token, "factor": row[end], "aux_states": aux_states, "moe_held": not mtp,
            "combine_bytes": tokens * (aux_states * target_hidden + draft_hidden) * dtype_bytes if v2 else 0,
            "combine_kept_bytes": tokens * draft_hidden * dtype_bytes if v2 else 0,
            "basis": row["basis"], "source": row["source"], "release": row["release"]}
