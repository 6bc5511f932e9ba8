"""`--cross-check`: kvplan's scenario → the runner's case, the runner's answer → field-by-field
comparison → report, on recorded runner outputs (tests/golden: what vLLM's own planning functions
returned, see scripts/golden/README.md), including perturbed ones that must show up as differences.

The subprocess boundary is replaced by the recorded answer only where a test says so (CI has no
vLLM); the end-to-end tests at the bottom run real vLLM releases and skip when their venv is
missing (``KVPLAN_VLLM_VENVS``, default <repo>/.golden-venvs: ``vllm-0.18.0``, ``vllm-0.33.0``, ``vllm-0.34.0``).
"""

from __future__ import annotations

import ast
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

import kvplan
from kvplan.cli.app import ensure_registered
from kvplan.engines.vllm.releases import era_of_release
from kvplan.verify import crosscheck as X
from kvplan.verify.compare import compare, differences

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
app = ensure_registered()
cli = CliRunner()
PEAGLE = "amazon/GPT-OSS-20B-P-EAGLE"
MML = 131072  # the goldens' max_model_len (make_goldens.py passes it explicitly)

# golden → the kvplan.simulate call that is the same scenario (policy: the vLLM release, read from
# the runner's interpreter). Hybrid (gpt-oss, gemma-3, Qwen3-Next), MLA (DeepSeek-V3), Mamba2
# (Nemotron-3-Nano), auto-fit, pipeline stages, HMA off, and failures (admission, drafter group).
SCENARIOS = {
    "gpt-oss-20b-peagle__40gib__0.34.0": ("openai/gpt-oss-20b", {"drafter": PEAGLE, "num_speculative_tokens": 5, "kv_cache_memory": "40GiB"}),
    "qwen3-next__40gib__0.33.0": ("Qwen/Qwen3-Next-80B-A3B-Thinking", {"kv_cache_memory": "40GiB", "max_model_len": MML}),
    "qwen3-next__2gib__0.34.0": ("Qwen/Qwen3-Next-80B-A3B-Thinking", {"kv_cache_memory": "2GiB", "max_model_len": MML}),
    "qwen3-next__40gib__0.18.0": ("Qwen/Qwen3-Next-80B-A3B-Thinking", {"kv_cache_memory": "40GiB", "max_model_len": MML}),
    "gemma-3-27b__40gib__0.18.0": ("google/gemma-3-27b-it", {"kv_cache_memory": "40GiB", "max_model_len": MML}),
    "deepseek-v3__40gib__0.34.0": ("deepseek-ai/DeepSeek-V3", {"kv_cache_memory": "40GiB", "max_model_len": MML}),
    "nemotron-3-nano__40gib__0.34.0": ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
                                       {"kv_cache_memory": "40GiB", "max_model_len": MML}),
    "llama-3.1-8b__autofit__4gib__0.33.0": ("meta-llama/Meta-Llama-3.1-8B", {"kv_cache_memory": "4GiB",
                                                                             "max_model_len": "auto"}),
    "gpt-oss-20b-peagle__40gib__0.17.1": ("openai/gpt-oss-20b", {"drafter": PEAGLE, "num_speculative_tokens": 5, "kv_cache_memory": "40GiB"}),
    "gemma-3-27b__pp2__40gib__0.33.0": ("google/gemma-3-27b-it", {"kv_cache_memory": "40GiB", "max_model_len": MML,
                                                                  "pipeline_parallel_size": 2}),
    "llama-4-scout__hma-off__20gib__0.18.0": ("meta-llama/Llama-4-Scout-17B-16E-Instruct",
                                              {"kv_cache_memory": "20GiB", "max_model_len": MML,
                                               "disable_hybrid_kv_cache_manager": True}),
    "gpt-oss-20b__sync-sched__40gib__0.34.0": ("openai/gpt-oss-20b", {"kv_cache_memory": "40GiB",
                                                                      "async_scheduling": False}),
}
# keys that name the case or record how it was made, not what vLLM runs
BOOKKEEPING = {"case", "layer_source", "model_runner_probe", "use_v2_model_runner"}


def golden(stem: str) -> dict:
    return json.loads((GOLDEN / f"{stem}.json").read_text())


