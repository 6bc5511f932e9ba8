"""--max-cudagraph-capture-size and --cudagraph-capture-sizes: the capture sizes and graph count they give
(kvplan/budget/cudagraph.py), against what each release's own ``VllmConfig._set_cudagraph_sizes`` returned on CPU
(tests/golden/cudagraph/capture_sizes.json, written by scripts/golden/capture_sizes.py), and their way in from a serve
line."""

import json
import re
from pathlib import Path

import pytest

import kvplan
from kvplan.budget.cudagraph import capture_sizes, graph_count, resolved_mode
from kvplan.errors import EngineFailure, KvplanError, OptionError

GOLDEN = json.loads((Path(__file__).parent / "golden" / "cudagraph" / "capture_sizes.json").read_text())  # noqa: E501


def _points():
    for release, points in GOLDEN["releases"].items():
        for p in points:
            yield pytest.param(release, p, id=f"{release}-{p['R']}-{p['T']}-{p.get('max_cudagraph_capture_size')}-"
                               f"{len(p.get('cudagraph_capture_sizes') or [])}-O{p.get('optimization_level')}-"
                               f"{p.get('cudagraph_mode')}-{p.get('performance_mode')}")


def test_the_golden_covers_each_rule():
    """One release per rule range: 0.10.1-0.11.1 (scheduler --cuda-graph-sizes), 0.11.2-0.20.0, 0.20.2+ (T
    appended), 0.34 (the prefill/decode split)."""
    assert {"0.10.1", "0.11.0", "0.11.2", "0.20.0", "0.20.2", "0.29.0", "0.34.0"} <= set(GOLDEN["releases"])


@pytest.mark.parametrize("release,point", list(_points()))
def test_capture_sizes_match_the_release_code(release, point):
    from types import SimpleNamespace

    from kvplan.engines.vllm import get_era
    from kvplan.engines.vllm.prechecks import check_cudagraph_sizes
    from kvplan.version import version_key

    given = point.get("cudagraph_capture_sizes")
    kw = dict(max_num_seqs=point["R"], max_num_batched_tokens=point["T"],
              max_cudagraph_capture_size=point.get("max_cudagraph_capture_size"),
              cudagraph_capture_sizes=tuple(given) if given is not None else None,
              performance_mode=point.get("performance_mode"))
    options = SimpleNamespace(max_num_batched_tokens=point["T"], cudagraph_capture_sizes=kw["cudagraph_capture_sizes"],
                              max_cudagraph_capture_size=kw["max_cudagraph_capture_size"])
    era = get_era(f"vllm=={release}")  # the engine's own era of the release
    error = point.get("error")
    level, mode = point.get("optimization_level"), point.get("cudagraph_mode")
    if level is not None or mode is not None:
        _check_the_mode(release, point, kw, era)
        return
    if point.get("performance_mode") is not None and error is not None:  # the probe's own refusal: no field then
        from kvplan.engines.vllm.prechecks import check_performance_mode

        assert error == "TypeError: no performance_mode before 0.17.0" and version_key(release) < (0, 17)
        with pytest.raises(OptionError, match=f"--performance-mode: vllm=={release} has no such flag"):
            check_performance_mode(SimpleNamespace(performance_mode=point["performance_mode"]), era)
        return
    if error is not None and version_key(release) < (0, 11, 2):  # the probe's own refusal: no such field then
        assert error.startswith("TypeError: no max_cudagraph_capture_size")
        with pytest.raises(OptionError, match=f"--max-cudagraph-capture-size: vllm=={release} has no such flag"):
            check_cudagraph_sizes(options, era)
        return
    if error is not None:  # the release's ValueError, word for word
        with pytest.raises(EngineFailure) as e:
            check_cudagraph_sizes(options, era)
        assert f"{e.value.error_type}: {e.value.message}" == error
        return
    check_cudagraph_sizes(options, era)
    sizes = capture_sizes(release, **kw)
    assert sizes == point["sizes"]
    if "decode_cudagraph_capture_request_sizes" in point:  # 0.34: a piecewise graph per prefill size, a full per decode
        assert graph_count(release, sizes, max_num_seqs=point["R"]) == \
            len(point["prefill_cudagraph_capture_token_sizes"]) + len(point["decode_cudagraph_capture_request_sizes"])


