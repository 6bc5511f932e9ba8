"""`kvplan check`, the library half: deployments files (loading, validation with lines),
expectations (each passing and failing), isolation of failing deployments, JUnit XML and
GitHub annotations. Plans are stand-ins here (no model parsing); tests/test_check_cli.py
runs the real pipeline."""

from __future__ import annotations

import inspect
import textwrap
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from kvplan.usecases import check
from kvplan.usecases.check import load_deployments, load_deployments_text, run_deployment, run_deployments
from kvplan.usecases.check.schema import (
    EXPECTATIONS,
    OPTIONS,
    Deployment,
    DeploymentsFileError,
    Expectation,
)
from kvplan.errors import ModelNotFoundError
from kvplan.usecases.scenario import Scenario


def load(text: str, path: str = "deploy.yaml"):
    return load_deployments_text(textwrap.dedent(text), path)


def problems(text: str, path: str = "deploy.yaml") -> list[str]:
    with pytest.raises(DeploymentsFileError) as e:
        load(text, path)
    assert e.value.exit_code == 1
    return [str(i) for i in e.value.issues]


MINIMAL = """\
    deployments:
      - name: a
        model: openai/gpt-oss-20b
        kv_cache_memory: 80GiB
    """


# --- the file format -----------------------------------------------------------------


def test_every_simulate_option_is_a_file_key():
    # Scenario, the file keys and simulate's flags all come from the option table (kvplan.options).
    from kvplan.cli.simulate_cmd import simulate_command
    from kvplan.options import options_for, program_options, scenario_options

    # every Scenario field is a file key, but for the options naming a program (vllm_python): a file
    # never names a program kvplan runs (docs/security.md; test_check_refuses_a_program_key)
    programs = {o.name for o in program_options()}
    assert programs == {"vllm_python"}
    assert set(OPTIONS) == set(Scenario.field_names()) - programs == {"model"} | {o.name for o in scenario_options()} - programs
    params = set(inspect.signature(simulate_command).parameters)
    assert {o.name for o in options_for("simulate") if o.scenario} <= params


def test_minimal_file():
    [d] = load(MINIMAL)
    assert (d.name, d.file, d.line) == ("a", "deploy.yaml", 2)
    assert d.scenario == Scenario(model="openai/gpt-oss-20b", kv_cache_memory=80 << 30)
    # `starts: true` is implied: a deployment that would crash-loop fails unless it says otherwise
    assert d.expectations == (Expectation("starts", True, None),)


def test_defaults_merge_entry_wins_and_null_unsets():
    a, b = load("""\
        defaults:
          model: openai/gpt-oss-20b
          drafter: amazon/GPT-OSS-20B-P-EAGLE
          kv_cache_memory: 80GiB
          policy: vllm-1.5
          expect:
            max_groups: 2
            min_concurrency: 4
        deployments:
          - name: a
            tensor_parallel_size: 2
            expect:
              min_concurrency: 8
              same_layout_as: vllm-latest
          - name: b
            drafter: null
            policy: vllm-latest
            threshold: 1.25
            kv_transfer_config: {kv_connector: NixlConnector}
            max_model_len: auto
            expect:
              max_groups: null
              starts: false
        """)
    assert a.scenario == Scenario(model="openai/gpt-oss-20b", drafter="amazon/GPT-OSS-20B-P-EAGLE",
                                  kv_cache_memory="80GiB", policy="vllm-1.5", tensor_parallel_size=2)
    # expectations in report order; the line is where each limit was written (defaults or entry)
    assert a.expectations == (
        Expectation("starts", True, None),
        Expectation("min_concurrency", 8, 13),
        Expectation("max_groups", 2, 7),
        Expectation("same_layout_as", "vllm-latest", 14),
    )
    assert b.scenario.drafter is None and b.scenario.policy == "vllm-latest" and b.scenario.threshold == 1.25
    assert b.scenario.kv_transfer_config == {"kv_connector": "NixlConnector"}
    assert b.scenario.max_model_len == -1  # auto-fit, vLLM's -1
    assert [(e.key, e.limit) for e in b.expectations] == [("starts", False), ("min_concurrency", 4)]


