"""`kvplan check FILE --live URL...`: a running vLLM server's ``/metrics`` beside kvplan's
prediction for the deployment it serves, figure by figure.

Each URL is read once (``http``/``https`` only, at most ``MAX_BYTES``, ``timeout`` seconds; a URL
without a path gets ``/metrics``), parsed by ``serve.metrics`` and matched with one deployment of
the files: the one whose model (or ``served_model_name``-free id, compared case-insensitively by
its full id or its last path part) is a ``model_name`` label of the server, else the files' only
deployment. kvplan then simulates that deployment and compares:

- ``block_size``: kvplan's attention block size, as 0.34.0's EngineCore publishes it (the smallest
  block size of the prefix-cacheable groups, ``v1/engine/core.py`` lines 375-379);
- ``cache_dtype``, ``enable_prefix_caching``: the deployment's values as vLLM resolves them;
- ``gpu_memory_utilization``: when the deployment sets it or names a GPU (the budget's value);
- ``num_gpu_blocks``: when the deployment has a budget (``kv_cache_memory``, ``gpu``, ``gpu_memory``);
  within ``tolerance_pct`` (0: exact);
- ``kv_cache_size_tokens`` and ``kv_cache_max_concurrency`` (the releases that publish them): kvplan's
  group-aware capacity (``int(max_concurrency x max_model_len)``, 0.34.0 ``v1/core/kv_cache_utils.py``
  lines 1140-1163) for the server's own ``num_gpu_blocks`` when the deployment has no budget
  (``num_gpu_blocks_override`` set to it), for kvplan's pool otherwise.

A figure that disagrees makes the outcome fail (exit 3).
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlsplit, urlunsplit

from kvplan.errors import OptionError
from kvplan.results import outcome
from kvplan.results.envelope import Envelope
from kvplan.results.live import LiveBody, LiveFigure, LiveServer
from kvplan.usecases.envelope import envelope

MAX_BYTES = 16 * 1024 * 1024  # a /metrics page is tens of KiB (a few MiB with every histogram); more is refused
TIMEOUT_S = 10.0


def metrics_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise OptionError(f"--live {url}: expected an http(s) URL of a vLLM server (http://host:8000)")
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def fetch_metrics(url: str, *, timeout: float = TIMEOUT_S, max_bytes: int = MAX_BYTES) -> str:
    """The text at ``url``, read with a timeout and at most ``max_bytes`` (OptionError otherwise)."""
    import urllib.error
    import urllib.request

    target = metrics_url(url)
    request = urllib.request.Request(target, headers={"Accept": "text/plain"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http/https checked above)
            body = response.read(max_bytes + 1)
    except urllib.error.HTTPError as e:
        raise OptionError(f"--live {target}: the server answered HTTP {e.code}; expected vLLM's /metrics") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise OptionError(f"--live {target}: cannot read it ({reason})") from None
    if len(body) > max_bytes:
        raise OptionError(f"--live {target}: more than {max_bytes:,} bytes; not a vLLM /metrics page")
    return body.decode("utf-8", errors="replace")


def _matches(model: str, names: tuple[str, ...]) -> bool:
    m = model.lower().rstrip("/")
    return any(n.lower() in (m, m.rsplit("/", 1)[-1]) for n in names)


def _pick(served, deployments):
    named = [d for d in deployments if _matches(d.scenario.model, served.model_names)]
    if len(named) == 1:
        return named[0], f"model_name {', '.join(served.model_names)}"
    if len(deployments) == 1:
        return deployments[0], "the only deployment of the files"
    names = ", ".join(served.model_names) or "none"
    raise OptionError(f"--live {served.source}: serves model_name {names}; "
                      f"{'several' if named else 'none'} of the {len(deployments)} deployments match it "
                      "(give the files one deployment, or name the model as the server does)")


def _number(text: str | None):
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


def _typed(text: str):
    """A label's text as the value it stands for (a number, a bool, else the text)."""
    if text in ("True", "False"):
        return text == "True"
    try:
        return _number(text)
    except ValueError:
        return text


def _compare(figure: str, predicted, served_text: str | None, *, tolerance: float = 0.0,
             note: str | None = None) -> LiveFigure:
    if served_text is None:
        return LiveFigure(figure, predicted, None, None, "the server does not publish it")
    if predicted is None:
        return LiveFigure(figure, None, _typed(served_text), None, note or "not predicted")
    if isinstance(predicted, bool):
        served = served_text == "True"
        return LiveFigure(figure, predicted, served, predicted == served, note)
    if isinstance(predicted, (int, float)):
        served = _number(served_text)
        if isinstance(predicted, float) or isinstance(served, float):
            agrees = abs(served - predicted) <= max(abs(predicted) * tolerance / 100.0, 1e-6 * abs(predicted))
        else:
            agrees = abs(served - predicted) <= abs(predicted) * tolerance / 100.0
        return LiveFigure(figure, predicted, served, agrees, note)
    return LiveFigure(figure, predicted, served_text, str(predicted) == served_text, note)