def test_the_o3_probe_captures_ten_graphs():
    """tests/logs/budget/102-…-probe-e-o3-v0.29.0.log: MAX_CUDAGRAPH_CAPTURE_SIZE=16, max_num_seqs 256, 2048 batched
    tokens on 0.29.0. The grid up to min(16, 2048) = 16 is 1, 2, 4, 8, 16 (16 < 2048: T not appended); under
    FULL_AND_PIECEWISE each gets a piecewise graph and, all being ≤ 256 decode requests, a full one: 10 graphs. The
    default counted 86: 51 sizes (1, 2, 4; 8-248 by 8: 31; 256-512 by 16: 17) + the 35 of them ≤ 256."""
    sizes = capture_sizes("0.29.0", max_num_seqs=256, max_num_batched_tokens=2048, max_cudagraph_capture_size=16)
    assert sizes == [1, 2, 4, 8, 16] and graph_count("0.29.0", sizes, max_num_seqs=256) == 10
    default = capture_sizes("0.29.0", max_num_seqs=256, max_num_batched_tokens=2048)
    assert len(default) == 51 and graph_count("0.29.0", default, max_num_seqs=256) == 86
    # gpt-oss's 1024 ceiling applies only when neither flag is given (0.29.0 models/config.py:414-419)
    assert capture_sizes("0.29.0", max_num_seqs=256, max_num_batched_tokens=2048, max_cudagraph_capture_size=16,
                         architecture="GptOssForCausalLM") == [1, 2, 4, 8, 16]
    # 0.11.0's --cuda-graph-sizes 16 is the grid's top; gpt-oss lifts one value below 992 to its 81-size grid
    assert capture_sizes("0.11.0", max_num_seqs=256, max_num_batched_tokens=8192,
                         cudagraph_capture_sizes=(16,)) == [1, 2, 4, 8, 16]
    assert len(capture_sizes("0.11.0", max_num_seqs=256, max_num_batched_tokens=8192, cudagraph_capture_sizes=(16,),
                             architecture="GptOssForCausalLM")) == 81


def _graphs_of(d: dict) -> str:
    """"N graphs" of the budget's CUDA-graph term ("… N graphs × (a MiB + b MiB × L layers) …")."""
    found = re.findall(r"(\d+ graphs) ×", d["budget"]["cudagraph_basis"])
    assert len(found) == 1, d["budget"]["cudagraph_basis"]
    return found[0]


SERVE = ["Qwen/Qwen3-8B", "--max-num-seqs", "256", "--max-num-batched-tokens", "2048"]


