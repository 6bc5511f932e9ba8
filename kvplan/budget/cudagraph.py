"""The CUDA graphs a rank captures, from each release's code, and their memory, calibrated.

**Which batch sizes a release captures** (derived; ``vllm/config``'s ``_set_cudagraph_sizes``, the model's own
override in ``model_executor/models/config.py``), for ``R`` = max_num_seqs, ``T`` = max_num_batched_tokens::

    0.10.1-0.11.1   [1, 2, 4] + 8, 16, … ≤ min(2R, 512)           (scheduler cuda_graph_sizes = [min(2R, 512)];
                                                                    0.11.0 config/__init__.py:571-586)
    0.11.2+         M = min(2R·q, 512) (q = 1 + speculative tokens from 0.13.0, 1 before), M = min(M, T);
                    [1, 2, 4] + 8, 16, … < 256 + 256, 272, … ≤ M  (0.19.0 config/vllm.py:1399-1441)
    0.20.2+         … and T itself when T ≤ M                       (0.22.1 config/vllm.py, "max_num_tokens not in")
    0.28.0+         M's ceiling 1024 on a data-center Blackwell card (compute capability 10.x; 0.29.0 vllm.py:2006)

every size filtered to ≤ T. GptOss overrides the ceiling: 992 in 0.10.1-0.11.1 (81 sizes, 0.11.0
models/config.py:255-272), 1024 from 0.11.2 (83 sizes, 0.19.0 models/config.py:120-130). A checked case:
vLLM 0.19.0 logged 51 sizes for Llama-3.1-8B (R 1024, T 8192) and 83 for gpt-oss-20b (tests/logs/budget,
llm-d-planner-v0.19.0), as this rule gives.

**Sizes given** (``--max-cudagraph-capture-size N``, ``--cudagraph-capture-sizes S…``, or the same keys of
``--compilation-config``; ``tests/golden/cudagraph/capture_sizes.json`` holds what each release's own
``_set_cudagraph_sizes`` returns for them, run on CPU by ``scripts/golden/capture_sizes.py``)::

    0.10.1-0.11.1   no max_cudagraph_capture_size; the scheduler's --cuda-graph-sizes: one value N is the grid's top
                    ([1, 2, 4] + 8, 16, … ≤ N, multiples of 8 only; gpt-oss raises N < 992 to its 992 grid),
                    several are captured as given, sorted, repeats kept; each ≤ T
                    (0.11.0 config/__init__.py:593-613, models/config.py:260-270)
    0.11.2+         S given: set(S) filtered to ≤ T, sorted (0.11.2 config/vllm.py:863-875; 0.29.0 vllm.py:2101-2113);
                    N given (no S): the default grid up to min(N, T) (0.11.2 vllm.py:850-855, 877-890), T appended
                    from 0.20.2 when T ≤ N (0.20.2 vllm.py:1527-1531); the release's own ceiling and gpt-oss's 1024
                    apply only when neither is given (0.29.0 models/config.py:414-419);
                    both given: N must be the largest size ≤ T, else vLLM's ValueError (0.11.2 vllm.py:911,
                    0.29.0 vllm.py:2171; ``prechecks.check_cudagraph_sizes``)

**Performance mode** (``--performance-mode``, 0.17.0+): interactivity replaces the grid's 1, 2, 4 by every size
1 … min(M, 32) when no sizes are given (0.17.0 config/vllm.py:1404-1408, 0.20.2 vllm.py:1508-1512, 0.29.0
vllm.py:2114-2118, 0.34.0 vllm.py:2472-2476; run on CPU in the golden); throughput changes no size here, it doubles
the default max_num_seqs and max_num_batched_tokens (``SchedulerInput.batch_sizes``). Not modelled: 0.34's wide
split grids (``prefill_cudagraph_capture_grid`` / ``varlen_decode_cudagraph_capture_grid``' dense head), used only
with a prefill/decode capture ceiling given.

0.34's split into prefill token sizes and decode request sizes (``_split_cudagraph_capture_sizes``) keeps, for the
sizes given, one prefill size per size and a decode size per size ≤ max_num_seqs: the count below. Not modelled:
with a drafter, the sizes' rounding to multiples of 1 + k (``CompilationConfig.adjust_cudagraph_sizes_for_spec_decode``).

**How many graphs**: the release's default CUDA-graph mode captures a piecewise graph per size (PIECEWISE: 0.10.x,
``CompilationConfig`` default) and, from 0.11.0 (FULL_AND_PIECEWISE: 0.11.0 config/__init__.py:362-367, the -O2
default of 0.19.0 config/vllm.py:215), also a full graph per uniform-decode size (sizes ≤ R·q). ``--enforce-eager``
(``--cudagraph-memory 0``) captures none.

**The mode given** (``--optimization-level``, 0.12.0+; ``--compilation-config``'s ``cudagraph_mode``): -O0 NONE (no
graphs, as ``--enforce-eager``), -O1 PIECEWISE (a piecewise graph per size only), -O2 (the default) and -O3
FULL_AND_PIECEWISE, each release's ``OPTIMIZATION_LEVEL_TO_CONFIG`` (``resolved_mode``; run on CPU in the golden);
a mode given is kept, except under -O0: NONE up to 0.29, refused from 0.30 (the mode's full part is kept there,
or all of it with breakable CUDA graphs).
A checked case: 0.29.0 ``--optimization-level=1 --max-cudagraph-capture-size=179`` (tests/logs/budget 122): 25 sizes,
25 piecewise graphs (50 under the default mode).

**Their memory** cannot be measured on a CPU (the graphs' private pools and the driver's instantiated graphs): it is
calibrated on the calibration half of tests/logs/budget from what the logs print ("Graph capturing finished in N secs,
took X GiB"), per graph as ``a + b · layers on the rank`` (``scripts/calibrate_budget.py``, ``calibration.json``
``cudagraph``), the band the fitted cases' smallest and largest ratio of logged to fitted, per card family where it has
at least 3 start-ups, else every start-up's (widened, said so in the term's source).
No torch here.
"""