@pytest.fixture
def recorded(monkeypatch):
    """Answer the runner with a recorded result (the boundary CI cannot cross: no vLLM here);
    the cases kvplan sent are kept for inspection."""
    sent: list[dict] = []
    calls: list[int] = []  # cases per runner process

    def use(result: dict, version: str | None = None):
        monkeypatch.setattr(X, "find_target", lambda python: X.Target("/venv/bin/python",
                                                                      version or result["vllm_version"]))

        def run_runner(target, cases):
            sent.extend(cases)
            calls.append(len(cases))
            return [result for _ in cases]

        monkeypatch.setattr(X, "run_runner", run_runner)
        monkeypatch.setattr(X, "layer_record", lambda target, model: None)  # the per-layer part: its own tests
        use.calls = calls
        return sent

    return use


def inputs(case: dict) -> dict:
    return {k: v for k, v in case.items() if k not in BOOKKEEPING}


# --------------------------------------------------------------------------- the runner


def test_the_runner_imports_nothing_from_kvplan():
    """It runs in the vLLM environment's interpreter, which need not have kvplan."""
    tree = ast.parse((ROOT / "kvplan" / "verify" / "vllm_runner.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.split(".")[0] == "kvplan"]
    assert X.RUNNER == ROOT / "kvplan" / "verify" / "vllm_runner.py"


def test_golden_scripts_use_the_packaged_runner():
    for script in ("setup_venvs.sh", "release_env.sh"):
        assert "RUNNER=$REPO/kvplan/verify/vllm_runner.py" in (ROOT / "scripts" / "golden" / script).read_text()
    assert not (ROOT / "scripts" / "golden" / "vllm_runner.py").exists()


# --------------------------------------------------------------------------- the case builder


@pytest.mark.parametrize("stem", sorted(SCENARIOS))
def test_simulate_sends_the_scenario_the_golden_recorded_and_every_field_agrees(stem, recorded):
    """kvplan simulate's own scenario, written as a runner case, is the case vLLM answered in the
    golden (same specs, Mamba alignment, budget, lengths, batch size, async scheduling, HMA,
    prefix caching, PP stages); so the recorded answer must agree with kvplan on every field."""
    g = golden(stem)
    model, kw = SCENARIOS[stem]
    sent = recorded(g["result"])
    d = kvplan.simulate(model, cross_check=True, **kw)
    assert inputs(sent[0]) == inputs(g["case"])
    assert d["inputs"]["policy"]["vllm_release"] == g["vllm_version"]  # the release read from that vLLM
    cc = d["cross_check"]
    assert cc["ran"] and cc["agree"], cc["differences"]
    assert cc["fields_agree"] == cc["fields_compared"] > 5
    assert d["outcome"]["ok"] is (g["result"]["error"] is None and (g["result"]["drafter_check"] or {}).get("ok")
                                  is not False)


def test_fields_compared_for_gpt_oss_peagle_034(recorded):
    """vLLM 0.34.0, gpt-oss-20b + P-EAGLE at 40 GiB: the start-up outcome (1), the runner it picked
    (V2, the only one in 0.34) and 2 x 8192 tokens in flight (2), 3 log lines (layout, padding,
    capacity), 2 groups x (layers, spec class, block, page) (8), max_model_len and the cache block
    size (2), worker 0's num_blocks, max concurrency, admission need and checked memory and 2 tensor
    records, one per group (6), and the global num_blocks and max concurrency (2): 24 fields."""
    sent = recorded(golden("gpt-oss-20b-peagle__40gib__0.34.0")["result"])
    d = kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=5, kv_cache_memory="40GiB", cross_check=True)
    # parallel_drafting not given: vLLM's default, False (0.34.0 drafts EAGLE heads sequentially)
    assert sent[0]["model_runner_probe"] == {"speculative_method": "eagle3", "parallel_drafting": False}
    cc = d["cross_check"]
    assert cc["fields_compared"] == cc["fields_agree"] == 24
    from kvplan.verify.crosscheck import summary_line

    assert summary_line(d.body.cross_check) == summary_line(cc) == "verified against vLLM 0.34.0: 24 fields agree"


def test_case_builder_reproduces_the_recorded_goldens_inputs():
    """scripts/golden/make_goldens.py builds its cases with the same builder from kvplan's scenario.
    Rebuilt, every golden's case is the one vLLM answered, except 3 made before the builder was
    shared, with inputs kvplan simulate does not use for that release (kept until those releases'
    environments exist again): Nemotron-3-Nano 0.11.0-0.12.0 ran with the newest era's float32 SSM
    state (kvplan simulate under those releases: bfloat16). The hybrid cases of 0.26.0/0.27.1 ran with
    prefix caching off, as those releases default (tests/golden/defaults/0.26.0, 0.27.1; the era
    chain's hybrid_prefix_caching_default is on from 0.28.0)."""
    sys.path.insert(0, str(ROOT / "scripts" / "golden"))
    import make_goldens

    cases = {c.name: c for c in make_goldens._cases()}
    differ = set()
    compared = 0
    for path in sorted(GOLDEN.glob("*__*.json")):
        name, release = path.stem.rsplit("__", 1)
        if name not in cases:
            continue
        compared += 1
        g = json.loads(path.read_text())
        mine = make_goldens.make_runner_case(cases[name], release)
        theirs = inputs(g["case"])
        if not era_of_release(release).async_scheduling_by_default and theirs.get("async_scheduling") is True:
            # made before the era chain turned async scheduling off by default up to 0.13
            # (eras.async_scheduling_by_default): those releases' layout functions do not read it (in-flight
            # batches enter in 0.26, eras.in_flight_batches), so only the input differs
            assert not era_of_release(release).in_flight_batches
            theirs = {**theirs, "async_scheduling": mine.get("async_scheduling")}
        if inputs(mine) != theirs:
            differ.add(path.stem)
    assert compared > 1000
    assert differ == {f"nemotron-3-nano__40gib__{r}" for r in ("0.11.0", "0.11.2", "0.12.0")}


def test_a_case_without_async_scheduling_compares_the_release_default():
    """differential.py --unset sends async_scheduling null; the runner answers with what the release's
    VllmConfig resolved (0.13.0: SchedulerConfig.async_scheduling = False; 0.14.0: None, turned on), and
    that answer is compared with kvplan's default for the release (eras.async_scheduling_by_default)."""
    from kvplan.verify.compare import mismatches

    for release, default in (("0.13.0", False), ("0.14.1", True)):
        g = json.loads((GOLDEN / f"llama-3.1-8b__40gib__{release}.json").read_text())
        g["case"]["async_scheduling"] = None
        assert mismatches({**g, "result": {**g["result"], "async_scheduling": default}}) == []
        assert mismatches({**g, "result": {**g["result"], "async_scheduling": not default}}) == [
            f"async_scheduling: kvplan {default!r} != vLLM {not default!r}"]


# --------------------------------------------------------------------------- perturbed answers


def _perturb(result: dict, where: str) -> dict:
    r = copy.deepcopy(result)
    if where == "workers[0].num_blocks":
        r["workers"][0]["num_blocks"] -= 1
    elif where == "groups[1].layers":
        r["groups"][1]["layer_names"].pop()
    elif where == "groups[0].page_size_bytes":
        r["groups"][0]["spec"]["page_size_bytes"] *= 2
    elif where == "logs[2]":
        r["logs"][2]["message"] = r["logs"][2]["message"].replace("8.88x", "8.87x")
    elif where == "workers[0].kv_cache_tensors[1]":
        r["workers"][0]["kv_cache_tensors"][1]["layer_stride"] += 32768
    elif where == "max_concurrency":
        r["max_concurrency"] *= 1 + 1e-9
    elif where == "error":
        r["error"] = {"type": "ValueError", "message": "No available memory for the cache blocks.", "where": None}
    elif where == "model_runner":
        r["model_runner"]["use_v2_model_runner"] = False
    return r


PERTURBED = ["workers[0].num_blocks", "groups[1].layers", "groups[0].page_size_bytes", "logs[2]",
             "workers[0].kv_cache_tensors[1]", "max_concurrency", "error", "model_runner"]


@pytest.mark.parametrize("where", PERTURBED)
def test_a_perturbed_answer_shows_exactly_that_field(where, recorded):
    g = golden("gpt-oss-20b-peagle__40gib__0.34.0")
    recorded(_perturb(g["result"], where))
    d = kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=5, kv_cache_memory="40GiB", cross_check=True,
                        require_agreement=True)
    cc = d["cross_check"]
    assert [x["field"] for x in cc["differences"]] == [where]
    assert cc["agree"] is False and cc["fields_agree"] == cc["fields_compared"] - 1
    assert d["outcome"]["ok"] is False
    assert d["checks_failed"] == [f"--require-agreement: 1 field differs from vLLM 0.34.0: {where}"]