def test_every_option_accepted_with_its_type():
    [d] = load("""\
        deployments:
          - name: everything
            model: Qwen/Qwen3-Next-80B-A3B-Thinking
            drafter: some/drafter
            speculative_method: mtp
            num_speculative_tokens: 2
            block_size: 64
            attention_backend: FLASHINFER
            kv_cache_dtype: fp8
            dtype: bfloat16
            tensor_parallel_size: 4
            pipeline_parallel_size: 2
            revision: main
            download: false
            policy: vllm==0.18.0
            threshold: 1.5
            kv_cache_memory: 42949672960
            max_model_len: 131072
            max_num_batched_tokens: 4096
            max_num_seqs: 256
            async_scheduling: false
            enable_prefix_caching: true
            mamba_cache_mode: align
            disable_hybrid_kv_cache_manager: false
            kv_transfer_config: '{"kv_connector": "NixlConnector"}'
            num_gpu_blocks_override: 1000
            gpu: H100-80GB
            gpu_memory: 80
            gpu_memory_utilization: 0.9
            expect:
              starts: true
              max_padding_waste_pct: 10.5
              min_concurrency: 1
              min_steady_concurrency: 2
              min_max_model_len: 131072
              min_kv_tokens: 1000000
              max_groups: 4
              max_host_memory: 64GiB
              min_host_kv_tokens: 1000
              same_layout_as: vllm-min
              max_upgrade_loss: {to: vllm==0.34.0, pct: 5}
        """)
    s = d.scenario
    assert (s.block_size, s.kv_cache_dtype, s.tensor_parallel_size, s.pipeline_parallel_size) == (64, "fp8", 4, 2)
    assert s.kv_cache_memory == 42949672960 and s.kv_transfer_config == {"kv_connector": "NixlConnector"}
    assert (s.mamba_cache_mode, s.enable_prefix_caching, s.async_scheduling) == ("align", True, False)
    assert [e.key for e in d.expectations] == list(EXPECTATIONS)


def test_merge_keys_and_anchors():
    a, b = load("""\
        deployments:
          - &base
            name: a
            model: openai/gpt-oss-20b
            kv_cache_memory: 80GiB
          - <<: *base
            name: b
            kv_cache_memory: 40GiB
        """)
    assert (a.scenario.kv_cache_memory, b.scenario.kv_cache_memory) == (80 << 30, 40 << 30)
    assert b.scenario.model == "openai/gpt-oss-20b" and b.line == 6


# --- bad files: file, line, entry and key in every message ----------------------------


def test_yaml_syntax_error_has_the_line():
    [p] = problems("""\
        deployments:
          - name: a
            model: [unclosed
            kv_cache_memory: 80GiB
        """)
    assert p.startswith("deploy.yaml:4: invalid YAML: ")


def test_tab_indentation_syntax_error():
    [p] = problems("deployments:\n\t- name: a\n")
    assert p.startswith("deploy.yaml:2: invalid YAML")


def test_unknown_key_names_file_entry_key_line_and_suggests():
    assert problems("""\
        deployments:
          - name: gpt
            model: openai/gpt-oss-20b
            kv_cache_memory: 80GiB
            tensor_paralel_size: 2
            tensor-parallel-size: 2
            min_concurrency: 3
        """) == [
        "deploy.yaml:5: deployment 'gpt': key 'tensor_paralel_size': unknown key; did you mean 'tensor_parallel_size'?",
        "deploy.yaml:6: deployment 'gpt': key 'tensor-parallel-size': unknown key; "
        "write 'tensor_parallel_size' (underscores, not dashes)",
        "deploy.yaml:7: deployment 'gpt': key 'min_concurrency': 'min_concurrency' is an expectation: "
        "put it under 'expect:'",
    ]


