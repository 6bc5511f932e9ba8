#!/usr/bin/env python3
"""Record transformers' configuration classes as kvplan reads them (``kvplan/model/config_classes.json``).

``kvplan.model.config_table`` answers a config never seen from this file instead of importing transformers
(issue 38: a first run on a config never seen <= 1.2 s). For every model type of a config in the repository
(the bundled catalog, tests/data/arch_configs, tests/data/transformers5_configs) and every sub-config class
those reach, it records from the installed transformers (torch hidden, as kvplan reads configs):

- the dataclass fields: declared type (as @strict checks it), default, field validators (``interval`` bounds);
- ``attribute_map``, the sub-configs (``sub_configs_defaults``), the names of ``__post_init__``, of the RoPE
  converter and of every ``validate_*`` class validator, the properties a config key must not name;
- ``reads``: every attribute kvplan's rules read from a configuration object, collected by running kvplan over
  those configs with the config cache on and the table and shipped views off (``run_reads``);
- ``derived``: per class, the read attributes whose value moved when another key of a real config was removed
  or changed (perturbation), with those keys: what ``kvplan.model.config_table``'s rules must restate;
- ``status``: "table" when kvplan has a rule for the class's ``__post_init__``, RoPE converter and validators, and
  ``compare`` finds no difference from transformers over every repository config of the class's types and
  ``PERTURBATIONS`` seeded perturbations of each; else "needs transformers" and why (the config is then parsed
  by transformers, as before). ``tests/test_config_table.py`` repeats the comparison with another seed.

    python scripts/config_classes.py            # write the file
    python scripts/config_classes.py --check    # exit 1 when the file differs from what it would write
"""

from __future__ import annotations

import copy
import dataclasses
import glob
import inspect
import json
import os
import random
import subprocess
import sys
import tempfile
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "kvplan" / "model" / "config_classes.json"
CORPUS = ("configs", "tests/data/arch_configs", "tests/data/transformers5_configs")
PERTURBATIONS = 60  # per repository config, seeded


def corpus_configs(extra: tuple[str, ...] = ()) -> list[tuple[str, dict]]:
    """Every config.json-like file (a JSON object with a ``model_type``) under the corpus folders."""
    found = []
    for folder in (*CORPUS, *extra):
        base = folder if os.path.isabs(folder) else str(ROOT / folder)
        for path in sorted(glob.glob(os.path.join(base, "**", "*.json"), recursive=True)):
            try:
                with open(path, encoding="utf-8") as f:
                    raw = json.load(f)
            except (OSError, ValueError):
                continue
            if isinstance(raw, dict) and isinstance(raw.get("model_type"), str):
                found.append((os.path.relpath(path, ROOT), raw))
    return found


READS = """
import glob, sys
from kvplan.errors import KvplanError
from kvplan.model import ServingOptions, build_model_layout
from kvplan.usecases.scenario import run_scenario, scenario_from
from scripts.catalog_resolved import run_catalog
run_catalog()
for p in sorted(p for d in ("tests/data/arch_configs", "tests/data/transformers5_configs")
                for p in glob.glob(d + "/**/config.json", recursive=True)):
    for run in (lambda: build_model_layout(p, None, ServingOptions()),
                lambda: run_scenario(scenario_from(p, {"gpu": "H100-80GB"}), fixes=False)):
        try:
            run()
        except KvplanError:
            pass
"""


def run_reads() -> list[str]:
    """Every attribute kvplan read from a configuration object over the corpus (the config cache's entries:
    answered, missing and refused reads, top level and text config)."""
    cache = Path(tempfile.mkdtemp(prefix="kvplan-reads-"))
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(cache), "KVPLAN_NO_SHIPPED_CONFIGS": "1",
           "KVPLAN_NO_CONFIG_TABLE": "1", "PYTHONPATH": str(ROOT)}
    env.pop("KVPLAN_NO_CACHE", None)
    subprocess.run([sys.executable, "-c", READS], check=True, env=env, cwd=ROOT, capture_output=True)
    keys: set[str] = set()
    for path in cache.glob("*/*.json"):
        entry = json.loads(path.read_text())
        parts = [entry] + ([entry["text"]] if isinstance(entry.get("text"), dict) else [])
        for part in parts:
            keys |= set(part["attrs"]) | set(part["missing"]) | set(part["errors"])
    return sorted(keys)


# ---- transformers, torch hidden ----