def test_perturbed_values_are_reported_both_ways(recorded):
    g = golden("gpt-oss-20b-peagle__40gib__0.34.0")
    recorded(_perturb(g["result"], "workers[0].num_blocks"))
    d = kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=5, kv_cache_memory="40GiB", cross_check=True)
    # 40 GiB // (16 layers per group x 131,072-byte pages: 64-token blocks, 0.34.0's default) = 20,480 blocks
    # (kvplan, and the golden); the perturbed answer says 20,479
    assert d["cross_check"]["differences"] == [{"field": "workers[0].num_blocks", "kvplan": 20480, "vllm": 20479}]
    assert d["outcome"]["ok"] is True  # differences alone do not fail without --require-agreement


def test_compare_on_plans_directly():
    """The comparison itself: a golden's plan against its own answer agrees; the 0.33 era against
    0.34's answer differs where the releases differ (the admission hint's wording, a log line)."""
    from kvplan.engines.vllm.releases import era_of_release
    from kvplan.verify.case import plan_from_case

    g = golden("qwen3-next__2gib__0.34.0")
    assert differences(compare(plan_from_case(g["case"], era_of_release("0.34.0")), g["result"])) == []
    other = differences(compare(plan_from_case(g["case"], era_of_release("0.33.0")), g["result"]))
    assert [c.field for c in other] == ["error"]
    assert "Decreasing `max_model_len` also reduces what is needed" in other[0].vllm
    assert "Decreasing `max_model_len` also reduces" not in other[0].kvplan


