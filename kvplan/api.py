"""kvplan's library API: one function per command, each returning the command's result record
(``kvplan.results.envelope.Envelope``): typed attributes, ``.to_dict()`` exactly the dict that
``kvplan <command> --format json`` prints (the record is that dict too).

Options are keyword arguments named as the long flags with underscores, with raw values
(``kv_cache_memory="40GiB"``, ``max_model_len="128k"``) or typed ones (``tensor_parallel_size=2``);
each is parsed by its entry in kvplan.options, as the command line parses it::

    import kvplan
    r = kvplan.simulate("openai/gpt-oss-20b", drafter="amazon/GPT-OSS-20B-P-EAGLE",
                        kv_cache_memory="40GiB", policy="vllm-1.5")
    r.outcome.starts, r.body.plan.grouping.group_size, r.body.plan.memory.max_concurrency
    r["outcome"]["starts"], r["grouping"]["group_size"], r["memory"]["max_concurrency"]  # the same, as JSON data

Bad input raises kvplan.errors.KvplanError (the CLI's exit 1); a predicted engine failure is
a result (``outcome.ok`` False; the CLI's exit 3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.results.envelope import Envelope


def inspect(model: str, **options) -> Envelope:
    """The per-layer KV specs vLLM would register (``kvplan inspect``)."""
    from kvplan.usecases.inspect import inspect as run

    return run(model, **options)


def simulate(model: str, **options) -> Envelope:
    """vLLM's grouping, padding, memory, concurrency and start-up outcome (``kvplan simulate``)."""
    from kvplan.usecases.simulate import simulate as run

    return run(model, **options)


def sweep(model: str, thresholds: str, **options) -> Envelope:
    """``kvplan simulate --sweep-threshold THRESHOLDS``: the layout under each grouping threshold."""
    from kvplan.usecases.simulate import sweep as run

    return run(model, thresholds, **options)


def vllm_serve(args=None, *, line: str | None = None, **options) -> Envelope:
    """A ``vllm serve`` line simulated as ``simulate`` does (``kvplan vllm``): ``args`` are the
    words after ``vllm serve`` (model first), or ``line`` one pasted command (``vllm serve ...``,
    ``python -m vllm.entrypoints.openai.api_server ...``, ``docker run ... vllm/vllm-openai:TAG ...``).
    ``options`` are kvplan's own (``gpu``, ``policy``, ...). The result is simulate's envelope plus
    ``serve``: the release read, the flag list used and what kvplan did with every flag."""
    from kvplan.usecases.serve import vllm_serve as run

    return run(args, line=line, **options)


def pd_pair(prefill_line: str, decode_line: str, **options) -> Envelope:
    """A prefill/decode pair: both pasted ``vllm serve`` lines simulated, then the KV connector's pair rules
    (``kvplan vllm --line PREFILL --decode-line DECODE``)."""
    from kvplan.usecases.disagg import pd_pair as run

    return run(prefill_line, decode_line, **options)


def compare(model: str, **options) -> Envelope:
    """vLLM eras and proposals, SGLang, TensorRT-LLM and llama.cpp side by side (``kvplan compare``)."""
    from kvplan.usecases.compare import compare as run

    return run(model, **options)


def fit(model: str, **options) -> Envelope:
    """What fits on a GPU (``kvplan fit``)."""
    from kvplan.usecases.fit import fit as run

    return run(model, **options)


def gpus() -> Envelope:
    """The GPU presets (``kvplan fit --list-gpus``)."""
    from kvplan.usecases.fit import gpus as run

    return run()


def check(files, **kwargs) -> Envelope:
    """Run the deployments files' expectations (``kvplan check``)."""
    from kvplan.usecases.check import check as run

    return run(files, **kwargs)


def models() -> Envelope:
    """The bundled catalog (``kvplan models``)."""
    from kvplan.model import list_catalog
    from kvplan.results import outcome
    from kvplan.results.models import CatalogRow, ModelsBody
    from kvplan.usecases.envelope import envelope

    return envelope("models", outcome=outcome(ok=True), body=ModelsBody(tuple(CatalogRow(**m) for m in list_catalog())))


def policies() -> Envelope:
    """vLLM releases, their eras, what changed at each boundary and the proposals
    (``kvplan policies``); the body is ``kvplan.engines.vllm.releases.policies()``."""
    from kvplan.engines.vllm.releases import policies as release_policies
    from kvplan.results import outcome
    from kvplan.usecases.envelope import envelope

    return envelope("policies", outcome=outcome(ok=True), body=release_policies())


def explain_log(text_or_path: str, **options) -> Envelope:
    """Read a vLLM start-up log (a file path, ``-`` for standard input, or the log text itself),
    rebuild the deployment, re-simulate it with the logged release, set each logged figure beside
    kvplan's and name the traps (``kvplan explain-log``). Options: ``model``, ``drafter`` and
    ``policy`` override what the log says."""
    from kvplan.usecases.explain_log import explain_log as run

    return run(text_or_path, **options)



def pd_pair_from_file(file: str, **options) -> Envelope:
    """A manifest's prefill and decode workers as a P/D pair (``kvplan vllm --file F --pd``)."""
    from kvplan.usecases.disagg import pd_pair_from_file as run

    return run(file, **options)


def export(model: str | None = None, *, to: str, **options) -> Envelope:
    """The deployment's exact KV pool in a simulator's or router's input format (``kvplan export``):
    ``to`` is mocker, blis, llmd-sim or llmd-router; the deployment is ``model`` with options, or
    ``line``, ``file`` or ``check`` (``kvplan.usecases.intake.read_deployment``)."""
    from kvplan.usecases.export import export as run

    return run(model, to=to, **options)


def diff(model: str | None = None, *, from_release: str, to_release: str, max_loss: float | None = None,
         **options) -> Envelope:
    """A deployment under two vLLM releases: every figure that changes and the era decision behind
    each (``kvplan diff``)."""
    from kvplan.usecases.diff import diff as run

    return run(model, from_release=from_release, to_release=to_release, max_loss=max_loss, **options)


def emit(model: str | None = None, *, as_: str, **options) -> Envelope:
    """A deployment kvplan simulated to start, written as ``as_`` (serve, compose, k8s,
    production-stack, dynamo, ray) (``kvplan emit``)."""
    from kvplan.usecases.emit import emit as run

    return run(model, as_=as_, **options)


def live_check(files, urls, *, tolerance: float = 0.0) -> Envelope:
    """Running vLLM servers' /metrics beside kvplan's prediction for their deployments (``kvplan check --live``)."""
    from kvplan.usecases.live import live_check as run

    return run(files, urls, tolerance=tolerance)


COMMANDS = ("inspect", "simulate", "sweep", "vllm_serve", "pd_pair", "pd_pair_from_file", "compare", "fit", "gpus",
            "check", "models", "policies", "explain_log", "export", "diff", "emit", "live_check")
