"""Record which models a release gives the V2 model runner by model (0.22.0-0.28.0).

Run with the release's sources first on PYTHONPATH (``scripts/golden/release_env.sh``)::

    PYTHONPATH=$(RELEASE_BASE=.golden-venvs/rel-base scripts/golden/release_env.sh 0.23.0 | tail -1 | cut -d= -f2) \\
        .golden-venvs/rel-base/bin/python scripts/golden/v2_runner_rule.py
    # -> tests/golden/v2_runner/0.23.0.json   (rel-base5 for 0.24.0 and later)

It calls the release's own ``VllmConfig._is_default_v2_model_runner_model`` (vllm/config/vllm.py) on a
stand-in VllmConfig whose ``model_config`` carries only what that method reads (``runner_type``
"generate", ``architectures``, ``is_moe``, ``is_quantized``, ``is_hybrid``, ``is_attention_free``),
for every architecture of the release's ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES`` and a few that are on
no list, under every combination of the four traits a model can have (hybrid and attention-free not
both). It records the release's list and each answer. Nothing is written by hand; kvplan's
``runner.v2_by_model`` and ``V2_RUNNER_ARCHITECTURES`` are checked against these files
(tests/test_model_runner_rule.py).
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from types import SimpleNamespace

OUT_DIR = Path(__file__).resolve().parents[2] / "tests" / "golden" / "v2_runner"
# on no release's list: dense, MoE, hybrid and attention-free examples
OFF_LIST = ("Qwen3MoeForCausalLM", "MixtralForCausalLM", "Gemma3ForCausalLM", "NemotronHForCausalLM",
            "MambaForCausalLM")


def main() -> int:
    import vllm
    from vllm.config import vllm as vc

    listed = sorted(vc.DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES)
    rows = []
    for arch in [*listed, *OFF_LIST]:
        for moe, quant, hybrid, free in itertools.product((False, True), repeat=4):
            if hybrid and free:
                continue
            mc = SimpleNamespace(runner_type="generate", architectures=[arch], is_moe=moe, is_quantized=quant,
                                 is_hybrid=hybrid, is_attention_free=free)
            v2 = vc.VllmConfig._is_default_v2_model_runner_model(SimpleNamespace(model_config=mc))
            rows.append(dict(architecture=arch, is_moe=moe, is_quantized=quant, is_hybrid=hybrid,
                             is_attention_free=free, v2=bool(v2)))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"{vllm.__version__}.json"
    out.write_text(json.dumps(dict(vllm_version=vllm.__version__, function="VllmConfig._is_default_v2_model_runner_model",
                                   default_v2_model_runner_architectures=listed, cases=rows), indent=1) + "\n")
    print(f"{out}: {sum(r['v2'] for r in rows)} of {len(rows)} V2", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
