#!/usr/bin/env python3
"""Write the JSON Schemas of every command's output to docs/schema/<command>.json.

One envelope (kvplan.results.envelope) shared by all commands, then each command's body:
the keys it always has and their types. The outcome, the model sources and the policy are read
from their result records (``record``: field names and annotated types), so a field added to
one reaches its schema. Bodies may grow keys (additionalProperties), the
envelope and the outcome may not. tests/test_schemas.py checks that the files are what this
script writes and validates every command's output against them.

    python scripts/make_schemas.py          # rewrite docs/schema/
    python scripts/make_schemas.py --check  # exit 1 if a file differs
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the kvplan of this checkout

from kvplan.results import Outcome  # noqa: E402
from kvplan.results.data import PolicyRecord  # noqa: E402
from kvplan.results.envelope import Source  # noqa: E402

OUT = ROOT / "docs" / "schema"

INT = {"type": "integer"}
NUM = {"type": "number"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}
OBJ = {"type": "object"}
ARR = {"type": "array"}


def nullable(s: dict) -> dict:
    t = s["type"]
    return {**s, "type": [t, "null"] if isinstance(t, str) else [*t, "null"]}


def obj(required: dict, *, closed: bool = False) -> dict:
    return {"type": "object", "required": list(required), "properties": required, "additionalProperties": not closed}


def arr(items: dict) -> dict:
    return {"type": "array", "items": items}


_SCALARS = {bool: BOOL, int: INT, float: NUM, str: STR}


def field_schema(tp) -> dict:
    """The schema of one annotated result field: ``bool``/``int``/``float``/``str``, ``X | None``,
    ``tuple[X, ...]`` (a list)."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if tp in _SCALARS:
        return _SCALARS[tp]
    if typing.get_origin(tp) is tuple:
        return arr(field_schema(args[0]))
    if type(None) in typing.get_args(tp) and len(args) == 1:
        return nullable(field_schema(args[0]))
    raise TypeError(f"no schema for {tp!r}")


def record(cls, names: tuple[str, ...] | None = None, *, closed: bool = False) -> dict:
    """An object schema read from a result record (``kvplan.results``): every field, or ``names``
    (the keys the published schema requires, in its order), typed by the record's annotations."""
    hints = typing.get_type_hints(cls)
    names = names or tuple(f.name for f in dataclasses.fields(cls))
    return obj({n: field_schema(hints[n]) for n in names}, closed=closed)


OUTCOME = record(Outcome, closed=True)

SOURCE = nullable(record(Source, closed=True))
POLICY = nullable(record(PolicyRecord, ("name", "vllm_releases", "threshold", "is_proposal")))
OPTION_VALUE = obj({"value": {}, "given": BOOL}, closed=True)

MODEL_INFO = obj({"id": STR, "source": STR, "architecture": nullable(STR), "family": nullable(STR),
                  "num_hidden_layers": nullable(INT), "dtype": nullable(STR)})
SERVING = obj({"block_size": nullable(INT), "kv_cache_dtype": STR, "dtype": STR, "tensor_parallel_size": INT,
               "pipeline_parallel_size": INT})
SPECULATIVE = obj({"method": nullable(STR), "num_speculative_tokens": nullable(INT)})
ERA = record(PolicyRecord, ("name", "threshold", "vllm_releases", "is_proposal"))
LAYER = obj({"index": INT, "name": STR, "source": STR, "kind": STR, "block_size": INT, "page_size_bytes": INT})


# `simulate --cross-check` / `cross_check: true`: the comparison with a real vLLM (kvplan.verify.crosscheck)
CROSS_CHECK = obj({
    "ran": BOOL, "agree": nullable(BOOL), "reason": nullable(STR), "vllm_version": nullable(STR),
    "python": nullable(STR), "fields_compared": INT, "fields_agree": INT,
    "differences": arr(obj({"field": STR, "kvplan": {}, "vllm": {}}, closed=True)),
    "scope": obj({"verified": nullable(STR), "not_verified": nullable(STR), "notes": arr(STR)}, closed=True),
    "seconds": NUM, "cached": BOOL,
}, closed=True)

