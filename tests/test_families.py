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
                                 "kimi_linear", "zaya"}
    # the EAGLE heads are Llama layers (llama.py), the DeepSeek-V3.2 indexer test the DeepSeek module's
    assert {F.family_of(a, None) for a in F.EAGLE1_ARCHS | F.EAGLE3_ARCHS} == {"llama"}
    assert F.family_of("Gemma3ForConditionalGeneration", None) == "layer_types"
    assert F.family_of("NoSuchForCausalLM", "qwen3_moe") == "qwen2"
    assert F.family_of("GPT2LMHeadModel", None) == F.GENERIC


def _golden(arch: str) -> dict:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parent / "golden" / "architectures" / "0.34.0" / f"{arch}.json").read_text())


def _layout(config: dict, tmp_path, **options):
    import json

    from kvplan.model import ServingOptions, build_model_layout

    (tmp_path / "config.json").write_text(json.dumps(config))
    return build_model_layout(str(tmp_path), None, ServingOptions(**options))


def test_the_families_added_for_vllm_0_34_match_its_goldens(tmp_path):
    # the five architectures vLLM 0.34.0 builds that kvplan refused (issue 35), each one module, on the configs the
    # harness built them from; page bytes per 64-token block from the goldens' spec tables:
    #   Beam: 24 sliding layers (window 4096), 4 KV x 64 (head_dim null: 2048 // 32), K+V bf16: 64·4·64·2·2 = 65,536
    #   MiniCPM3: 62 full layers of 40 KV x 96 (qk_nope 64 + qk_rope 32): 64·40·96·2·2 = 983,040
    #   HY V4: 34 dense MLA layers, latent 512 + 64: 64·576·2 = 73,728
    #   ZAYA1: per layer a CCA state ((8+2)·128, 2+2-2) + (2·128/2,) bf16 = (2,560 + 128)·2 = 5,376 B (vLLM pads it
    #   to the attention page, 65,536) and full attention 2 KV x 128: 64·2·128·2·2 = 65,536
    #   BAGEL: its llm_config's Qwen2, 32 layers of 32 KV x 128 under language_model: 64·32·128·2·2 = 1,048,576
    cases = {"BeamForCausalLM": (24, {65_536}), "MiniCPM3ForCausalLM": (62, {983_040}),
             "HYV4ForCausalLM": (34, {73_728}), "ZayaForCausalLM": (80, {5_376, 65_536}),
             "BagelForConditionalGeneration": (32, {1_048_576})}
    for arch, (n, pages) in cases.items():
        g = _golden(arch)
        d = tmp_path / arch
        d.mkdir()
        layout = _layout(g["config"], d, block_size=64)
        assert [ls.name for ls in layout.layers] == [name for name, _ in g["layers"]], arch
        assert len(layout.layers) == n
        assert {ls.spec.page_size_bytes for ls in layout.layers} == pages, arch
        assert {g["spec_table"][i]["page_size_bytes"] for _, i in g["layers"]} == pages - {5_376} | (
            {65_536} if arch == "ZayaForCausalLM" else set())


def test_hy_v4_with_sparse_layers_is_refused_not_approximated(tmp_path):
    import pytest

    from kvplan.errors import UnsupportedError

    config = dict(_golden("HYV4ForCausalLM")["config"])
    config["layer_types"] = ["indexed_attention"] * config["num_hidden_layers"]  # what transformers derives
    with pytest.raises(UnsupportedError, match="HY V4 with sparse layers"):
        _layout(config, tmp_path)