def test_unknown_expectation_and_unknown_top_level_key():
    assert problems("""\
        kv_cache_memory: 80GiB
        deployments:
          - name: gpt
            model: openai/gpt-oss-20b
            kv_cache_memory: 80GiB
            expect:
              max_padding_pct: 40
        """) == [
        "deploy.yaml:1: key 'kv_cache_memory': unknown top-level key; known: defaults, deployments; "
        "shared settings go under 'defaults:'",
        "deploy.yaml:7: deployment 'gpt': key 'expect.max_padding_pct': unknown expectation; "
        "did you mean 'max_padding_waste_pct'?",
    ]


@pytest.mark.parametrize("line, problem", [
    ("block_size: 'sixteen'", "key 'block_size': expected an integer (8192, 8k), got a string ('sixteen')"),
    ("block_size: 16.5", "key 'block_size': expected an integer, got a number (16.5)"),
    ("tensor_parallel_size: true", "key 'tensor_parallel_size': expected an integer, got a boolean (true)"),
    ("download: maybe", "key 'download': expected true or false, got a string ('maybe')"),
    ("threshold: high", "key 'threshold': expected a number, got a string ('high')"),
    ("drafter: [a, b]", "key 'drafter': expected a string, got a list"),
    ("gpu: {a: 1}", "key 'gpu': expected a string, got a mapping"),
    ("max_model_len: [1]", "key 'max_model_len': expected a number of tokens or 'auto', got a list"),
    ("expect: {min_concurrency: [1]}", "key 'expect.min_concurrency': expected a number, got a list"),
    ("expect: {starts: 'yes please'}", "key 'expect.starts': expected true or false, got a string ('yes please')"),
    ("expect: [starts]", "key 'expect': expected a mapping of expectations, got a list"),
])
def test_wrong_type_names_the_line(line, problem):
    [p] = problems(f"""\
        deployments:
          - name: d
            model: m
            kv_cache_memory: 80GiB
            {line}
        """)
    assert p == f"deploy.yaml:5: deployment 'd': {problem}"


@pytest.mark.parametrize("line, problem", [
    ("tensor_parallel_size: 0", "key 'tensor_parallel_size': must be at least 1, got 0"),
    ("gpu_memory_utilization: 1.5", "key 'gpu_memory_utilization': must be at most 1, got 1.5"),
    ("threshold: -1", "key 'threshold': must be at least 0, got -1"),
    ("threshold: .nan", "key 'threshold': must be a finite number, got nan"),
    ("kv_cache_dtype: fp9", "key 'kv_cache_dtype': 'fp9' is not one of: auto, bfloat16"),
    ("speculative_method: medusa", "key 'speculative_method': 'medusa' is not one of: eagle, eagle3, mtp, draft_model"),
    ("mamba_cache_mode: some", "key 'mamba_cache_mode': 'some' is not one of: none, align, all"),
    ("policy: vllm-9", "key 'policy': unknown policy 'vllm-9'; choose one of: vllm-latest, vllm-0.10, vllm-0.11.1"),
    ("max_model_len: -5", "key 'max_model_len': must be positive or 'auto', got -5"),
    ("max_model_len: lots", "key 'max_model_len': must be a number of tokens (131072, 128k) or 'auto', got 'lots'"),
    ("kv_transfer_config: '{'", "key 'kv_transfer_config': is not valid JSON"),
    ("expect: {max_padding_waste_pct: 150}", "key 'expect.max_padding_waste_pct': must be at most 100, got 150"),
    ("expect: {min_concurrency: -1}", "key 'expect.min_concurrency': must be at least 0, got -1"),
    ("expect: {max_groups: 0}", "key 'expect.max_groups': must be at least 1, got 0"),
    ("expect: {same_layout_as: vllm-2}", "key 'expect.same_layout_as': unknown policy 'vllm-2'"),
])
def test_impossible_values_name_the_line(line, problem):
    [p] = problems(f"""\
        deployments:
          - name: d
            model: m
            kv_cache_memory: 80GiB
            {line}
        """)
    assert p.startswith(f"deploy.yaml:5: deployment 'd': {problem}")


