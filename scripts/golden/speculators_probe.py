#!/usr/bin/env python3
"""Record how vLLM releases read the bundled speculators-format configs (CPU, no model loaded).

Runs inside a vLLM environment (imports nothing from kvplan) on every ``configs/RedHatAI/*/config.json``:
``SpeculatorsConfig.extract_transformers_pre_trained_config`` (the draft config vLLM builds),
``n_predict`` of the resulting ``SpeculatorsConfig`` (what SpeculativeConfig would take as the default
num_speculative_tokens of a drafter) and ``extract_vllm_speculative_config`` (what serving the
checkpoint itself sets). tests/test_speculators.py compares kvplan's reading with the record::

    for v in 0.18.0 0.33.0 0.34.0; do
        .golden-venvs/vllm-$v/bin/python scripts/golden/speculators_probe.py configs > /tmp/$v.json
    done
    python scripts/golden/speculators_probe.py --merge /tmp/0.18.0.json /tmp/0.33.0.json /tmp/0.34.0.json \\
        > tests/data/speculators_vllm.json
"""

from __future__ import annotations

import glob
import json
import sys


def probe(configs_dir: str) -> dict:
    import vllm
    from vllm.transformers_utils.configs.speculators.base import SpeculatorsConfig

    out = {"vllm_version": vllm.__version__, "configs": {}}
    for path in sorted(glob.glob(f"{configs_dir}/RedHatAI/*/config.json")):
        with open(path) as f:
            raw = json.load(f)
        pre = SpeculatorsConfig.extract_transformers_pre_trained_config(json.loads(json.dumps(raw)))
        obj = SpeculatorsConfig(**json.loads(json.dumps(pre)))
        out["configs"]["/".join(path.split("/")[-3:-1])] = {
            "pre_trained_config": pre,
            "n_predict": getattr(obj, "n_predict", None),
            "speculative_config": SpeculatorsConfig.extract_vllm_speculative_config(json.loads(json.dumps(raw))),
        }
    return out


def main() -> None:
    if sys.argv[1] == "--merge":
        runs = [json.load(open(p)) for p in sys.argv[2:]]
        print(json.dumps({r["vllm_version"]: r["configs"] for r in runs}, indent=1, sort_keys=True))
    else:
        print(json.dumps(probe(sys.argv[1]), sort_keys=True))


if __name__ == "__main__":
    main()
