"""The release registry: every vLLM release from 0.10.1 to 0.34.0 is a policy, mapped to the
era its wheel's code belongs to; newer releases warn, older or malformed ones are refused;
an installed vLLM is the default; docs/releases.md is generated from the registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engines.vllm import get_era
from kvplan.engines.vllm import releases as R
from kvplan.engines.vllm.eras import CHAIN, ERAS, LEGACY_NAMES
from kvplan.errors import OptionError

ROOT = Path(__file__).resolve().parents[1]

# `pip index versions vllm` (2026-12-02), 0.10.1 .. 0.34.0: 39 releases, patch releases included
PYPI = ("0.34.0, 0.33.0, 0.32.0, 0.31.0, 0.30.0, 0.29.0, 0.28.0, 0.27.1, 0.27.0, 0.26.0, 0.25.1, 0.25.0, 0.24.0, "
        "0.23.0, 0.22.1, 0.22.0, 0.21.0, 0.20.2, 0.20.1, 0.20.0, 0.19.1, 0.19.0, 0.18.1, 0.18.0, 0.17.1, 0.17.0, "
        "0.16.0, 0.15.1, 0.15.0, 0.14.1, 0.14.0, 0.13.0, 0.12.0, 0.11.2, 0.11.1, 0.11.0, 0.10.2, 0.10.1.1, 0.10.1")


def test_every_pypi_release_from_0_10_1_is_a_policy():
    pypi = PYPI.split(", ")
    assert sorted(R.VERSIONS, key=R.version_key) == sorted(pypi, key=R.version_key) and len(pypi) == 39
    for v in pypi:
        era = get_era(f"vllm=={v}")
        assert era.release == v and v in ERAS[era.name].releases and not era.warning


def test_eras_partition_the_releases_in_order():
    seen = [v for name, *_ in CHAIN for v in ERAS[name].releases]
    assert seen == list(R.VERSIONS)
    for name, first, *_ in CHAIN:  # each era starts at its first release
        assert ERAS[name].releases[0] == first


@pytest.mark.parametrize("release, era, threshold, admission", [
    # boundaries read in the wheels (scripts/golden/fingerprint.py) and run in the goldens
    ("0.11.0", "vllm-0.10", None, "per_layer"),
    ("0.11.2", "vllm-0.11.1", None, "per_layer"),   # group_size = min(...), no _max_memory_usage_bytes_from_groups
    ("0.12.0", "vllm-0.12", 1.25, "per_layer"),   # `max_num_layers < min_num_layers * 1.25`
    ("0.14.0", "vllm-0.14", 1.25, "first_group"),  # cdiv(any_spec.max_memory_usage_bytes, page)
    ("0.18.0", "vllm-0.18", 1.5, "first_group"),
    ("0.19.0", "vllm-0.19", 1.5, "summed"),        # blocks_needed = sum(cdiv(...) for group in groups)
    ("0.24.0", "vllm-0.24", 1.5, "summed"),
    ("0.34.0", "vllm-0.34", 1.5, "summed"),
])
def test_release_boundaries(release, era, threshold, admission):
    e = get_era(f"vllm=={release}")
    assert (e.name, e.threshold, e.admission) == (era, threshold, admission)


def test_legacy_names_keep_their_meaning():
    assert {k: get_era(k).threshold for k in LEGACY_NAMES} == {"vllm-min": None, "vllm-1.25": 1.25, "vllm-1.5": 1.5}
    assert "0.17.1" in get_era("vllm-1.25").releases and "0.11.2" in get_era("vllm-min").releases


def test_newer_release_warns_and_uses_the_newest_rules():
    e = get_era("vllm==0.35.2")
    assert (e.name, e.release, e.release_note) == (get_era("vllm==0.34.0").name, "0.35.2", "unchecked")
    assert e.warning == ("vLLM 0.35.2 is newer than the newest release kvplan checked (0.34.0); "
                         f"using 0.34.0's rules ({e.name})")


@pytest.mark.parametrize("policy, message", [
    ("vllm==0.9.2", "unknown vLLM release '0.9.2'; kvplan supports vllm==0.10.1 to vllm==0.34.0 "
                    "(39 releases; `kvplan policies` lists them)"),
    ("vllm==0.19.5", "unknown vLLM release '0.19.5'; kvplan supports vllm==0.10.1 to vllm==0.34.0 "
                     "(39 releases; `kvplan policies` lists them)"),
    ("vllm==latest", "malformed vLLM version 'latest' in --policy vllm==latest; kvplan supports vllm==0.10.1 to "
                     "vllm==0.34.0 (39 releases; `kvplan policies` lists them)"),
])
def test_older_or_malformed_release_is_an_error(policy, message):
    with pytest.raises(OptionError) as e:
        get_era(policy)
    assert str(e.value) == message


def test_default_is_the_newest_checked_without_vllm(monkeypatch):
    monkeypatch.setattr(R, "installed_vllm", lambda: None)
    e = get_era("vllm-latest")
    assert (e.release, e.release_note, e.warning) == ("0.34.0", "", "")


def test_default_is_the_installed_release(monkeypatch):
    monkeypatch.setattr(R, "installed_vllm", lambda: "0.24.0")
    e = get_era("vllm-latest")
    assert (e.name, e.release, e.release_note) == ("vllm-0.24", "0.24.0", "installed")
    from kvplan.results import to_data
    from kvplan.results.data import policy_label
    from kvplan.usecases.records import policy_record

    assert policy_label(to_data(policy_record(e))) == "vllm==0.24.0 (installed)"
    monkeypatch.setattr(R, "installed_vllm", lambda: "0.36.0.dev3+g1234")
    e = get_era("vllm-latest")
    assert (e.release, e.release_note) == ("0.36.0.dev3+g1234", "installed, unchecked")


def test_installed_vllm_reads_metadata_only():
    # no vLLM in kvplan's test environment: the metadata lookup answers None, nothing is imported
    import sys

    R.installed_vllm.cache_clear()
    assert R.installed_vllm() is None and "vllm" not in sys.modules


def test_docs_releases_md_is_generated_from_the_registry():
    text = (ROOT / "docs" / "releases.md").read_text()
    assert text == R.releases_markdown(), "regenerate: python -m kvplan.engines.vllm.releases > docs/releases.md"


def test_policies_command_json_is_the_library_dict():
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    out = CliRunner().invoke(ensure_registered(), ["policies", "--format", "json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.stdout)
    from kvplan.results import to_data

    lib = to_data(R.policies())
    assert {k: d[k] for k in lib} == lib
    assert d["command"] == "policies" and len(d["releases"]) == 39
    assert [e["name"] for e in d["eras"]] == [n for n, *_ in CHAIN]
    assert d["eras"][2]["changes"]["threshold"] == 1.25  # vllm-0.12 (vllm-0.11.1 before it)


def test_nemotron_h_ssm_state_follows_the_release():
    """Nemotron-H-56B (config.json without mamba_ssm_cache_dtype): conv (K-1 = 3) x (256*64 +
    2*8*256 = 20480) bf16 = 122,880 B; ssm 256 x 64 x 256 = 4,194,304 elements: float16 →
    8,388,608 B, float32 → 16,777,216 B. 0.11.2 (no hook: model dtype bf16) and 0.18.0
    (hook default float16): 8,511,488 B; 0.34.0 (hook default float32): 16,900,096 B."""
    import kvplan

    from kvplan.usecases.scenario import Scenario, run_scenario

    pages = {}
    for rel in ("0.11.2", "0.18.0", "0.34.0"):
        r = run_scenario(Scenario("nvidia/Nemotron-H-56B-Base-8K", kv_cache_memory="40GiB", policy=f"vllm=={rel}"))
        ssm = {ls.spec.dtypes[1] for ls in r.layout.layers if ls.spec.kind == "mamba"}
        pages[rel] = (r.body.mamba_alignment.mamba_page_bytes, ssm)
    assert pages == {"0.11.2": (8511488, {"bfloat16"}), "0.18.0": (8511488, {"float16"}),
                     "0.34.0": (16900096, {"float32"})}
    assert kvplan  # the package imports without vLLM


# --- Era field comments and option help agree with the era chain --------------------------------

def _era_field_comments() -> dict[str, list[str]]:
    """Each Era field's comment lines (the ``#`` lines right above it in eras.py)."""
    import re
    from pathlib import Path

    src = (Path(R.__file__).with_name("eras.py")).read_text().splitlines()
    start = next(i for i, ln in enumerate(src) if ln.startswith("class Era"))
    out, pending = {}, []
    for ln in src[start + 1:]:
        if ln and not ln.startswith(" "):
            break
        if ln.strip().startswith("#"):
            pending.append(ln.strip()[1:].strip())
            continue
        m = re.match(r"    (\w+): ", ln)
        if m:
            out[m.group(1)] = pending
        pending = []
    return out