def test_bad_size_is_reported_once():
    [p] = problems("""\
        deployments:
          - name: d
            model: m
            kv_cache_memory: 80 gigs
        """)
    assert p.startswith("deploy.yaml:4: deployment 'd': key 'kv_cache_memory': cannot read '80 gigs' as a size")


def test_missing_model_name_and_budget():
    assert problems("""\
        deployments:
          - name: no-model
            kv_cache_memory: 80GiB
          - model: m
            kv_cache_memory: 80GiB
          - name: no-budget
            model: m
        """) == [
        "deploy.yaml:2: deployment 'no-model': key 'model': missing; set the model id (here or in defaults)",
        "deploy.yaml:4: deployment #2: key 'name': missing; every deployment needs a name",
        "deploy.yaml:6: deployment 'no-budget': key 'kv_cache_memory': no KV-cache budget; "
        "set kv_cache_memory (e.g. 80GiB) or gpu (e.g. H100-80GB), here or in defaults",
    ]


def test_duplicate_key_and_duplicate_name():
    assert problems("""\
        deployments:
          - name: a
            model: m
            kv_cache_memory: 80GiB
            threshold: 1.5
            threshold: 1.25
          - name: a
            model: m
            kv_cache_memory: 80GiB
        """) == [
        "deploy.yaml:6: deployment 'a': key 'threshold': duplicate key (first set on line 5)",
        "deploy.yaml:7: deployment 'a': key 'name': duplicate name (first used on line 2)",
    ]


def test_bad_defaults_section():
    assert problems("""\
        defaults:
          name: shared
          tensor_parallel_size: two
        deployments:
          - name: a
            model: m
            kv_cache_memory: 80GiB
        """) == [
        "deploy.yaml:2: defaults: key 'name': 'name' belongs to a deployment, not to defaults",
        "deploy.yaml:3: defaults: key 'tensor_parallel_size': expected an integer (8192, 8k), got a string ('two')",
    ]


@pytest.mark.parametrize("text, problem", [
    ("", "deploy.yaml:1: the file is empty; expected a mapping with a 'deployments' list"),
    ("- a\n", "deploy.yaml:1: expected a mapping with 'defaults' (optional) and 'deployments', got a list"),
    ("defaults: {}\n", "deploy.yaml:1: key 'deployments': missing; list the deployments under 'deployments:'"),
    ("deployments: {a: 1}\n", "deploy.yaml:1: key 'deployments': expected a list of deployments, got a mapping"),
    ("deployments: []\n", "deploy.yaml:1: key 'deployments': the list is empty; add at least one deployment"),
    ("deployments:\n  - 3\n", "deploy.yaml:2: deployment #1: expected a mapping of settings, got an integer (3)"),
    ("a: 1\n---\nb: 2\n", "deploy.yaml:2: invalid YAML: expected a single document"),
])
def test_structure_problems(text, problem):
    assert problems(text)[0].startswith(problem)


def test_python_tags_are_refused():
    # SafeLoader all the way down: no object construction from tags.
    [p] = problems("""\
        deployments:
          - name: a
            model: !!python/object/apply:os.system ["echo pwned"]
            kv_cache_memory: 80GiB
        """)
    assert p.startswith("deploy.yaml:3: deployment 'a': key 'model': cannot read value: could not determine a constructor")