# --------------------------------------------------------------------------- the CLI


def _argv(*extra: str) -> list[str]:
    return ["simulate", "openai/gpt-oss-20b", "--drafter", PEAGLE, "--num-speculative-tokens", "5", "--kv-cache-memory", "40GiB", "--cross-check",
            "--vllm-python", sys.executable, *extra]


def test_cli_require_agreement_exits_3_and_names_the_field(recorded, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    g = golden("gpt-oss-20b-peagle__40gib__0.34.0")
    recorded(_perturb(g["result"], "groups[1].layers"))
    r = cli.invoke(app, _argv("--require-agreement"))
    assert r.exit_code == 3
    assert "groups[1].layers" in r.stdout
    assert "cross-check against vLLM 0.34.0: 1 of 24 fields differ (groups[1].layers)" in r.stdout
    # gpt-oss-20b's 12 full layers + P-EAGLE's 4 (registered as layers 24-27) vs the answer without the last
    assert "16 layers: 1-23/2, 24-27" in r.stdout and "15 layers: 1-23/2, 24-26" in r.stdout
    assert "Check failed: --require-agreement: 1 field" in (r.stdout + r.stderr)

    r = cli.invoke(app, _argv("--require-agreement", "--format", "json"))
    assert r.exit_code == 3
    d = json.loads(r.stdout)
    assert [x["field"] for x in d["cross_check"]["differences"]] == ["groups[1].layers"]
    jsonschema.validate(d, json.loads((ROOT / "docs" / "schema" / "simulate.json").read_text()))


def test_cli_agreement_is_one_line_and_exit_0(recorded):
    recorded(golden("gpt-oss-20b-peagle__40gib__0.34.0")["result"])
    r = cli.invoke(app, _argv("--require-agreement"))
    assert r.exit_code == 0, r.stdout
    assert "verified against vLLM 0.34.0: 24 fields agree" in r.stdout
    assert "not verified: the per-layer specs themselves" in r.stdout


def test_could_not_cross_check_is_one_line_never_a_crash(tmp_path):
    """This interpreter has no vLLM (CI): the real version probe says so; the simulation still
    answers (exit 0), and --require-agreement turns it into exit 3."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("this interpreter has vLLM")
    r = cli.invoke(app, _argv())
    assert r.exit_code == 0
    assert f"could not cross-check: vLLM is not installed in {sys.executable}" in r.stdout
    r = cli.invoke(app, _argv("--require-agreement", "--format", "json"))
    assert r.exit_code == 3
    d = json.loads(r.stdout)
    assert d["cross_check"]["ran"] is False and d["checks_failed"] == [
        f"--require-agreement: could not cross-check: vLLM is not installed in {sys.executable}"]


def test_a_failing_runner_is_reported_in_one_line(monkeypatch):
    """The runner really runs (this interpreter, told it has vLLM 0.34.0) and fails importing
    vLLM's modules: one "could not cross-check" line naming the error, no traceback."""
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("this interpreter has vLLM")
    monkeypatch.setattr(X, "find_target", lambda python: X.Target(sys.executable, "0.34.0"))
    d = kvplan.simulate("openai/gpt-oss-20b", kv_cache_memory="40GiB", cross_check=True)
    cc = d["cross_check"]
    assert cc["ran"] is False
    # the runner's first vLLM call reads the release from the package metadata (Python 3.10+ wording)
    assert cc["reason"] == ("could not cross-check: vLLM 0.34.0 failed: importlib.metadata.PackageNotFoundError: "
                            "No package metadata was found for vllm")
    assert "\n" not in cc["reason"] and d["outcome"]["ok"] is True


def test_vllm_python_that_is_not_an_interpreter_is_an_error(tmp_path):
    r = cli.invoke(app, ["simulate", "openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--cross-check",
                         "--vllm-python", str(tmp_path / "nope")])
    assert r.exit_code == 1
    assert r.stderr.startswith(f"Error: --vllm-python: no executable interpreter at {tmp_path / 'nope'}")
    # a name the file system refuses (ENAMETOOLONG: over 255 bytes) is the same error, not an internal one
    r = cli.invoke(app, ["simulate", "openai/gpt-oss-20b", "--kv-cache-memory", "40GiB", "--cross-check",
                         "--vllm-python", "x" * 300])
    assert r.exit_code == 1
    assert r.stderr.startswith("Error: --vllm-python: no executable interpreter at xxx")


def test_config_time_failures_are_not_sent_to_vllm(recorded):
    """0.33's V1 runner (parallel drafting, given, needs it) refuses async scheduling with PP at
    config time: vLLM's planning functions never run, so there is nothing to compare."""
    sent = recorded(golden("gpt-oss-20b-peagle__40gib__0.33.0")["result"])
    d = kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=5, kv_cache_memory="40GiB", cross_check=True,
                        pipeline_parallel_size=2, async_scheduling=True, policy="vllm==0.33.0", parallel_drafting=True)
    assert d["outcome"]["stage"] == "config" and sent == []
    assert d["cross_check"]["reason"].startswith("could not cross-check: the deployment fails at config time")