def test_the_serve_line_flags_reach_the_budget():
    """--max-cudagraph-capture-size, --cudagraph-capture-sizes and --compilation-config's keys each give the
    o3 probe's 10 graphs on 0.29.0 (86 without), and the memory the budget subtracts shrinks with them."""
    base = kvplan.vllm_serve(SERVE, gpu="H100-80GB", policy="vllm==0.29.0")
    assert _graphs_of(base) == "86 graphs"
    for extra in (["--max-cudagraph-capture-size", "16"], ["--cudagraph-capture-sizes", "1", "2", "4", "8", "16"],
                  ["--compilation-config", '{"max_cudagraph_capture_size": 16}'],
                  ["--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4, 8, 16]}']):
        d = kvplan.vllm_serve([*SERVE, *extra], gpu="H100-80GB", policy="vllm==0.29.0")
        assert _graphs_of(d) == "10 graphs", extra
        assert 0 < d["budget"]["cudagraph_bytes"] < base["budget"]["cudagraph_bytes"]
        assert d["budget"]["kv_cache_memory_bytes"] > base["budget"]["kv_cache_memory_bytes"]
        rows = [r for r in d["serve"]["flags"] if r["dest"] in ("max_cudagraph_capture_size", "cudagraph_capture_sizes",
                                                                  "compilation_config")]
        assert rows and all(r["effect"] == "applied" for r in rows), rows
    # the option itself, as the library and a deployments file take it
    d = kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB", policy="vllm==0.29.0", max_num_seqs=256,
                        max_num_batched_tokens=2048, cudagraph_capture_sizes="1,2,4,8,16")
    assert _graphs_of(d) == "10 graphs"


def test_the_serve_line_flags_refused_where_vllm_refuses_them():
    with pytest.raises(KvplanError, match="mutually exclusive"):
        kvplan.vllm_serve([*SERVE, "--max-cudagraph-capture-size", "16", "--compilation-config",
                           '{"max_cudagraph_capture_size": 32}'], gpu="H100-80GB", policy="vllm==0.29.0")
    with pytest.raises(OptionError, match="--max-cudagraph-capture-size: vllm==0.11.0 has no such flag "
                                          r"\(from 0.11.2\)"):
        kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB", policy="vllm==0.11.0", max_cudagraph_capture_size=16)
    # both given, inconsistent: vLLM's ValueError at config time (the engine does not start)
    d = kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB", policy="vllm==0.29.0", max_num_batched_tokens=2048,
                        max_cudagraph_capture_size=32, cudagraph_capture_sizes=[1, 2, 4, 16])
    assert d["outcome"]["starts"] is False
    assert d["outcome"]["error"] == ("customized max_cudagraph_capture_size(=32) should be consistent with the max "
                                     "value of cudagraph_capture_sizes(=16)")


def test_the_scheduler_spelling_of_0_11_0():
    """0.11.0's --cuda-graph-sizes (SchedulerConfig.cuda_graph_sizes) is kvplan's cudagraph_capture_sizes there: one
    value 16 is the grid's top, 1, 2, 4, 8, 16 (0.11.0 config/__init__.py:593-613, run in the golden: the 96 point),
    each with a piecewise and (FULL_AND_PIECEWISE from 0.11.0, all ≤ 256 requests) a full graph: 10."""
    d = kvplan.vllm_serve([*SERVE, "--cuda-graph-sizes", "16"], gpu="H100-80GB", policy="vllm==0.11.0")
    assert _graphs_of(d) == "10 graphs"
    row = next(r for r in d["serve"]["flags"] if r["dest"] == "cuda_graph_sizes")
    assert (row["effect"], row["applied_as"]) == ("applied", "cudagraph_capture_sizes")