# body keys present only when asked for (not required)
OPTIONAL = {"simulate": {"cross_check": CROSS_CHECK}}


def envelope(command: str, body: dict) -> dict:
    head = {
        "schema_version": {"const": 2},
        "kvplan_version": STR,
        "command": {"const": command},
        "inputs": obj({"model": SOURCE, "drafter": SOURCE, "policy": POLICY,
                       "options": {"type": "object", "additionalProperties": OPTION_VALUE}}, closed=True),
        "outcome": OUTCOME,
    }
    props = {**head, **body, "warnings": arr(STR)}
    optional = OPTIONAL.get(command, {})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"https://kvplan.dev/schema/{command}.json",
        "title": f"kvplan {command} --format json",
        "type": "object",
        "required": list(props),
        "properties": {**props, **optional},
        "additionalProperties": True,
    }


PLAN_BODY = {
    "engine": {"const": "vllm"},
    "policy": ERA,
    "model": MODEL_INFO,
    "drafter": nullable(MODEL_INFO),
    "speculative": SPECULATIVE,
    "serving": SERVING,
    "scheduler": obj({"max_model_len": INT, "max_num_batched_tokens": INT, "max_num_seqs": INT,
                      # null where the engine stopped before deciding (a configuration refusal)
                      "async_scheduling": nullable(BOOL), "model_runner": nullable(STR),
                      "decode_context_parallel_size": INT}),
    "hybrid_kv_cache_manager": obj({"enabled": nullable(BOOL), "reasons_disabled": arr(STR)}),
    "grouping": nullable(obj({"path": STR, "group_size": INT, "num_groups": INT, "num_padding_layers": INT,
                              "padding_waste_pct": NUM})),
    "groups": arr(obj({"index": INT, "kind": STR, "block_size": INT, "page_size_bytes": INT, "num_layers": INT,
                       "layers": arr(STR)})),
    "tensors": arr(obj({"index": INT, "size_bytes": INT, "shared_by": arr(STR)})),
    "memory": obj({"available_bytes": INT, "num_blocks": INT, "page_size_bytes": nullable(INT), "kv_tokens": INT,
                   "max_concurrency": NUM, "steady_state_concurrency": NUM, "padding_waste_bytes": INT}),
    "workers": arr(obj({"rank": INT, "num_blocks": INT})),
    "fixes": arr(obj({"option": STR, "flag": STR, "verified": BOOL, "max_concurrency": NUM,
                      "steady_state_concurrency": NUM})),
    "logs": arr(STR),
    "checks_failed": arr(STR),
}