def _chain_statement(field_name: str) -> str:
    from kvplan.engines.vllm.eras import transitions

    return "Chain: " + "; ".join(f"{v!r} from {first}" for first, v in transitions(field_name)) + "."


def test_every_era_decision_states_its_first_releases_as_the_chain_has_them():
    from kvplan.engines.vllm.eras import decision_fields

    comments = _era_field_comments()
    for f in decision_fields():
        lines = comments[f]
        i = next((k for k, ln in enumerate(lines) if ln.startswith("Chain: ")), None)
        assert i is not None, f"Era.{f}: add the comment line `# {_chain_statement(f)}`"
        stated = " ".join(ln for ln in lines[i:])
        assert stated == _chain_statement(f), f"Era.{f}: the comment says {stated!r}; the chain: {_chain_statement(f)!r}"


def test_era_comments_name_no_other_first_release():
    # "0.26+" in a field's comment must be one of that field's own boundaries in the chain
    import re

    from kvplan.engines.vllm.eras import decision_fields, transitions

    comments = _era_field_comments()
    for f in decision_fields():
        minors = {".".join(first.split(".")[:2]) for first, _ in transitions(f)}
        for claim in re.findall(r"(\d+\.\d+)\+", " ".join(comments[f])):
            assert claim in minors, f"Era.{f}: comment says {claim}+, the chain changes it at {sorted(minors)}"