from __future__ import annotations

from kvplan.version import version_key

PIECEWISE, FULL_AND_PIECEWISE, NONE = "PIECEWISE", "FULL_AND_PIECEWISE", "NONE"
GPT_OSS = "GptOssForCausalLM"


def _grid(ceiling: int, *, interactivity: bool = False) -> list[int]:
    """vLLM's default grid up to ``ceiling``: 1, 2, 4 (``interactivity``: every size 1 … min(ceiling, 32)),
    multiples of 8 below 256, multiples of 16 from 256."""
    head = range(1, min(ceiling, 32) + 1) if interactivity else (1, 2, 4)
    sizes = [i for i in head if i <= ceiling]
    sizes += list(range(8, min(ceiling + 1, 256), 8))
    sizes += list(range(256, ceiling + 1, 16))
    return sizes


def capture_sizes(release: str | None, *, max_num_seqs: int, max_num_batched_tokens: int,
                  num_speculative_tokens: int = 0, architecture: str = "",
                  compute_capability: tuple[int, int] | None = None,
                  max_cudagraph_capture_size: int | None = None,
                  cudagraph_capture_sizes: tuple[int, ...] | None = None,
                  performance_mode: str | None = None) -> list[int]:
    """The batch sizes the release captures CUDA graphs for: by default, or from ``--max-cudagraph-capture-size``
    and ``--cudagraph-capture-sizes`` (before 0.11.2 the scheduler's ``--cuda-graph-sizes``) as given (the rules of
    the module docstring). A release before 0.11.2 has no max_cudagraph_capture_size: not read there (the engine's
    checks refuse it in one line, ``kvplan.engines.vllm.prechecks.check_cudagraph_sizes``). ``performance_mode``
    interactivity (0.17.0+; refused before, ``prechecks.check_performance_mode``) widens the grid's head to every
    size up to 32 when no sizes are given."""
    v, R, T = (version_key(release or "") or (99,)), max_num_seqs, max_num_batched_tokens
    given = list(cudagraph_capture_sizes) if cudagraph_capture_sizes is not None else None
    if v < (0, 11, 2):
        graph_sizes = given or [min(2 * R, 512)]  # SchedulerConfig's default (0.11.0 config/scheduler.py:226-227)
        if len(graph_sizes) == 1 and architecture == GPT_OSS and graph_sizes[0] < 992:
            sizes = [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 993, 16))
        elif len(graph_sizes) == 1:
            sizes = [1, 2, 4] + list(range(8, graph_sizes[0] + 1, 8))
        else:
            sizes = sorted(graph_sizes)  # kept as given, repeats included (init_with_cudagraph_sizes)
        return [s for s in sizes if s <= T]
    if given is not None:
        return sorted(s for s in set(given) if s <= T)
    q = 1 + num_speculative_tokens if v >= (0, 13) else 1
    if max_cudagraph_capture_size is not None:
        top = max_cudagraph_capture_size
    else:
        ceiling = 1024 if v >= (0, 28) and compute_capability is not None and compute_capability[0] == 10 else 512
        top = 1024 if architecture == GPT_OSS else min(2 * R * q, ceiling)
    top = min(top, T)
    sizes = _grid(top, interactivity=performance_mode == "interactivity" and v >= (0, 17))
    if v >= (0, 20, 2) and T <= top and T not in sizes:
        sizes.append(T)
    return sorted(s for s in set(sizes) if s <= T)