def test_problems_of_every_file_are_reported_together(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(textwrap.dedent(MINIMAL))
    bad = tmp_path / "bad.yaml"
    bad.write_text("deployments:\n  - name: x\n    model: m\n    kv_cache_memory: 1GiB\n    tp: 2\n")
    missing = tmp_path / "missing.yaml"
    with pytest.raises(DeploymentsFileError) as e:
        load_deployments([str(good), str(bad), str(missing)])
    issues = e.value.issues
    assert [(i.file, i.line, i.entry, i.key) for i in issues] == [
        (str(bad), 5, "deployment 'x'", "tp"),
        (str(missing), None, None, None),
    ]
    assert issues[1].problem == "not found; check the path"
    assert str(e.value).endswith("(and 1 more problem)")
    assert [d.name for d in load_deployments([str(good), str(good)])] == ["a", "a"]


# --- expectations against a plan ------------------------------------------------------


def fake_plan(*, starts=True, group_size=16, groups=(("a", "b"), ("c", "d")), num_padding_layers=4,
              padding_waste_pct=100 / 3, max_concurrency=9.4, max_model_len=131072, kv_tokens=None,
              steady_state_concurrency=12.5, num_blocks=81920, host_tier=None):
    failure = None if starts else SimpleNamespace(stage="drafter", error_type="AssertionError",
                                                  message="All drafting layers should belong to the same kv cache group")
    return SimpleNamespace(
        starts=starts, failure=failure, group_size=group_size, num_groups=len(groups),
        groups=[SimpleNamespace(layer_names=list(g)) for g in groups], num_padding_layers=num_padding_layers,
        padding_waste_pct=padding_waste_pct, max_concurrency=max_concurrency, max_model_len=max_model_len,
        steady_state_concurrency=steady_state_concurrency, num_blocks=num_blocks,
        kv_tokens=int(max_concurrency * max_model_len) if kv_tokens is None else kv_tokens, host_tier=host_tier,
        page_size_bytes=0,  # a Plan's (read by PlanSummary.of; no expectation reads it)
    )


def fake_runner(plans: dict[str, object]):
    """run_scenario stand-in: the plan is chosen by the scenario's policy; calls are recorded."""
    calls = []

    def run(scenario, layout=None):
        calls.append((scenario.model, scenario.policy, scenario.threshold, layout))
        if scenario.model == "missing/model":
            raise ModelNotFoundError(scenario.model, ["bundled catalog"])
        if scenario.model == "buggy/model":
            raise ZeroDivisionError("division by zero")
        return SimpleNamespace(plan=plans[scenario.policy], layout=SimpleNamespace(warnings=["w"]))

    run.calls = calls
    return run


def deployment(*expectations, model="m", policy="vllm-1.5", threshold=None, name="d"):
    return Deployment(name, "deploy.yaml", 2, Scenario(model=model, policy=policy, threshold=threshold,
                                                       kv_cache_memory="80GiB"),
                      tuple(Expectation(k, v, 10 + i) for i, (k, v) in enumerate(expectations)))


TIER = SimpleNamespace(sized=True, cpu_kv_cache_size_bytes=64 << 30, cpu_kv_cache_size_tokens=524288)
# (expectation, limit, plan overrides, passes, message)
CASES = [
    ("starts", True, {}, True, "expected the engine to start; the engine would start"),
    ("starts", True, {"starts": False}, False,
     "expected the engine to start; the engine would fail at start-up (drafter): AssertionError: "
     "All drafting layers should belong to the same kv cache group"),
    ("starts", False, {"starts": False}, True, "expected a start-up failure; the engine would fail"),
    ("starts", False, {}, False, "expected a start-up failure; the engine would start"),
    ("max_padding_waste_pct", 34, {}, True, "padding waste 33.33% (4 padding layers), limit 34%"),
    ("max_padding_waste_pct", 30, {}, False, "padding waste 33.33% (4 padding layers), limit 30%"),
    ("max_padding_waste_pct", 50, {"padding_waste_pct": 50.0}, True, "padding waste 50.00%"),  # the limit is inclusive
    ("min_concurrency", 9, {}, True, "max concurrency 9.40, need at least 9"),
    ("min_concurrency", 9.5, {}, False, "max concurrency 9.40, need at least 9.5"),
    ("min_steady_concurrency", 12, {}, True, "steady-state concurrency 12.50 (kvplan's estimate), need at least 12"),
    ("min_steady_concurrency", 13, {}, False, "steady-state concurrency 12.50 (kvplan's estimate), need at least 13"),
    ("min_max_model_len", 131072, {}, True, "max_model_len 131,072 tokens, need at least 131,072"),
    ("min_max_model_len", 262144, {}, False, "max_model_len 131,072 tokens, need at least 262,144"),
    ("min_kv_tokens", 1_000_000, {}, True, "KV tokens 1,232,076, need at least 1,000,000"),
    ("min_kv_tokens", 2_000_000, {}, False, "KV tokens 1,232,076, need at least 2,000,000"),
    ("max_groups", 2, {}, True, "2 KV cache groups, limit 2"),
    ("max_groups", 1, {}, False, "2 KV cache groups, limit 1"),
    # a sized host tier of 64 GiB holding 524,288 tokens (one engine)
    ("max_host_memory", 64 << 30, {"host_tier": TIER}, True, "host tier 64.00 GiB of host memory, limit 64.00 GiB"),
    ("max_host_memory", 32 << 30, {"host_tier": TIER}, False, "host tier 64.00 GiB of host memory, limit 32.00 GiB"),
    ("min_host_kv_tokens", 524288, {"host_tier": TIER}, True, "host tier holds 524,288 tokens, need at least 524,288"),
    ("min_host_kv_tokens", 1, {}, False, "no sized host tier"),
]


@pytest.mark.parametrize("key, limit, overrides, passes, message", CASES)
def test_each_expectation_passes_and_fails(key, limit, overrides, passes, message):
    run = fake_runner({"vllm-1.5": fake_plan(**overrides)})
    r = run_deployment(deployment((key, limit)), run)
    [o] = r.outcomes
    assert (o.key, o.limit, o.passed, o.line) == (key, limit, passes, 10)
    assert o.message.startswith(message)
    assert r.status == ("pass" if passes else "fail")


def test_every_expectation_has_a_pass_and_a_fail_case():
    per_key = {(k, p) for k, _, _, p, _ in CASES} | {("same_layout_as", True), ("same_layout_as", False)}
    # max_upgrade_loss runs two real releases: its pass and fail cases are in tests/test_diff.py
    per_key |= {("max_upgrade_loss", True), ("max_upgrade_loss", False)}
    assert per_key == {(k, p) for k in EXPECTATIONS for p in (True, False)}


def test_same_layout_as_same():
    run = fake_runner({"vllm-1.5": fake_plan(), "vllm-latest": fake_plan(max_concurrency=8.8)})
    r = run_deployment(deployment(("same_layout_as", "vllm-latest"), threshold=1.5), run)
    [o] = r.outcomes
    assert o.passed and r.status == "pass"
    assert o.message == "same layout under vllm-1.5 (threshold 1.5) and vllm-latest (group size 16, 2 groups)"
    # the reference runs on the deployment's layout, under the named policy with its own threshold
    assert run.calls[1][1:3] == ("vllm-latest", None) and run.calls[1][3] is not None
    assert o.measured.differences == () and o.measured.group_size == 16


def test_same_layout_as_catches_a_grouping_change():
    # threshold 1.5 → 1.25 on gpt-oss + P-EAGLE: group size 16 → 12, 2 → 3 groups, padding 4 → 8
    old = fake_plan(group_size=12, groups=(("s0",), ("s1",), ("f0",)), num_padding_layers=8, padding_waste_pct=50.0)
    run = fake_runner({"vllm-1.5": fake_plan(), "vllm-1.25": old})
    [o] = run_deployment(deployment(("same_layout_as", "vllm-1.25")), run).outcomes
    assert not o.passed
    assert o.message == ("layout under vllm-1.5 differs from vllm-1.25: group size 16 vs 12; 2 vs 3 groups; "
                         "4 vs 8 padding layers")


def test_same_layout_as_compares_the_layers_of_each_group():
    moved = fake_plan(groups=(("a", "c"), ("b", "d")))
    run = fake_runner({"vllm-1.5": fake_plan(), "vllm-min": moved})
    [o] = run_deployment(deployment(("same_layout_as", "vllm-min")), run).outcomes
    assert not o.passed and o.measured.differences == ("layers of groups 0, 1 differ",)
    pct = fake_plan(padding_waste_pct=25.0)
    run = fake_runner({"vllm-1.5": fake_plan(), "vllm-min": pct})
    [o] = run_deployment(deployment(("same_layout_as", "vllm-min")), run).outcomes
    assert o.measured.differences == ("padding 33.33% vs 25.00%",)


def test_same_layout_as_reference_that_cannot_run_fails_the_expectation():
    run = fake_runner({"vllm-1.5": fake_plan()})  # no plan for vllm-min: KeyError inside the runner
    r = run_deployment(deployment(("starts", True), ("same_layout_as", "vllm-min")), run)
    assert r.status == "fail" and [o.passed for o in r.outcomes] == [True, False]
    assert r.outcomes[1].message.startswith("could not simulate under vllm-min: KeyError")


def test_all_failing_expectations_are_reported():
    run = fake_runner({"vllm-1.5": fake_plan(starts=False)})
    r = run_deployment(deployment(("starts", True), ("max_groups", 1), ("min_concurrency", 1)), run)
    assert [o.key for o in r.failed] == ["starts", "max_groups"]


def test_a_failing_deployment_does_not_stop_the_others():
    run = fake_runner({"vllm-1.5": fake_plan()})
    deployments = [
        deployment(("starts", True), name="first"),
        deployment(("starts", True), model="missing/model", name="unknown-model"),
        deployment(("starts", True), model="buggy/model", name="bug"),
        deployment(("max_groups", 1), name="fails"),
        deployment(("starts", True), name="last"),
    ]
    seen = []
    results = run_deployments(deployments, run, progress=lambda r: seen.append(r.deployment.name))
    assert seen == ["first", "unknown-model", "bug", "fails", "last"]
    assert [r.status for r in results] == ["pass", "error", "error", "fail", "pass"]
    assert results[1].error.startswith("model 'missing/model' not found")
    assert results[1].error_type == "ModelNotFoundError" and results[1].plan is None
    assert results[2].error == "internal error: ZeroDivisionError: division by zero"
    data = check.check_result(["deploy.yaml"], results).to_dict()
    assert data["passed"] is False
    assert data["summary"] == {"num_deployments": 5, "num_passed": 2, "num_failed": 1, "num_errors": 2}
    assert data["deployments"][3]["failed_expectations"] == ["max_groups"]
    assert "deployment 'first': w" in data["warnings"]


def test_reraise_for_debugging_but_never_for_kvplan_errors():
    run = fake_runner({"vllm-1.5": fake_plan()})
    with pytest.raises(ZeroDivisionError):
        run_deployment(deployment(model="buggy/model"), run, reraise=True)
    assert run_deployment(deployment(model="missing/model"), run, reraise=True).status == "error"


# --- report dict, JUnit XML, GitHub annotations ---------------------------------------


def sample_data():
    run = fake_runner({"vllm-1.5": fake_plan(), "vllm-1.25": fake_plan(starts=False, group_size=12)})
    results = run_deployments([
        deployment(("starts", True), name="ok"),
        deployment(("starts", True), ("max_padding_waste_pct", 30), policy="vllm-1.25", name="bad"),
        deployment(model="missing/model", name="unknown"),
    ], run)
    return check.check_result(["deploy.yaml"], results).to_dict()


def test_check_result_shape():
    d = sample_data()
    assert list(d)[:3] == ["schema_version", "kvplan_version", "command"] and d["command"] == "check"
    bad = d["deployments"][1]
    assert bad["status"] == "fail" and bad["failed_expectations"] == ["starts", "max_padding_waste_pct"]
    assert bad["plan"]["group_size"] == 12 and bad["plan"]["starts"] is False
    assert bad["plan"]["stage"] == "drafter"
    e = bad["expectations"][1]
    assert (e["key"], e["limit"], e["measured"], e["passed"], e["line"]) == (
        "max_padding_waste_pct", 30, 33.3333, False, 11)


def test_junit_xml_parses_back():
    root = ET.fromstring(check.junit_xml(sample_data()))
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "deploy.yaml" and suite.get("tests") == "3"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["ok", "bad", "unknown"]
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    assert "group_size=16" in cases[0].find("system-out").text
    failure = cases[1].find("failure")
    assert failure.get("type") == "starts"
    assert failure.get("message").startswith("starts: expected the engine to start; the engine would fail")
    assert "max_padding_waste_pct: padding waste 33.33% (4 padding layers), limit 30%" in failure.text
    error = cases[2].find("error")
    assert error.get("type") == "ModelNotFoundError" and "not found" in error.get("message")
    assert cases[1].get("file") == "deploy.yaml" and cases[1].get("line") == "2"


def test_junit_one_suite_per_file():
    run = fake_runner({"vllm-1.5": fake_plan()})
    a = deployment(name="a")
    b = Deployment("b", "other.yml", 5, a.scenario, a.expectations)
    data = check.check_result(["deploy.yaml", "other.yml"], run_deployments([a, b], run)).to_dict()
    root = ET.fromstring(check.junit_xml(data))
    assert [s.get("name") for s in root.findall("testsuite")] == ["deploy.yaml", "other.yml"]
    assert root.findall("testsuite")[1].find("testcase").get("classname") == "kvplan.check.other"


def test_github_annotations_format(tmp_path):
    lines = check.github_annotations(sample_data())
    assert lines == [
        "::error file=deploy.yaml,line=10,title=kvplan check%3A bad (starts)::expected the engine to start; "
        "the engine would fail at start-up (drafter): AssertionError: All drafting layers should belong to the "
        "same kv cache group",
        "::error file=deploy.yaml,line=11,title=kvplan check%3A bad (max_padding_waste_pct)::"
        "padding waste 33.33%25 (4 padding layers), limit 30%25",
        "::error file=deploy.yaml,line=2,title=kvplan check%3A unknown::error: model 'missing/model' not found "
        "(looked in: bundled catalog); pass a path to a config.json, a bundled id (see 'kvplan models'), "
        "or add --download to fetch it from the Hugging Face Hub",
    ]


def test_annotation_escaping_and_paths(tmp_path):
    assert check.annotation("a,b:c.yaml", 3, "t: x, y", "50%\nnext\r") == \
        "::error file=a%2Cb%3Ac.yaml,line=3,title=t%3A x%2C y::50%25%0Anext%0D"
    assert check.annotation("f.yaml", None, "t", "m") == "::error file=f.yaml,title=t::m"
    inside = tmp_path / "configs" / "d.yaml"
    assert check.annotation_path(str(inside), str(tmp_path)) == "configs/d.yaml"
    assert check.annotation_path("/elsewhere/d.yaml", str(tmp_path)) == "/elsewhere/d.yaml"


# the keys an entry may have, as the message lists them: the option table's scenario options in its order (derived:
# a new option needs no line here), then the entry's own keys; pinned at both ends and by count against the table
KNOWN_KEYS = [*OPTIONS, "expect", "vllm_serve", "manifest", "name"]


def test_known_keys_are_the_option_tables():
    from kvplan.options import file_options

    assert KNOWN_KEYS[:3] == ["model", "drafter", "speculative_method"]
    assert KNOWN_KEYS[-5:] == ["require_agreement", "expect", "vllm_serve", "manifest", "name"]
    assert KNOWN_KEYS[1:-4] == [o.name for o in file_options()]  # every scenario option once, none invented
    assert "vllm_python" not in KNOWN_KEYS  # a program is never a file's key


def test_file_issue_annotations():
    with pytest.raises(DeploymentsFileError) as e:
        load("deployments:\n  - name: a\n    model: m\n    kv_cache_memory: 1GiB\n    tp: 2\n")
    assert check.issue_annotations(e.value.issues) == [
        "::error file=deploy.yaml,line=5,title=kvplan check%3A bad deployments file::"
        "deployment 'a': key 'tp': unknown key; known: " + ", ".join(KNOWN_KEYS),
    ]