def test_cache_answers_the_second_run_without_vllm(tmp_path, monkeypatch, recorded):
    monkeypatch.delenv("KVPLAN_NO_CACHE", raising=False)
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path))
    sent = recorded(golden("gpt-oss-20b-peagle__40gib__0.34.0")["result"])
    first = kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=5, kv_cache_memory="40GiB", cross_check=True)
    second = kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=5, kv_cache_memory="40GiB", cross_check=True)
    assert len(sent) == 1 and [first["cross_check"]["cached"], second["cross_check"]["cached"]] == [False, True]
    assert len(list((tmp_path / "cross-check").glob("*.json"))) == 1
    assert first["cross_check"]["differences"] == second["cross_check"]["differences"] == []


# --------------------------------------------------------------------------- kvplan check


def test_check_cross_check_entry(tmp_path, recorded):
    g = golden("gpt-oss-20b-peagle__40gib__0.34.0")
    recorded(_perturb(g["result"], "workers[0].num_blocks"))
    f = tmp_path / "d.yaml"
    f.write_text("deployments:\n"
                 "  - name: seen\n    model: openai/gpt-oss-20b\n    drafter: amazon/GPT-OSS-20B-P-EAGLE\n    num_speculative_tokens: 5\n"
                 "    kv_cache_memory: 40GiB\n    cross_check: true\n"
                 "  - name: gated\n    model: openai/gpt-oss-20b\n    drafter: amazon/GPT-OSS-20B-P-EAGLE\n    num_speculative_tokens: 5\n"
                 "    kv_cache_memory: 40GiB\n    require_agreement: true\n")
    d = kvplan.check([str(f)])
    assert recorded.calls == [2]  # one vLLM process for both deployments
    seen, gated = d["deployments"]
    assert seen["status"] == "pass" and gated["status"] == "fail"
    assert seen["policy"] == gated["policy"] == "vllm==0.34.0"
    assert gated["failed_expectations"] == ["cross_check"]
    assert [x["field"] for x in gated["cross_check"]["differences"]] == ["workers[0].num_blocks"]
    assert seen["expectations"][-1]["message"].startswith("cross-check against vLLM 0.34.0: 1 of 24 fields differ")
    jsonschema.validate(d, json.loads((ROOT / "docs" / "schema" / "check.json").read_text()))