def default_mode(release: str | None) -> str:
    """The release's default CUDA-graph mode: PIECEWISE in 0.10.x, FULL_AND_PIECEWISE from 0.11.0."""
    return PIECEWISE if (version_key(release or "") or (99,)) < (0, 11) else FULL_AND_PIECEWISE


# -O0 ... -O3's CUDA-graph mode (``OPTIMIZATION_LEVEL_0N["compilation_config"]["cudagraph_mode"]``: 0.12.0
# config/vllm.py:114, 129, 144, 159; 0.19.0 vllm.py:177-234; 0.29.0 vllm.py:255-324; 0.34.0 vllm.py:297-360); run on
# CPU through each release's ``_apply_optimization_level_defaults`` in tests/golden/cudagraph/capture_sizes.json
LEVEL_MODE = {0: NONE, 1: PIECEWISE, 2: FULL_AND_PIECEWISE, 3: FULL_AND_PIECEWISE}
# the modes whose graph count kvplan derives (given as --compilation-config's cudagraph_mode)
READ_MODES = (NONE, PIECEWISE, FULL_AND_PIECEWISE)


def resolved_mode(release: str | None, *, optimization_level: int | None = None,
                  cudagraph_mode: str | None = None) -> str:
    """The CUDA-graph mode vLLM resolves: the compilation config's ``cudagraph_mode`` as given, else the
    optimization level's (0.12.0+, ``_apply_optimization_level_defaults`` fills only a mode left unset), else the
    release's default. -O0 leaves the compilation mode NONE, and any mode other than NONE without VLLM_COMPILE is
    overridden to NONE (0.12.0 config/vllm.py:631-658; 0.29.0 vllm.py:1458-1480). From 0.30.0 that override keeps a
    given mode's full part (``_normalize_piecewise_cudagraph_mode``: FULL_AND_PIECEWISE -> FULL_DECODE_ONLY, and none
    of it with breakable CUDA graphs, on by default for some architectures): -O0 with a mode given is refused there."""
    if optimization_level == 0:  # a mode given with -O0 from 0.30.0: refused (prechecks.check_optimization_level)
        return NONE
    if cudagraph_mode is not None:
        return cudagraph_mode
    if optimization_level is not None:
        return LEVEL_MODE[optimization_level]
    return default_mode(release)


def graph_count(release: str | None, sizes: list[int], *, max_num_seqs: int, num_speculative_tokens: int = 0,
                mode: str | None = None) -> int:
    """The graphs captured on a rank under ``mode`` (the release's default when None): none under NONE, a piecewise
    graph per size, and under FULL_AND_PIECEWISE a full graph per uniform-decode size (≤ max_num_seqs · q) too."""
    mode = mode or default_mode(release)
    if mode == NONE:
        return 0
    if mode == PIECEWISE:
        return len(sizes)
    q = 1 + num_speculative_tokens
    return len(sizes) + sum(1 for s in sizes if s <= max_num_seqs * q)


def fitted_bytes(fit: dict, graphs: int, layers: int) -> int:
    """The graphs' memory on a rank by the calibrated per-graph cost: ``graphs · (a + b · layers)``."""
    return round(graphs * (fit["per_graph_bytes"] + fit["per_graph_per_layer_bytes"] * layers))


def ratio_band(fit: dict, family: str) -> dict:
    """The band's ratios (logged over fitted) for a card family: its own where it has enough start-ups, else
    every start-up's (``widened``)."""
    own = (fit.get("families") or {}).get(family)
    if own is not None:
        return {**own, "group": family, "widened": False}
    if fit.get("band_from") == "cuda":  # a platform's line through fewer than 3 configurations: no residual of its own
        return {**fit["pooled"], "group": f"the CUDA cards' spread: {fit['configurations']} configurations of this "
                "platform fix its line but not its band", "widened": False}
    return {**fit["pooled"], "group": "every card", "widened": True}
