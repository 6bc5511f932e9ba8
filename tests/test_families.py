"""The family rules as one module per family (issue 38): each module's ``FAMILY`` record holds its rules, the
architectures and model types it serves and the config keys it reads, and the family table is derived from
those records."""

from __future__ import annotations

import ast
import inspect

from kvplan.model import families as F

# the reads of a config view (HFView / WeightView) whose first argument names a config key
READS = {"int", "opt_int", "get", "check_int", "str_list", "flag"}


def _keys_read(module) -> set[str]:
    keys = set()
    for n in ast.walk(ast.parse(inspect.getsource(module))):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in READS and n.args
                and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)):
            keys.add(n.args[0].value)
        if (isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)
                and (isinstance(n.value, ast.Attribute) and n.value.attr == "raw"
                     or isinstance(n.value, ast.Name) and n.value.id == "raw")):
            keys.add(n.slice.value)
    return keys


def test_each_family_declares_the_config_keys_its_module_reads():
    assert {m.FAMILY.key: set(m.FAMILY.config_keys) for m in F.MODULES} == \
        {m.FAMILY.key: _keys_read(m) for m in F.MODULES}


def test_the_family_table_is_derived_from_the_modules():
    # one module per family, each exporting one record whose layer rule is its own
    assert len({m.FAMILY.key for m in F.MODULES}) == len(F.MODULES) == len(F.FAMILIES)
    assert all(m.FAMILY.layers.__module__ == m.__name__ for m in F.MODULES)
    # every architecture and model type names exactly the family whose module lists it
    assert F.ARCH_FAMILY == {a: f.key for f in F.FAMILIES.values() if f.key != F.GENERIC for a in f.architectures}
    assert F.GENERIC_ARCHS == frozenset(F.FAMILIES[F.GENERIC].architectures)
    assert F.MODEL_TYPE_FAMILY == {t: f.key for f in F.FAMILIES.values() for t in f.model_types}
    assert sum(len(f.architectures) for f in F.FAMILIES.values()) == len(F.ARCH_FAMILY) + len(F.GENERIC_ARCHS)
    assert F.HYBRID_FAMILIES == {"gdn", "nemotron_h", "jamba", "falcon_h1", "granite_hybrid", "zamba2", "lfm",
                                 "kimi_linear"}
    # the EAGLE heads are Llama layers (llama.py), the DeepSeek-V3.2 indexer test the DeepSeek module's
    assert {F.family_of(a, None) for a in F.EAGLE1_ARCHS | F.EAGLE3_ARCHS} == {"llama"}
    assert F.family_of("Gemma3ForConditionalGeneration", None) == "layer_types"
    assert F.family_of("NoSuchForCausalLM", "qwen3_moe") == "qwen2"
    assert F.family_of("GPT2LMHeadModel", None) == F.GENERIC