# --------------------------------------------------------------------------- real vLLM (skipped in CI)

VENVS = Path(os.environ.get("KVPLAN_VLLM_VENVS", ROOT / ".golden-venvs"))


def _venv(release: str) -> Path:
    py = VENVS / f"vllm-{release}" / "bin" / "python"
    if not py.exists():
        pytest.skip(f"no vLLM {release} venv at {py.parent.parent}")
    return py


@pytest.mark.parametrize("release", ["0.18.0", "0.33.0", "0.34.0"])
def test_end_to_end_against_a_real_vllm(release, tmp_path):
    """The acceptance command, run for real (a fresh cache, so vLLM's functions run)."""
    py = _venv(release)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KVPLAN_CACHE_DIR": str(tmp_path)}
    env.pop("KVPLAN_NO_CACHE", None)
    r = subprocess.run([sys.executable, "-m", "kvplan.cli", "simulate", "openai/gpt-oss-20b", "--drafter", PEAGLE, "--num-speculative-tokens", "5",
                        "--kv-cache-memory", "40GiB", "--cross-check", "--vllm-python", str(py), "--format", "json"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    d = json.loads(r.stdout)
    cc = d["cross_check"]
    assert cc["ran"], cc["reason"]
    assert cc["vllm_version"] == release and d["inputs"]["policy"]["vllm_release"] == release
    assert cc["agree"], cc["differences"]
    # 0.18.0: P-EAGLE's layers fit one group (16/16 split): the engine starts (reference §11)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- per-layer specs (issue 23)

ARCH_GOLDEN = ROOT / "tests" / "golden" / "architectures" / "0.34.0"


def _with_layers(monkeypatch, recorded, record):
    recorded(golden("gpt-oss-20b-peagle__40gib__0.34.0")["result"])
    monkeypatch.setattr(X, "layer_record", lambda target, model: record)
    return kvplan.simulate("openai/gpt-oss-20b", drafter=PEAGLE, num_speculative_tokens=5, kv_cache_memory="40GiB",
                           cross_check=True)["cross_check"]


def test_cross_check_compares_every_layer_spec_with_vllms_model_class(monkeypatch, recorded):
    """--cross-check also builds the served config's model class in the checked vLLM (arch_runner.py,
    recorded here by the architecture golden) and compares every layer's spec."""
    rec = json.loads((ARCH_GOLDEN / "GptOssForCausalLM.json").read_text())
    cc = _with_layers(monkeypatch, recorded, rec)
    assert cc["agree"] and cc["differences"] == []
    assert any(n.startswith("per-layer specs: vLLM 0.34.0's") for n in cc["scope"]["notes"])
    n_layers = len(rec["layers"])
    plain = _with_layers(monkeypatch, recorded, None)
    assert cc["fields_compared"] == plain["fields_compared"] + n_layers


def test_cross_check_names_a_layer_spec_that_differs(monkeypatch, recorded):
    rec = json.loads((ARCH_GOLDEN / "GptOssForCausalLM.json").read_text())
    first = rec["layers"][0][1]
    rec["spec_table"][first]["num_kv_heads"] += 1
    cc = _with_layers(monkeypatch, recorded, rec)
    assert not cc["agree"]
    fields = [d["field"] for d in cc["differences"]]
    assert "layer_specs[0]" in fields and all(f.startswith("layer_specs[") for f in fields)


def test_cross_check_layers_not_built_is_a_note(monkeypatch, recorded):
    cc = _with_layers(monkeypatch, recorded, {"status": "failed", "reason": "construct: no CUDA"})
    assert cc["agree"] and any("per-layer specs not compared" in n for n in cc["scope"]["notes"])