def _check_the_mode(release: str, point: dict, kw: dict, era) -> None:
    """A point with -O and/or cudagraph_mode: kvplan's refusal where the release has no optimization_level field, else
    the mode it resolves, the sizes, and the graphs under that mode (0.34: the piecewise graphs are the prefill sizes',
    the full ones the decode sizes')."""
    from types import SimpleNamespace

    from kvplan.engines.vllm.prechecks import check_optimization_level
    from kvplan.version import version_key

    level, mode = point.get("optimization_level"), point.get("cudagraph_mode")
    options = SimpleNamespace(optimization_level=level, cudagraph_mode=mode)
    if level == 0 and mode is not None and version_key(release) >= (0, 30):
        # 0.30+ keeps the mode's full part (the golden: PIECEWISE -> NONE, FULL_AND_PIECEWISE -> FULL_DECODE_ONLY with
        # breakable CUDA graphs off; on by default for some architectures, when the piecewise part stays): refused
        assert point["resolved_mode"] in ("NONE", "FULL_DECODE_ONLY")
        with pytest.raises(OptionError, match=f"--optimization-level 0 with cudagraph_mode {mode}: not modelled"):
            check_optimization_level(options, era)
        return
    if point.get("error") is not None:
        assert point["error"] == "TypeError: no optimization_level before 0.12.0"
        with pytest.raises(OptionError, match=f"--optimization-level: vllm=={release} has no such flag "
                                              r"\(from 0.12.0\)"):
            check_optimization_level(options, era)
        return
    check_optimization_level(options, era)
    resolved = resolved_mode(release, optimization_level=level, cudagraph_mode=mode)
    assert resolved == point["resolved_mode"]
    graphs = graph_count(release, capture_sizes(release, **kw), max_num_seqs=point["R"], mode=resolved)
    if resolved == "NONE":  # no graphs: vLLM leaves no capture sizes
        assert point["sizes"] == [] and graphs == 0
        return
    assert capture_sizes(release, **kw) == point["sizes"]
    prefill = point.get("prefill_cudagraph_capture_token_sizes", point["sizes"])
    decode = point.get("decode_cudagraph_capture_request_sizes",
                       [s for s in point["sizes"] if s <= point["R"]])
    assert graphs == len(prefill) + (len(decode) if resolved == "FULL_AND_PIECEWISE" else 0)


def test_the_golden_covers_each_level():
    """Each -O level from 0.12.0 (the first release with the field), and its refusal before."""
    for release in ("0.11.2", "0.12.0", "0.29.0", "0.34.0"):
        levels = {p["optimization_level"] for p in GOLDEN["releases"][release] if "optimization_level" in p}
        assert levels == {0, 1, 2, 3}, release


def test_the_eval_best_case_captures_25_piecewise_graphs():
    """tests/logs/budget/122-…-eval-best-no-mtp-v0.29.0.log: --optimization-level=1 --max-cudagraph-capture-size=179,
    451 sequences, 16384 batched tokens on 0.29.0 ("Truncating max_cudagraph_capture_size to 176"): the grid up to
    179 is 1, 2, 4 and 8 … 176 by 8 (3 + 22 = 25 sizes); -O1 is PIECEWISE (0.29.0 config/vllm.py:278), a graph per
    size: 25, where the default -O2 (FULL_AND_PIECEWISE) adds a full graph per size ≤ 451: 50."""
    sizes = capture_sizes("0.29.0", max_num_seqs=451, max_num_batched_tokens=16384, max_cudagraph_capture_size=179)
    assert len(sizes) == 25 and sizes[-1] == 176
    assert graph_count("0.29.0", sizes, max_num_seqs=451, mode=resolved_mode("0.29.0", optimization_level=1)) == 25
    assert graph_count("0.29.0", sizes, max_num_seqs=451) == 50
    # from a serve line: the o3 probe's 5 sizes (1, 2, 4, 8, 16; test_the_o3_probe_captures_ten_graphs) give 5
    # piecewise graphs under -O1 or cudagraph_mode PIECEWISE, 10 under -O2 / -O3
    for extra, graphs in ((["--optimization-level", "1"], "5 graphs"), (["-O1"], "5 graphs"), (["-O3"], "10 graphs"),
                          (["--compilation-config", '{"cudagraph_mode": "PIECEWISE"}'], "5 graphs")):
        d = kvplan.vllm_serve([*SERVE, "--max-cudagraph-capture-size", "16", *extra], gpu="H100-80GB",
                              policy="vllm==0.29.0")
        assert _graphs_of(d) == graphs, extra
        row = next(r for r in d["serve"]["flags"] if r["dest"] in ("optimization_level", "compilation_config"))
        assert row["effect"] == "applied", row