def _has_budget(scenario) -> bool:
    return any(getattr(scenario, k, None) is not None for k in ("kv_cache_memory", "gpu", "gpu_memory"))


NOMINAL_BYTES = 80 * 1024**3  # a budget for the structure when the deployment gives none (block size, groups)


def _served_pool(scenario, run, blocks: int):
    """The deployment with the server's own pool: ``blocks`` blocks (``num_gpu_blocks_override``),
    and the KV memory that holds exactly them (blocks x bytes per block of kvplan's layout)."""
    nominal = run(replace(scenario, kv_cache_memory=NOMINAL_BYTES)) if not _has_budget(scenario) else run(scenario)
    bytes_per_block = nominal.body.memory.bytes_per_block
    return run(replace(scenario, kv_cache_memory=blocks * bytes_per_block, num_gpu_blocks_override=blocks,
                       gpu=None, gpu_memory=None))


def _figures(served, scenario, run, tolerance: float) -> tuple[LiveFigure, ...]:
    budget = _has_budget(scenario)
    blocks = _number(served.value("num_gpu_blocks"))
    if budget:
        result = run(scenario)
    elif isinstance(blocks, int) and blocks > 0:
        result = _served_pool(scenario, run, blocks)
    else:
        raise OptionError(f"--live {served.source}: the server publishes no num_gpu_blocks and the deployment "
                          "has no budget; set kv_cache_memory or gpu in the deployment")
    plan, body = result.plan, result.body
    if not plan.starts:
        f = plan.failure
        return (LiveFigure("starts", False, True, False, f"kvplan predicts a start-up failure ({f.stage}: "
                                                          f"{f.error_type}) for a server that runs"),)
    attention = [g.block_size for g in body.groups if g.kind != "mamba"] or [body.serving.block_size]
    figures = [
        _compare("block_size", min(attention), served.value("block_size"),
                 note="the smallest block size of the attention groups (0.34.0 core.py lines 375-379)"),
        _compare("cache_dtype", body.serving.kv_cache_dtype, served.value("cache_dtype")),
        _compare("enable_prefix_caching", body.scheduler.enable_prefix_caching is not False,
                 served.value("enable_prefix_caching")),
    ]
    utilization = getattr(body.budget, "gpu_memory_utilization", None) if budget else None
    if utilization is None:
        utilization = scenario.gpu_memory_utilization
    figures.append(_compare("gpu_memory_utilization", utilization, served.value("gpu_memory_utilization"),
                            note=None if utilization is not None else "the deployment sets no utilization or GPU"))
    figures.append(_compare("num_gpu_blocks", body.memory.num_blocks if budget else None,
                            served.value("num_gpu_blocks"), tolerance=tolerance,
                            note=None if budget else "the deployment has no budget (kv_cache_memory, gpu)"))
    how = None if budget else f"for the server's own {blocks:,} blocks"
    m = body.memory
    figures.append(_compare("kv_cache_size_tokens", m.kv_cache_size_tokens_concurrency_meaning,
                            served.value("kv_cache_size_tokens"), tolerance=tolerance, note=how))
    figures.append(_compare("kv_cache_max_concurrency", round(m.max_concurrency, 6),
                            served.value("kv_cache_max_concurrency"), tolerance=max(tolerance, 1e-4), note=how))
    return tuple(figures)


def live_check(files, urls, *, tolerance: float = 0.0, texts: dict[str, str] | None = None) -> Envelope:
    """Each server of ``urls`` against its deployment in ``files``. ``texts`` (URL → metrics text)
    skips the fetch (the library's caller already read them)."""
    from kvplan.usecases.check import load_deployments
    from kvplan.usecases.scenario import run_scenario

    files = [files] if isinstance(files, str) else list(files)
    if not urls:
        raise OptionError("--live: give at least one server URL")
    deployments = load_deployments(files, require_budget=False)

    def run(scenario):
        return run_scenario(scenario, fixes=False)

    from kvplan.serve.metrics import read_metrics

    servers = []
    for url in urls:
        text = (texts or {}).get(url)
        if text is None:
            text = fetch_metrics(url)
        for served in read_metrics(text, metrics_url(url)):
            d, how = _pick(served, deployments)
            figures = _figures(served, d.scenario, run, tolerance)
            agrees = all(f.agrees is not False for f in figures)
            servers.append(LiveServer(metrics_url(url), served.engine, served.model_names, d.name, how,
                                      d.scenario.policy, figures, agrees))
    ok = all(s.agrees for s in servers)
    disagree = [f"{s.url}: {f.figure} predicted {f.predicted}, served {f.served}"
                for s in servers for f in s.figures if f.agrees is False]
    return envelope("check-live", outcome=outcome(ok=ok, stage=None if ok else "live check", error="; ".join(disagree) or None),
                    body=LiveBody(tuple(files), tolerance, tuple(servers)))