BODIES = {
    "inspect": {
        "model": MODEL_INFO, "drafter": nullable(MODEL_INFO), "speculative": SPECULATIVE, "serving": SERVING,
        "num_layers": INT, "layers": arr(LAYER), "summary": arr(OBJ), "kv_bytes_per_token": INT,
        "state_bytes_per_request": INT, "ranks": arr(obj({"rank": INT, "num_layers": INT, "layers": arr(STR)})),
    },
    "simulate": PLAN_BODY,
    "vllm": {
        **PLAN_BODY,
        "serve": obj({
            "form": {"enum": ["vllm serve", "api_server", "docker"]}, "line": nullable(STR), "image": nullable(STR),
            "model": STR, "release": STR, "release_source": STR,
            "flag_list": obj({"release": STR, "source": STR, "note": nullable(STR)}),
            "flags": arr(obj({"flag": STR, "value": {}, "dest": STR,
                              "effect": {"enum": ["applied", "no effect", "estimate"]},
                              "applied_as": nullable(STR), "note": nullable(STR), "from": STR})),
            "environment": {"type": "object", "additionalProperties": STR}, "environment_applied": BOOL,
            "environment_ignored": arr(STR),
        }),
    },
    "sweep": {
        "model": MODEL_INFO, "drafter": nullable(MODEL_INFO), "policy": ERA,
        "rows": arr(obj({"threshold": NUM, "group_size": INT, "num_groups": INT, "num_padding_layers": INT,
                         "padding_waste_pct": NUM, "num_blocks": INT, "kv_tokens": INT, "max_concurrency": NUM,
                         "outcome": OUTCOME})),
        "critical_thresholds": arr(OBJ),
    },
    "compare": {
        "model": MODEL_INFO, "drafter": nullable(MODEL_INFO), "speculative": SPECULATIVE, "serving": SERVING,
        "workload": OBJ, "lower_bound": OBJ,
        "engines": arr(obj({"engine": STR, "name": STR, "outcome": OUTCOME, "max_concurrency": NUM,
                            "steady_state_concurrency": NUM})),
        "advice": OBJ, "budget": nullable(OBJ),
    },
    "fit": {
        "engine": {"const": "vllm"}, "policy": ERA, "model": MODEL_INFO, "drafter": nullable(MODEL_INFO),
        "budget": nullable(OBJ), "max_model_len": nullable(OBJ), "min_gpu_memory_utilization": nullable(OBJ),
        "max_context_len_for_concurrency": nullable(OBJ),
        "gpus": nullable(obj({"rows": arr(obj({"gpu": STR, "tensor_parallel_size": INT, "outcome": OUTCOME,
                                                 "enough": BOOL}))})),
        "estimated": BOOL,
    },
    "gpus": {"gpus": arr(obj({"name": STR, "memory_bytes": INT, "aliases": arr(STR),
                              "compute_capability": nullable(arr(INT)), "platform": {"enum": ["cuda", "rocm"]}}))},
    "check": {
        "files": arr(STR), "passed": BOOL,
        "summary": obj({"num_deployments": INT, "num_passed": INT, "num_failed": INT, "num_errors": INT}),
        "deployments": arr(obj({"name": STR, "file": STR, "line": INT, "status": {"enum": ["pass", "fail", "error"]},
                                "outcome": OUTCOME, "expectations": arr(OBJ),
                                "cross_check": nullable(CROSS_CHECK)})),
    },
    "models": {"models": arr(obj({"id": STR}))},
    "policies": {
        "default": obj({"policy": STR, "era": STR, "installed": BOOL}), "installed_vllm": nullable(STR),
        "newest_checked": STR, "releases": arr(obj({"version": STR, "era": STR, "golden": BOOL})),
        "eras": arr(obj({"name": STR, "first_release": STR, "releases": arr(STR), "description": STR,
                         "changes": OBJ, "decisions": OBJ})),
        "aliases": OBJ, "proposals": arr(obj({"name": STR, "description": STR})),
    },
    "explain-log": {
        "log": obj({"source": STR, "lines": INT, "records": INT, "facts": INT}),
        "recovered": OBJ,
        "facts": arr(obj({"kind": STR, "line": INT, "text": STR})),
        "missing": arr(STR),
        "rebuild": obj({"model": nullable(STR), "policy": nullable(STR), "options": OBJ,
                        "budget": nullable(obj({"kv_cache_memory_bytes": INT, "low_bytes": INT, "high_bytes": INT,
                                                "exact": BOOL, "source": STR})),
                        "status": STR, "detail": STR, "assumed": arr(STR), "ignored_args": arr(STR), "notes": arr(STR)}),
        "figures": arr(obj({"figure": STR, "kind": STR, "key": nullable(STR), "line": nullable(INT), "logged": {},
                            "kvplan": {}, "kvplan_range": nullable(ARR), "meaning": nullable(STR),
                            "agrees": nullable(BOOL), "verdict": STR})),
        "verdict": STR,
        "traps": arr(obj({"trap": STR, "detail": STR})),
        "simulation": nullable(OBJ),
    },
}


def schemas() -> dict[str, str]:
    return {f"{c}.json": json.dumps(envelope(c, b), indent=2) + "\n" for c, b in BODIES.items()}


def main(argv: list[str]) -> int:
    files = schemas()
    if "--check" in argv:
        stale = [n for n, text in files.items() if not (OUT / n).exists() or (OUT / n).read_text() != text]
        if stale:
            print(f"docs/schema out of date: {', '.join(stale)} (run scripts/make_schemas.py)")
            return 1
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT / name).write_text(text)
    print(f"wrote {len(files)} schemas to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
