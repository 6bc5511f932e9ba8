"""Test-wide settings: no on-disk config cache unless a test sets its own directory, so every
test reads configs through transformers exactly as a first run does; the ``slow`` marker on the
tests of SLOW."""

import os
import re
import sys
from pathlib import Path

import pytest

os.environ.setdefault("KVPLAN_NO_CACHE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/factories.py

# The tests of more than ~2 s each (the whole-suite run's --durations=0 on this project's shared 2-core
# machine, 2026-12-06: 57 tests, 690 of its 927 test seconds): wheel builds, CLI subprocesses, fuzzing,
# --allocate on torch, golden and release sweeps, import-graph walks, huggingface_hub's retries. They carry
# the ``slow`` marker: ``python -m pytest -m "not slow"`` is the inner loop, CI runs everything. A name
# without ``[…]`` marks every case of a parametrized test; a test whose first case only pays an import
# (transformers) is not listed. tests/test_readme.py checks that every name here is a test.
SLOW: dict[str, tuple[str, ...]] = {
    "test_api.py": (
        "test_a_configuration_refusal_needs_no_budget",
    ),
    "test_architectures.py": (
        "test_docs_architectures_md_is_generated",
        "test_kvplan_never_builds_other_layers_than_vllm",
    ),
    "test_bench_script.py": (
        "test_bench_core_and_cli_cases_run",
    ),
    "test_bounds.py": (
        "test_huge_values_answer_within_a_second",
    ),
    "test_check_cli.py": (
        "test_ci_smoke_script",
        "test_docs_embedded_output_is_current",
    ),
    "test_checkpoint_download.py": (
        "test_cli_end_to_end_in_a_subprocess",
        "test_no_server_is_one_line",
    ),
    "test_ci_integrations.py": (
        "test_check_step_fails_with_annotations_and_a_failing_row",
        "test_check_step_passes_writes_junit_summary_and_output",
        "test_no_absolute_machine_path_in_the_repository",
        "test_pre_commit_hook_entry_passes_and_fails",
        "test_summary_appends_and_escapes_cells",
    ),
    "test_cli.py": (
        "test_inspect_and_simulate_do_not_import_torch",
        "test_root_help_imports_no_typer_rich_or_pydantic",
        "test_sweep_plot",
    ),
    "test_compare_advice_properties.py": (
        "test_advice_never_loses_to_the_default",
        "test_no_advised_knob_leaves_a_pool_below_one_request",
    ),
    "test_config_cache.py": (
        "test_cache_can_be_turned_off",
        "test_shipped_resolved_views_match_transformers",
        "test_warm_runs_match_cold_runs_without_transformers",
    ),
    "test_cross_check.py": (
        "test_a_failing_runner_is_reported_in_one_line",
        "test_case_builder_reproduces_the_recorded_goldens_inputs",
    ),
    "test_device.py": (
        "test_allocation_equals_the_prediction_byte_for_byte",
        "test_allocation_for_other_layouts",
        "test_an_allocation_other_than_predicted_is_one_more_failure",
        "test_cli_allocate_on_cpu_json",
        "test_nothing_stays_allocated_after_an_error",
        "test_simulate_carries_the_record_and_prints_its_json",
        "test_the_report_record_serialises_to_the_json_of_before",
        "test_verification_catches_a_layer_that_sees_another_slots_pages",
        "test_verification_catches_a_wrong_pattern",
        "test_verification_catches_two_groups_sharing_a_block",
    ),
    "test_engines_lower_bound.py": (
        "test_lower_bound_never_exceeds_any_engine",
    ),
    "test_fit.py": (
        "test_fit_does_not_import_torch",
        "test_min_utilization_is_enough_and_one_step_less_is_not",
    ),
    "test_fuzz.py": (
        "test_fuzz",
    ),
    "test_hardware.py": (
        "test_budget_path_does_not_import_torch",
        "test_simulate_with_gpu_marks_the_budget_estimated",
    ),
    "test_heavy_imports.py": (
        "test_torch_and_transformers_only_in_their_modules_and_lazily",
    ),
    "test_layering.py": (
        "test_every_module_has_a_layer",
        "test_imports_run_down_the_layers",
        "test_no_import_cycles",
        "test_nothing_outside_the_cli_imports_the_cli",
        "test_the_graph_sees_lazy_imports",
    ),
    "test_model_source.py": (
        "test_no_heavy_imports",
    ),
    "test_pipeline_parallel.py": (
        "test_no_negative_figures_and_stages_within_budget",
    ),
    "test_readme_outputs.py": (
        "test_readme_output_is_current",
    ),
    "test_serve.py": (
        "test_acceptance_peagle_layout_on_h100",
    ),
    "test_vllm_properties.py": (
        "test_grouping_invariants",
    ),
    "test_walk.py": (
        "test_a_compare_re_enters_only_the_engines_vocabulary",
    ),
    "test_weights_meta.py": (
        "test_analytic_count_equals_meta_device_count[Qwen/Qwen3.5-35B-A3B]",
        "test_analytic_count_equals_meta_device_count[google/gemma-4-26B-A4B]",
        "test_analytic_count_equals_meta_device_count[openai/gpt-oss-20b]",
        "test_gemma4_vision_tower_is_counted_as_vllm_loads_it",
    ),
    "test_width.py": (
        "test_warnings_fit_the_width_too",
    ),
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        file, _, name = item.nodeid.partition("::")
        listed = SLOW.get(Path(file).name, ())
        if name in listed or re.sub(r"\[.*\]$", "", name) in listed:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def fixed_profile_terms(monkeypatch):
    """The profile's estimated terms as kvplan's fixed rule had them (the sampler pass as two fp32 copies of the
    logits, no hidden states held beside it; non-torch 256 MiB on one GPU, 768 MiB on several, no calibration),
    for tests of a *sizing* rule whose hand derivations start from those terms (tests/test_extensible_kv_cache.py).
    The derived and calibrated terms themselves are tested in tests/test_hardware.py and test_profile_terms.py."""
    from kvplan.budget import estimate
    from kvplan.budget.weights import widest_intermediate

    def fixed(inventory, cfg, dtype_bytes, *, tp, max_num_batched_tokens, max_num_seqs, layers=None,
              last_stage=True, encoder=None, sampler_bytes=None, forward_factor=1.0, first_stage=True,
              held_bytes=0, persistent_bytes=0, drafter=None):  # no runner states, no drafter phase: unused
        T, hidden, vocab = max_num_batched_tokens, int(cfg.get("hidden_size") or 0), int(cfg.get("vocab_size") or 0)
        forward = T * (4 * hidden + widest_intermediate(inventory, cfg, tp, layers)) * dtype_bytes
        peak = max(forward, min(max_num_seqs, T) * vocab * 4 * 2 if last_stage else 0)
        if encoder is not None:
            peak = max(encoder["forward_bytes"], encoder["cache_bytes"] + peak)
        return peak + estimate.ACTIVATION_WORKSPACE_BYTES

    monkeypatch.setattr(estimate, "estimate_activation_bytes", fixed)
    from kvplan.budget import profile

    monkeypatch.setattr(profile, "persistent_bytes", lambda *a, **k: 0)  # nor the V2 runner's states
    monkeypatch.setattr(estimate, "_calibration", lambda: {})