def test_decision_fields_are_every_era_field_but_identity():
    from dataclasses import fields

    from kvplan.engines.vllm.eras import NOT_DECISIONS, Era

    assert set(R.DECISION_FIELDS) == {f.name for f in fields(Era)} - NOT_DECISIONS
    assert {"default_model_runner", "suffix_default_tokens"} <= set(R.DECISION_FIELDS)
    assert "| default_model_runner |" in R.releases_markdown()


def test_option_help_names_releases_from_the_chain():
    # a release named in an option's help as "X+" is a boundary of some era field
    import re

    from kvplan import options
    from kvplan.engines.vllm.eras import decision_fields, transitions

    minors = {".".join(first.split(".")[:2]) for f in decision_fields() for first, _ in transitions(f)}
    for o in options.OPTIONS.values():
        text = f"{o.help} {o.default_doc or ''}"
        for claim in re.findall(r"(\d+\.\d+)\+", text):
            assert claim in minors, f"{o.flag}: help names {claim}+, which no era boundary has"
    async_help = options.OPTIONS["async_scheduling"].help
    assert "vLLM 0.26+ reserves 2 x max_num_batched_tokens" in async_help  # in_flight_batches: True from 0.26.0


def test_the_envelope_policy_is_the_plan_policy_cut():
    """``inputs.policy`` (kvplan.usecases.envelope.policy_inputs) shows every era as the plan's ``policy``
    (kvplan.usecases.records.policy_record) does, cut to its own keys: the two read an era alike."""
    from kvplan.results import to_data
    from kvplan.usecases.envelope import policy_inputs
    from kvplan.usecases.records import policy_record

    for name in ERAS:
        e = get_era(name)
        full, cut = to_data(policy_record(e)), to_data(policy_inputs(e))
        assert cut == {k: full[k] for k in cut}, name
        assert set(cut) < set(full)


@pytest.mark.parametrize("release, enabled, num_blocks", [
    # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE unset: "0" to 0.13.0 → the hybrid manager off for
    # Llama 4's chunked-local layers (Era.chunked_local_hma_by_default); 13653 blocks / 1.67x is the 0.10.1
    # wheel's figure (tests/golden/pre-0.11/llama-4-scout__40gib__0.10.1.json)
    ("0.10.1", False, 13653), ("0.13.0", False, 13653),
    # "1" from 0.14.0 (PR #29627): on, 54613 blocks (tests/golden/llama-4-scout__40gib__0.14.1.json)
    ("0.14.0", True, 54613),
])
def test_llama4_hybrid_manager_default_per_release(release, enabled, num_blocks):
    from typer.testing import CliRunner

    from kvplan.cli.app import ensure_registered

    r = CliRunner().invoke(ensure_registered(), [
        "simulate", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "--kv-cache-memory", "40GiB",
        "--max-model-len", "131072", "--policy", f"vllm=={release}", "--format", "json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["hybrid_kv_cache_manager"]["enabled"] is enabled
    assert d["memory"]["num_blocks"] == num_blocks