def transformers_env():
    """(CONFIG_MAPPING, PreTrainedConfig, the base module) with torch hidden as kvplan.model.hfconfig hides it."""
    from kvplan.model.hfconfig import _torch_hidden

    with _torch_hidden():
        from transformers import CONFIG_MAPPING, PreTrainedConfig
        from transformers import configuration_utils
    return CONFIG_MAPPING, PreTrainedConfig, configuration_utils


def encode_type(tp) -> object:
    """A field annotation as kvplan.model.config_table.accepts reads it."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is typing.Any or isinstance(tp, (str, typing.ForwardRef)):
        return "any"  # @strict does not check these (huggingface_hub/dataclasses.py 465, 473-474)
    if tp is None or tp is type(None):
        return "null"
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return {"any_of": [encode_type(a) for a in args]}
    if origin is typing.Literal:
        return {"literal": list(args)}
    if origin is list or tp is list:
        return {"list": encode_type(args[0]) if args else "any"}
    if origin is dict or tp is dict:
        return {"dict": [encode_type(args[0]), encode_type(args[1])] if args else None}
    if tp in (int, float, bool, str):
        return tp.__name__
    return {"class": getattr(tp, "__name__", str(tp))}  # never vouched for


def _plain(value) -> bool:
    try:
        return json.loads(json.dumps(value)) == value
    except (TypeError, ValueError):
        return False


def field_record(f) -> dict:
    rec: dict = {"type": encode_type(f.type)}
    if f.default is not dataclasses.MISSING:
        default = f.default
    elif f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
    else:
        default = dataclasses.MISSING
    if default is not dataclasses.MISSING and _plain(default):
        rec["default"] = default
    validators = f.metadata.get("validator")
    if validators is not None:
        out = []
        for v in validators if isinstance(validators, list) else [validators]:
            cells = dict(zip(v.__code__.co_freevars, (c.cell_contents for c in v.__closure__ or ())))
            if v.__qualname__ == "interval.<locals>._inner":
                out.append({"kind": "interval", **{k: cells[k] for k in ("min", "max", "exclude_min", "exclude_max")}})
            else:
                out.append({"kind": v.__qualname__})
        rec["validators"] = out
    return rec


def class_record(cls, reads: list[str], PreTrainedConfig) -> dict:
    fields = {f.name: field_record(f) for f in dataclasses.fields(cls)}
    subs = {}
    for key, spec in (getattr(cls, "sub_configs_defaults", None) or {}).items():
        fixed = issubclass(spec.config_class, PreTrainedConfig)
        subs[key] = {"class": spec.config_class.__name__ if fixed else None, "model_type": spec.model_type,
                     "optional": bool(spec.optional)}
        if spec.init_kwargs:
            subs[key]["init_kwargs"] = "unsupported"
    properties = sorted(n for n in dir(cls) if not n.startswith("__") and n not in fields
                        and isinstance(inspect.getattr_static(cls, n), property))
    class_values, class_names = {}, []
    for key in reads:
        target = cls.attribute_map.get(key, key)
        if target in fields or not hasattr(cls, target):
            continue
        value = inspect.getattr_static(cls, target)
        if _plain(value) and not isinstance(value, property):
            class_values[target] = value
        else:
            class_names.append(target)
    has_rope = "rope_parameters" in fields
    source = inspect.getsourcefile(cls) or ""
    return {
        "source": source.split("site-packages/")[-1],
        "fields": fields,
        "attribute_map": dict(cls.attribute_map),
        "sub_configs": subs,
        "post_init": cls.__post_init__.__qualname__,
        "rope_converter": cls.convert_rope_params_to_dict.__qualname__ if has_rope else None,
        "has_rope_parameters": has_rope,
        "default_rope_type": getattr(cls, "default_rope_type", "default"),
        "validators": sorted(v.__qualname__ for v in cls.__class_validators__),
        "properties": properties,
        "class_values": class_values,
        "class_names": sorted(class_names),
    }


def static_gaps(name: str, record: dict) -> list[str]:
    """What kvplan.model.config_table has no rule for in this class."""
    from kvplan.model import config_table as ct

    gaps = []
    if record["post_init"] not in ct.POST_INIT:
        gaps.append(f"no kvplan rule for {record['post_init']}")
    if record["has_rope_parameters"] and record["rope_converter"] not in ct.ROPE:
        gaps.append(f"no kvplan rule for {record['rope_converter']}")
    gaps += [f"no kvplan rule for {v}" for v in record["validators"] if v not in ct.VALIDATORS]
    for field, spec in record["fields"].items():
        for v in spec.get("validators", ()):
            if v["kind"] != "interval":
                gaps.append(f"no kvplan rule for field {field}'s validator {v['kind']}")
    for key, spec in record["sub_configs"].items():
        if spec.get("init_kwargs"):
            gaps.append(f"sub-config {key} has init kwargs")
    return gaps


def rope_required_keys(CONFIG_MAPPING) -> dict[str, list[str]]:
    """Each RoPE type's required keys, as transformers' own validation function reports them missing from a
    dict that holds only ``rope_type`` (modeling_rope_utils.py 1150-1170)."""
    import ast

    from kvplan.model.hfconfig import quiet_transformers

    with quiet_transformers():
        probe = CONFIG_MAPPING["llama"]()
    out = {}
    for name in sorted(dir(probe)):
        if not (name.startswith("_validate_") and name.endswith("_rope_parameters")):
            continue
        rope_type = name[len("_validate_"):-len("_rope_parameters")]
        try:
            with quiet_transformers():
                getattr(probe, name)({"rope_type": rope_type}, ignore_keys=None)
            missing: set = set()
        except KeyError as e:
            text = str(e.args[0])
            missing = ast.literal_eval(text[text.index("{"):])
        except Exception:
            continue
        out[rope_type] = sorted(missing | {"rope_type"})
    return out


# ---- the comparison (also tests/test_config_table.py's) ----

def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def build_real(raw: dict):
    """transformers' object for ``raw`` (vLLM's model-type aliases applied), or None when it rejects it."""
    from kvplan.model.hfconfig import MODEL_TYPE_ALIASES, _torch_hidden, config_class, quiet_transformers, \
        without_remote_code

    with _torch_hidden():
        cls = config_class(MODEL_TYPE_ALIASES.get(raw["model_type"], raw["model_type"]))
        try:
            with quiet_transformers():
                return cls(**copy.deepcopy(without_remote_code(raw)))
        except Exception:
            return None


def _compare_part(part: dict, obj, where: str) -> list[str]:
    out = []
    for key, value in part["attrs"].items():
        try:
            real = json.loads(json.dumps(getattr(obj, key)))
        except Exception as e:
            out.append(f"{where}{key}: table {value!r}, transformers raises {type(e).__name__}")
            continue
        if not _same(real, value):
            out.append(f"{where}{key}: table {value!r}, transformers {real!r}")
    for key in part["missing"]:
        try:
            present = hasattr(obj, key)
        except Exception as e:
            out.append(f"{where}{key}: table missing, transformers raises {type(e).__name__}")
            continue
        if present:
            out.append(f"{where}{key}: table missing, transformers {getattr(obj, key)!r}")
    return out


def compare(raw: dict) -> tuple[str, list[str]]:
    """("table" | "fallback" | "rejected", differences) for one config: the table's entry against transformers'
    object, every recorded read (answered or missing), top level and text config."""
    from kvplan.model import config_table
    from kvplan.model.hfconfig import MODEL_TYPE_ALIASES, torch_stays_hidden

    entry = config_table.entry_for(raw, MODEL_TYPE_ALIASES.get(raw["model_type"], raw["model_type"]),
                                   torch_hidden=torch_stays_hidden())
    obj = build_real(raw)
    if entry is None:
        return ("fallback" if obj is not None else "rejected"), []
    if obj is None:
        return "table", ["the table answers a config transformers rejects"]
    out = _compare_part(entry, obj, "")
    try:
        text = obj.get_text_config()
    except Exception as e:
        return "table", out + [f"get_text_config raises {type(e).__name__}"]
    if entry["text"] == "self":
        if text is not obj:
            out.append("text: table self, transformers a sub-config")
    else:
        if text is obj:
            out.append("text: table a sub-config, transformers self")
        else:
            out += _compare_part(entry["text"], text, "text_config.")
    return "table", out


_VALUES = [None, 0, 1, 2, 3, 5, 7, 8, 64, 96, 128, 4096, -1, True, False, "x", 1.5, 0.5, [], {},
           ["full_attention"], ["attention"], {"rope_type": "linear", "factor": 2.0},
           {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
           {"rope_type": "llama3"}, {"type": "dynamic", "factor": 2.0}]
_KEYS = ["head_dim", "num_key_value_heads", "sliding_window", "sliding_window_pattern", "use_sliding_window",
         "max_window_layers", "use_bidirectional_attention", "layer_types", "rope_scaling", "rope_parameters",
         "rope_theta", "rope_local_base_freq", "torch_dtype", "num_hidden_layers", "num_attention_heads",
         "hidden_size", "attention_chunk_size", "tie_word_embeddings", "initializer_range", "num_experts",
         "text_config", "vision_config", "decoder", "mlp_layer_types", "embed_dim", "num_heads"]


def _vary(value, rng: random.Random):
    if isinstance(value, bool):
        return rng.choice([not value, None, 0, 1])
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, value * 2, value // 2, 0, None, str(value), True, float(value),
                           value * 3 // 2, 7])
    if isinstance(value, float):
        return rng.choice([value * 2, int(value), None, -value, 2.0])
    if isinstance(value, str):
        return rng.choice(["x", None, value + "_", 1])
    if isinstance(value, list):
        return rng.choice([value[:-1], value + value[:1], [], None, value[1:] + value[:1],
                           ["attention" if v == "full_attention" else v for v in value]])
    if isinstance(value, dict):
        if value and rng.random() < 0.5:
            inner = dict(value)
            k = rng.choice(sorted(inner))
            if rng.random() < 0.5:
                del inner[k]
            else:
                inner[k] = _vary(inner[k], rng)
            return inner
        return copy.deepcopy(rng.choice([{}, None, 1]))
    return copy.deepcopy(rng.choice(_VALUES))


def perturb(raw: dict, rng: random.Random) -> dict:
    """``raw`` with one to three changes (a key removed, a value changed, a key added), anywhere in the top level,
    ``text_config`` or ``vision_config``."""
    out = copy.deepcopy(raw)
    for _ in range(rng.randint(1, 3)):
        parts = [out] + [out[k] for k in ("text_config", "vision_config") if isinstance(out.get(k), dict)]
        part = rng.choice(parts)
        op = rng.random()
        keys = sorted(k for k in part if k != "model_type" or part is not out)
        if op < 0.3 and keys:
            del part[rng.choice(keys)]
        elif op < 0.7 and keys:
            k = rng.choice(keys)
            part[k] = _vary(part[k], rng)
        else:
            part[rng.choice(_KEYS)] = copy.deepcopy(rng.choice(_VALUES))
    return out


def check_corpus(configs: list[tuple[str, dict]], perturbations: int, seed: int) -> dict:
    """``compare`` over each config and its seeded perturbations: differences by class, and how many configs the
    table answered, fell back on, or saw rejected."""
    from kvplan.model import config_table
    from kvplan.model.hfconfig import MODEL_TYPE_ALIASES

    t = config_table.table()
    counts = {"table": 0, "fallback": 0, "rejected": 0}
    diffs: dict[str, list[str]] = {}
    for i, (path, raw) in enumerate(configs):
        rng = random.Random(f"{seed}:{path}")
        mt = MODEL_TYPE_ALIASES.get(raw["model_type"], raw["model_type"])
        cls = t.get("types", {}).get(mt)
        if cls is None or t["classes"][cls]["status"] != "table":
            continue
        for j in range(perturbations + 1):
            variant = raw if j == 0 else perturb(raw, rng)
            if not isinstance(variant.get("model_type"), str):
                continue
            outcome, found = compare(variant)
            counts[outcome] += 1
            if found:
                diffs.setdefault(cls, []).append(f"{path} #{j}: {found[0]}")
    return {"counts": counts, "diffs": diffs}


def _shown(obj, key: str) -> str:
    try:
        return json.dumps(getattr(obj, key, None), sort_keys=True, default=str)
    except Exception as e:
        return f"raises {type(e).__name__}"


def derived(records: dict, configs: list[tuple[str, dict]], reads: list[str], CONFIG_MAPPING) -> dict:
    """Per class, the read attributes that moved when another key of a real config was removed or changed, and
    those keys (the class derives them; kvplan.model.config_table's rules restate each)."""
    from kvplan.model.hfconfig import MODEL_TYPE_ALIASES, _torch_hidden, quiet_transformers, without_remote_code

    out: dict[str, dict[str, set]] = {}
    rng = random.Random(0)
    for _, raw in configs:
        parts = [(MODEL_TYPE_ALIASES.get(raw["model_type"], raw["model_type"]), raw)]
        if isinstance(raw.get("text_config"), dict):
            parts.append((None, raw["text_config"]))
        for mt, part in parts:
            with _torch_hidden():
                if mt is None:
                    top = build_real(raw)
                    if top is None or top.get_text_config() is top:
                        continue
                    cls = type(top.get_text_config())
                else:
                    cls = CONFIG_MAPPING[mt] if mt in CONFIG_MAPPING else None
                if cls is None or cls.__name__ not in records:
                    continue

                def build(d):
                    try:
                        with quiet_transformers():
                            return cls(**copy.deepcopy(without_remote_code(d)))
                    except Exception:
                        return None

                base = build(part)
                if base is None:
                    continue
                seen = out.setdefault(cls.__name__, {})
                watched = [k for k in reads if k in records[cls.__name__]["fields"]]
                before = {k: _shown(base, k) for k in watched}
                for key in sorted(part):
                    for variant in ("remove", "vary"):
                        d = dict(part)
                        if variant == "remove":
                            del d[key]
                        else:
                            d[key] = _vary(d[key], rng)
                        obj = build(d)
                        if obj is None:
                            continue
                        for k in watched:
                            if k == key:
                                continue
                            if _shown(obj, k) != before[k]:
                                seen.setdefault(k, set()).add(key)
    return {c: {k: sorted(v) for k, v in sorted(attrs.items())} for c, attrs in sorted(out.items())}


def generate() -> dict:
    from kvplan.installed import version
    from kvplan.model import config_table
    from kvplan.model.hfconfig import MODEL_TYPE_ALIASES, VLLM_OWN_CONFIGS

    reads = run_reads()
    CONFIG_MAPPING, PreTrainedConfig, cu = transformers_env()
    from transformers.generation.configuration_utils import GenerationConfig

    configs = corpus_configs()
    types, records = {}, {}
    pending = sorted({MODEL_TYPE_ALIASES.get(r["model_type"], r["model_type"]) for _, r in configs})
    pending = [mt for mt in pending if mt not in VLLM_OWN_CONFIGS]
    while pending:
        mt = pending.pop(0)
        if mt in types or mt not in CONFIG_MAPPING:
            continue
        cls = CONFIG_MAPPING[mt]
        types[mt] = cls.__name__
        if cls.__name__ not in records:
            records[cls.__name__] = class_record(cls, reads, PreTrainedConfig)
            for spec in records[cls.__name__]["sub_configs"].values():
                pending.append(spec["model_type"])
    doc: dict[str, typing.Any] = {
        "transformers": version("transformers"),
        "generator": "scripts/config_classes.py",
        "reads": reads,
        "generation_keys": sorted(GenerationConfig._get_default_generation_params()),
        "legacy_layer_types": dict(sorted(cu._LEGACY_LAYER_TYPE_REMAP.items())),
        "allowed_attn_layer_types": list(cu.ALLOWED_ATTN_LAYER_TYPES),
        "allowed_mlp_layer_types": list(cu.ALLOWED_MLP_LAYER_TYPES),
        "rope_required_keys": rope_required_keys(CONFIG_MAPPING),
        "types": dict(sorted(types.items())),
        "classes": dict(sorted(records.items())),
    }
    # statuses: the static gaps first, then a sub-config's gap is its parent's, then the comparison demotes a
    # class until none differs
    for name, rec in records.items():
        gaps = static_gaps(name, rec)
        rec["status"], rec["why"] = ("needs transformers", "; ".join(gaps)) if gaps else ("table", "")
    changed = True
    while changed:
        changed = False
        for name, rec in records.items():
            if rec["status"] != "table":
                continue
            for key, spec in rec["sub_configs"].items():
                sub = spec["class"] or types.get(spec["model_type"])
                if sub is None or records.get(sub, {}).get("status") != "table":
                    rec["status"], rec["why"], changed = "needs transformers", f"sub-config {key} ({sub})", True
    while True:
        config_table._TABLE = doc
        result = check_corpus(configs, PERTURBATIONS, seed=0)
        if not result["diffs"]:
            break
        for name, found in result["diffs"].items():
            records[name]["status"], records[name]["why"] = "needs transformers", f"differs: {found[0]}"
    doc["derived"] = derived(records, configs, reads, CONFIG_MAPPING)
    doc["checked"] = result["counts"]
    for name, rec in records.items():  # a class transformers answers for needs no more than why
        if rec["status"] != "table":
            doc["classes"][name] = {k: rec[k] for k in ("status", "why", "source")}
    return doc


def render(doc: dict) -> str:
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def main(argv: list[str]) -> int:
    from kvplan.model.hfconfig import _torch_hidden

    with _torch_hidden():  # transformers loads each configuration module on first use: torch stays hidden
        doc = generate()
    text = render(doc)
    if "--check" in argv:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        if not same:
            print(f"{OUT.relative_to(ROOT)} is stale: run python scripts/config_classes.py")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    table = sorted(mt for mt, c in doc["types"].items() if doc["classes"][c]["status"] == "table")
    print(f"{OUT.relative_to(ROOT)}: {len(doc['types'])} model types, answered from the table: {', '.join(table)} "
          f"(transformers {doc['transformers']}; checked {doc['checked']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