def test_O0_and_the_level_before_0_12():
    """-O0 captures no graphs (the budget's term 0, as --enforce-eager's): on the V1 runner nothing is left for the
    warm-up check; on 0.29.0's default V2 runner only its warm-up pass beyond the profile's activation peak
    (kvplan.budget.profile.warmup_pass_bytes: 1,024 requests · 151,936 · 18.127 B + 8 = 2,820,243,333 B, less the
    activation; the sampler's low end equals its value there, so the activation's low end is the figure shown);
    --optimization-level refused in one line before 0.12.0, where vLLM has no such field."""
    d = kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB", policy="vllm==0.29.0", optimization_level=0)
    assert d["budget"]["cudagraph_bytes"] == 0
    assert d["budget"]["band"]["warmup_need_bytes"] == 2_820_243_333 - d["budget"]["activation_peak_bytes"]
    v1 = kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB", policy="vllm==0.29.0", optimization_level=0,
                         model_runner="v1")
    assert v1["budget"]["cudagraph_bytes"] == 0 and v1["budget"]["band"]["warmup_need_bytes"] == 0
    with pytest.raises(OptionError, match=r"--optimization-level: vllm==0.11.2 has no such flag \(from 0.12.0\)"):
        kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB", policy="vllm==0.11.2", optimization_level=1)


def test_performance_mode_from_the_serve_line():
    """--performance-mode on 0.29.0, Qwen3-8B on an H100 (defaults 8192 tokens, 1024 sequences; M = min(2·1024, 512)
    = 512, the 51-size grid, each ≤ 1024 requests so a piecewise and a full graph: 102).
    interactivity: the grid's head 1, 2, 4 becomes 1 … 32, 25 sizes more (the 32 less 1, 2, 4, 8, 16, 24, 32): 76
    sizes, 152 graphs (0.29.0 config/vllm.py:2114-2118; the golden's interactivity points).
    throughput: the default batch sizes doubled, 16384 and 2048 (0.29.0 engine/arg_utils.py:2904-2909), in the budget
    and in the scheduler figures; the grid stays 512's (M's ceiling), 102 graphs; a batch size given is kept.
    balanced: as without the flag. Before 0.17.0 the flag does not exist: refused in one line."""
    base = kvplan.vllm_serve(["Qwen/Qwen3-8B"], gpu="H100-80GB", policy="vllm==0.29.0")
    assert (base["scheduler"]["max_num_batched_tokens"], base["scheduler"]["max_num_seqs"]) == (8192, 1024)
    assert _graphs_of(base) == "102 graphs"
    inter = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--performance-mode", "interactivity"], gpu="H100-80GB",
                              policy="vllm==0.29.0")
    assert _graphs_of(inter) == "152 graphs"
    assert inter["budget"]["cudagraph_bytes"] > base["budget"]["cudagraph_bytes"]
    thr = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--performance-mode", "throughput"], gpu="H100-80GB",
                            policy="vllm==0.29.0")
    for part in ("scheduler", "budget"):
        assert (thr[part]["max_num_batched_tokens"], thr[part]["max_num_seqs"]) == (16384, 2048), part
    assert _graphs_of(thr) == "102 graphs"
    row = next(r for r in thr["serve"]["flags"] if r["dest"] == "performance_mode")
    assert (row["effect"], row["applied_as"]) == ("applied", "performance_mode")
    given = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--performance-mode", "throughput", "--max-num-seqs", "256"],
                              gpu="H100-80GB", policy="vllm==0.29.0")
    assert (given["scheduler"]["max_num_batched_tokens"], given["scheduler"]["max_num_seqs"]) == (16384, 256)
    bal = kvplan.vllm_serve(["Qwen/Qwen3-8B", "--performance-mode=balanced"], gpu="H100-80GB", policy="vllm==0.29.0")
    assert bal["budget"]["kv_cache_memory_bytes"] == base["budget"]["kv_cache_memory_bytes"]
    with pytest.raises(OptionError, match=r"--performance-mode: vllm==0.16.0 has no such flag \(from 0.17.0\)"):
        kvplan.simulate("Qwen/Qwen3-8B", gpu="H100-80GB", policy="vllm==0.16.0", performance_mode="throughput")
