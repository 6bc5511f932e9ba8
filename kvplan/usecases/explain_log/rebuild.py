"""From a log's facts to the deployment it describes, and kvplan's re-simulation of it.

The release line gives the policy (``vllm==X``); the ``non-default args`` dict and the engine
config line give the options, each read through its entry in ``kvplan.options`` (the same
parser as a flag); the available KV memory gives the budget. vLLM prints that memory rounded
to 0.01 GiB, so the budget is an interval and each figure kvplan computes is computed at both
ends as well as at the printed value. What the log does not show is listed, never filled in
silently: where kvplan has to assume a value (vllm serve's default batch size) it says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kvplan.errors import KvplanError, ModelNotFoundError, OptionError
from kvplan.logs.extract import Facts
from kvplan.options import OPTIONS, find_option
from kvplan.results import Record
from kvplan.units import GiB

if TYPE_CHECKING:
    from kvplan.engines.vllm.eras import Era
    from kvplan.usecases.pipeline import ScenarioResult

# the budget of a layout-only re-simulation (the log shows no KV memory): large enough that the
# grouping and padding, which do not depend on it, are reached
LAYOUT_ONLY_BYTES = 1 << 40
# the half-width of vLLM's 2-decimal GiB rounding
HALF_CENT_GIB = GiB // 200


@dataclass
class Budget(Record):
    bytes: int  # the printed value
    low: int
    high: int
    source: str  # the line it came from

    @property
    def exact(self) -> bool:
        return self.low == self.high

    DATA = {"kv_cache_memory_bytes": "bytes", "low_bytes": "low", "high_bytes": "high", "exact": "exact",
            "source": "source"}


@dataclass
class Deployment(Record):
    """What the log says about the deployment, as kvplan options."""

    model: str | None = None
    model_source: str | None = None
    policy: str | None = None
    policy_source: str | None = None
    options: dict = field(default_factory=dict)  # simulate keyword arguments (raw values)
    sources: dict = field(default_factory=dict)  # option -> where it came from
    budget: Budget | None = None
    assumed: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # vLLM args kvplan does not model

    @property
    def options_shown(self) -> dict:
        """The options with every value JSON can hold (others as their text)."""
        return {k: _jsonable(v) for k, v in self.options.items()}

    DATA = {"model": "model", "model_source": "model_source", "policy": "policy", "policy_source": "policy_source",
            "options": "options_shown", "option_sources": "sources", "budget": "budget", "assumed": "assumed",
            "ignored_args": "ignored"}


def _jsonable(v):
    return v if v is None or isinstance(v, (str, int, float, bool, dict, list)) else str(v)


def _where(fact) -> str:
    return f"line {fact.line}"


def _set(dep: Deployment, name: str, value, source: str) -> None:
    """Take an option's value from the log unless one is set; a value kvplan cannot read
    (an unknown kv_cache_dtype, say) is listed in ``ignored`` with the reason."""
    if name in dep.options or value is None:
        return
    opt = find_option(name)
    if opt is not None:
        try:
            opt.parse(value)
        except OptionError as e:
            dep.ignored.append(f"{name}={value!r} ({e.message})")
            return
    dep.options[name] = value
    dep.sources[name] = source


def _speculative(dep: Deployment, spec, source: str) -> None:
    if isinstance(spec, str):  # "SpeculativeConfig(method='eagle3', model='…', num_spec_tokens=3)"
        import re

        parsed = {k: v for k, v in re.findall(r"\b(\w+)=(?:'([^']*)'|\d+)", spec)}
        nums = dict(re.findall(r"\b(\w+)=(\d+)", spec))
        spec = {"method": parsed.get("method") or None, "model": parsed.get("model") or None,
                "num_speculative_tokens": int(nums["num_spec_tokens"]) if "num_spec_tokens" in nums else None}
    if not isinstance(spec, dict):
        return
    _set(dep, "drafter", spec.get("model"), source)
    method = spec.get("method")
    if method:
        _set(dep, "speculative_method", {"eagle-3": "eagle3"}.get(method, method), source)
    n = spec.get("num_speculative_tokens")
    if isinstance(n, int):
        _set(dep, "num_speculative_tokens", n, source)
    if isinstance(spec.get("parallel_drafting"), bool):  # in the non-default args; not in the config's repr
        _set(dep, "parallel_drafting", spec["parallel_drafting"], source)


def deployment(facts: Facts, *, model: str | None = None, drafter: str | None = None,
               policy: str | None = None, model_runner: str | None = None, guess=None,
               settings: dict | None = None) -> Deployment:
    """The deployment the facts describe; ``model``/``drafter``/``policy`` override the log's, and
    ``model_runner`` gives what the environment chose (VLLM_USE_V2_MODEL_RUNNER, not in a log).
    ``guess``: the release range the log's wordings and source sites show
    (``kvplan.logs.release.infer_release``), used when the log prints no version. ``settings``:
    ``--set`` (vLLM flag → value), read as serve words with the release's flag list, before the log."""
    dep = Deployment()
    if drafter:
        _set(dep, "drafter", drafter, "--drafter")
    if model_runner:
        _set(dep, "model_runner", model_runner, "--model-runner")
    lines = _Lines.of(facts)
    version = (lines.release and lines.release["version"]) or (lines.cfg and lines.cfg.values.get("version"))
    inferred = _inferred_release(guess) if not version else None
    flags_release = _release_of(version) if version else (
        lines.cmd.values.get("image_release") if lines.cmd else inferred)
    if settings:
        _serve_options(dep, _settings_words(settings, flags_release), flags_release, "--set", strict=True)
    _model(dep, lines, model, flags_release)
    _policy(dep, lines, policy, version, inferred, guess)
    _options(dep, facts, lines, flags_release)
    _workers(dep, facts)
    # the budget
    dep.budget = _budget(facts, dep)
    if "max_num_batched_tokens" not in dep.options:
        dep.assumed.append("max_num_batched_tokens: not in the log; kvplan uses vllm serve's default for an "
                           "H100/H200 (8192), which sizes the sliding-window reservation")
    return dep


@dataclass(frozen=True)
class _Lines:
    """The lines a deployment is read from (each the first of its kind, None when the log lacks it): the
    non-default args and their args, the pasted command, the engine config, the release line, "Starting to load"."""

    nda: Any
    args: dict
    cmd: Any
    cfg: Any
    release: Any
    loading: Any

    @classmethod
    def of(cls, facts: Facts) -> "_Lines":
        nda = facts.first("non_default_args")
        return cls(nda, nda["args"] if nda else {}, facts.first("serve_command"), facts.first("engine_config"),
                   facts.first("release"), facts.first("model_name"))


def _model(dep: Deployment, lines: _Lines, model: str | None, flags_release: str | None) -> None:
    """The model: as given, else the args' config source (--hf-config-path: "Name or path of the Hugging Face
    config to use. If unspecified, model name or path will be used", config/model.py 0.34.0 l. 242-244; a
    GGUF file's layout is that config's, vllm-gguf-plugin#101), the args' model (the positional model_tag),
    else the command's, the engine config's, the release line's, "Starting to load model …"."""
    nda, args, cmd, cfg, release, loading = lines.nda, lines.args, lines.cmd, lines.cfg, lines.release, lines.loading
    cmd_model = _model_of_words(list(cmd["argv"]), flags_release) if cmd is not None else None
    for value, src in ((model, "--model"), (args.get("hf_config_path"), nda and _where(nda)),
                       (args.get("model"), nda and _where(nda)),
                       (args.get("model_tag"), nda and _where(nda)), (cmd_model, cmd and _where(cmd)),
                       (cfg and cfg.values.get("model"), cfg and _where(cfg)),
                       (release and release.values.get("model"), release and _where(release)),
                       (loading and loading["model"], loading and _where(loading))):
        if isinstance(value, str) and value:
            dep.model, dep.model_source = value, src
            return


def _policy(dep: Deployment, lines: _Lines, policy: str | None, version, inferred: str | None, guess) -> None:
    """The release: as given, else the log's version, else the one its wordings show (``guess``)."""
    if policy:
        dep.policy, dep.policy_source = policy, "--policy"
    elif version:
        clean = _release_of(version)
        dep.policy = f"vllm=={clean}"
        dep.policy_source = _where(lines.release or lines.cfg)
        if clean != version:
            dep.assumed.append(f"the release: {version} is a development or pre-release build; kvplan reads it as "
                               f"{clean}'s rules")
    elif inferred:
        dep.policy = f"vllm=={inferred}"
        dep.policy_source = f"inferred: {guess.text}"
        if len(guess.releases) > 1:
            dep.assumed.append(f"the release: the log fits {guess.text}; kvplan uses the newest it models, "
                               f"{inferred} (--policy vllm==X picks another)")
    elif guess is not None and guess.releases:
        dep.assumed.append(f"the release: the log fits {guess.text}, older than any release kvplan models "
                           "(0.10.1 on); kvplan uses its default rules")


def _options(dep: Deployment, facts: Facts, lines: _Lines, flags_release: str | None) -> None:
    """Options from the non-default args (what the user typed), then the pasted command, both read by the
    project's serve reader with the logged release's flag list, then the engine config (resolved values), then
    the lines that print a figure (batched tokens, async scheduling, the backend, the length)."""
    nda, cmd, cfg = lines.nda, lines.cmd, lines.cfg
    if nda is not None:
        _serve_options(dep, _args_to_words(lines.args, flags_release, dep, _where(nda)), flags_release, _where(nda))
    if cmd is not None:
        _serve_options(dep, list(cmd["argv"]), flags_release, _where(cmd))
    if cfg is not None:
        _engine_config(dep, cfg)
    for kind, name in (("max_num_batched_tokens", "max_num_batched_tokens"), ("async_scheduling", "async_scheduling"),
                       ("attention_backend", "attention_backend")):
        f = facts.first(kind)
        if f is not None:
            _set(dep, name, f[name], _where(f))
    _length(dep, facts)
    if nda is not None and nda.values.get("partial"):
        dep.assumed.append(f"the non-default args are cut short ({_where(nda)}): the arguments after the cut "
                           "(tensor/pipeline parallel size, a drafter, …) are unknown; give them with --policy, "
                           "--drafter or the command")


def _engine_config(dep: Deployment, cfg) -> None:
    """The engine config line's resolved values (those no earlier line set)."""
    for key in ("tensor_parallel_size", "pipeline_parallel_size", "kv_cache_dtype", "enable_prefix_caching",
                "decode_context_parallel_size"):
        _set(dep, key, cfg.values.get(key), _where(cfg))
    if cfg.values.get("dtype") not in (None, "auto"):
        _set(dep, "dtype", cfg.values["dtype"], _where(cfg))
    if cfg.values.get("speculative_config"):
        _speculative(dep, cfg.values["speculative_config"], _where(cfg))


def _length(dep: Deployment, facts: Facts) -> None:
    """max_model_len from its own line, else the tokens per request of the capacity line (before the config's)."""
    if "max_model_len" not in dep.options:
        f = facts.first("max_model_len")
        if f is not None:
            _set(dep, "max_model_len", f["max_model_len"], _where(f))
    if "max_model_len" not in dep.options:
        f = facts.first("concurrency") or facts.first("capacity")
        if f is not None:
            _set(dep, "max_model_len", f["max_model_len"], f"the capacity line's tokens per request ({_where(f)})")


def _workers(dep: Deployment, facts: Facts) -> None:
    """TP from the worker prefixes ("(VllmWorker rank=3 pid=…)", "(Worker_TP3 pid=…)") when no
    line gives the tensor-parallel size: the ranks are counted, never guessed beyond them."""
    import re

    if "tensor_parallel_size" in dep.options or "pipeline_parallel_size" in dep.options:
        return
    ranks = {int(m.group(1)) for f in facts.items for m in [re.search(r"(?:rank=|_TP)(\d{1,9})\b", f.process or "")] if m}
    if len(ranks) > 1 and ranks == set(range(max(ranks) + 1)):
        dep.options["tensor_parallel_size"] = max(ranks) + 1
        dep.sources["tensor_parallel_size"] = f"the worker prefixes (ranks 0-{max(ranks)})"
        dep.assumed.append(f"tensor_parallel_size {max(ranks) + 1}: no line gives it; the log shows workers of "
                           f"ranks 0-{max(ranks)} (pipeline parallelism would look the same)")


def _inferred_release(guess) -> str | None:
    """The newest release of the inferred range that kvplan models (None: none is)."""
    from kvplan.engines.vllm.versions import VERSIONS

    if guess is None:
        return None
    modelled = [v for v in guess.releases if v in VERSIONS]
    return modelled[-1] if modelled else None


def _table(release: str | None):
    from kvplan.engines.vllm.releases import NEWEST_CHECKED, VERSIONS
    from kvplan.engines.vllm.serve_flags import flag_table

    return flag_table(release if release in VERSIONS else NEWEST_CHECKED)


def _args_to_words(args: dict, release: str | None, dep: Deployment, source: str) -> list[str]:
    """The ``non-default args`` dict (vLLM's dests) as the serve words that give it, for the
    serve reader; dests the reader would refuse or that are no serve flag are listed in
    ``dep.ignored`` instead (one line each), so the others are still read."""
    import json

    from kvplan.serve.effects import REFUSED, REFUSED_WHY, effect_of, is_default

    table = _table(release)
    words: list[str] = []
    for dest, value in args.items():
        if dest in ("model", "model_tag"):
            if isinstance(value, str) and not words[:1]:
                words.insert(0, value)
            continue
        flag = table.by_dest(dest)
        if flag is None:
            dep.ignored.append(f"{dest} (not a vllm serve flag of {table.release})")
            continue
        effect = effect_of(dest, flag.group)
        if effect is None:
            dep.ignored.append(f"{dest} (not classified by kvplan)")
            continue
        if effect == REFUSED and not is_default(dest, value):
            dep.ignored.append(f"{dest}={value!r} (not modelled: {REFUSED_WHY[dest]})")
            continue
        if isinstance(value, bool):
            if value:
                words.append(flag.flag)
            elif flag.negative:
                words.append(sorted(flag.negative)[0])
            continue
        if value is None:
            continue
        if flag.kind == "append" and isinstance(value, (list, tuple)):
            words += [flag.flag, *(str(v) for v in value)]
            continue
        words += [flag.flag, json.dumps(value) if isinstance(value, (dict, list)) else str(value)]
    return words


def _model_of_words(words: list[str], release: str | None) -> str | None:
    from kvplan.serve.args import parse_serve_args

    try:
        return parse_serve_args(words, _table(release)).model
    except OptionError:
        return None


def _settings_words(settings: dict, release: str | None) -> list[str]:
    """``--set`` as serve words; a flag the release's parser does not have is refused in one line."""
    table = _table(release)
    words: list[str] = []
    for flag, value in settings.items():
        found, hits = table.lookup(flag)
        if found is None:
            near = f" (matches {', '.join(hits[:4])})" if hits else ""
            raise OptionError(f"--set {flag.removeprefix('--').replace('-', '_')}={value}: not a vllm serve flag of "
                              f"{table.release}{near}; use vLLM's flag names, e.g. --set max_model_len=98304")
        if found.kind in ("bool", "true", "false") and value.lower() in ("true", "false", "1", "0", ""):
            on = value.lower() in ("true", "1", "")
            if on:
                words.append(found.flag)
            elif found.negative:
                words.append(sorted(found.negative)[0])
            continue
        words += [found.flag, value]
    return words


def _serve_options(dep: Deployment, words: list[str], release: str | None, source: str,
                   strict: bool = False) -> None:
    """Read ``vllm serve`` words with the project's serve reader (``kvplan.serve.read_serve``)
    and take the kvplan options it gives (first source wins); a flag it refuses makes the whole
    reading a note, the model still comes from the words."""
    from kvplan.serve import read_serve

    if not words or words[0].startswith("-"):
        words = ["(no model)", *words] if words else words
    if not words:
        return
    try:
        req = read_serve(words, policy=f"vllm=={release}" if release else None)
    except OptionError as e:
        if strict:
            raise OptionError(f"{source}: {e.message}") from None
        dep.ignored.append(f"{source}: {e.message}")
        return
    for name, value in req.options.items():
        if name != "policy":
            _set(dep, name, value, source)
    for row in req.flags:
        if row.applied_as is None and row.dest not in dep.ignored:
            dep.ignored.append(row.dest)


def _release_of(version: str) -> str:
    """``0.19.1rc1.dev301+g60995c05b`` → ``0.19.1``: the release whose rules a build follows."""
    import re

    m = re.match(r"\d+(?:\.\d+){1,3}", version)
    return m.group(0) if m else version


def _budget(facts: Facts, dep: Deployment) -> Budget | None:
    if "kv_cache_memory" in dep.options:
        b = OPTIONS["kv_cache_memory"].parse(dep.options.pop("kv_cache_memory"))
        return Budget(b, b, b, f"kv_cache_memory_bytes ({dep.sources.pop('kv_cache_memory')})")
    for kind in ("kv_cache_measured", "available_kv_memory", "kv_cache_memory_reserved", "memory_profile"):
        found = facts.all(kind)
        if found:
            key = "kv_cache_gib" if kind == "memory_profile" else "gib"
            f = min(found, key=lambda x: x[key])  # one line per worker in older releases: the smallest
            what = {"kv_cache_measured": "the extensible KV cache's size after warmup",
                    "available_kv_memory": "Available KV cache memory", "kv_cache_memory_reserved":
                    "reserved KV cache memory", "memory_profile": "the memory profile's kv_cache_size"}[kind]
            return _rounded(f[key], f"{what} ({_where(f)})")
    refused = next((x for x in facts.all("admission_error") if "available_gib" in x.values), None)
    if refused is not None:
        return _rounded(refused["available_gib"],
                        f"the admission error's available KV cache memory ({_where(refused)})")
    autofit = next((x for x in facts.all("autofit") if "available_gib" in x.values), None)
    if autofit is not None:
        return _rounded(autofit["available_gib"], f"the auto-fit line ({_where(autofit)})")
    return None


def _rounded(gib: float, source: str) -> Budget | None:
    mid = round(gib * GiB)
    if mid <= 0:
        return None  # nothing to size (vLLM's "No available memory for the cache blocks")
    return Budget(mid, max(mid - HALF_CENT_GIB, 1), mid + HALF_CENT_GIB, source)


@dataclass
class Resimulation:
    status: str  # "simulated" | "layout only" | "model not in catalog" | ...
    detail: str = ""
    scenario: Any = None  # the Scenario simulated
    result: ScenarioResult | None = None  # at the printed budget
    low: ScenarioResult | None = None  # at the interval's ends (None when exact)
    high: ScenarioResult | None = None
    era: Era | None = None


def resimulate(dep: Deployment) -> Resimulation:
    """kvplan's simulation of the deployment at the printed budget and the interval's ends."""
    from kvplan.engines.vllm import get_era
    from kvplan.usecases.pipeline import layout_of
    from kvplan.usecases.scenario import run_scenario, scenario_from

    policy = dep.policy or "vllm-latest"
    try:
        era = get_era(policy)  # the log's release: the edge where a policy name becomes an era
    except OptionError as e:
        return Resimulation("release not modelled", e.message)
    if dep.model is None:
        return Resimulation("no model", "the log names no model (no non-default args, engine config line, vllm "
                                        "serve command or 'Starting to load model' line)", era=era)
    budget = dep.budget.bytes if dep.budget is not None else LAYOUT_ONLY_BYTES
    try:
        # the logged budget is the one its sizing mode gave: the extensible flag is spent
        scenario = scenario_from(dep.model, {**dep.options, "policy": policy, "kv_cache_memory": budget,
                                             "enable_extensible_kv_cache": None})
        layout = layout_of(scenario.deployment)
    except ModelNotFoundError as e:
        return Resimulation("model not in catalog", e.message, era=era)
    except KvplanError as e:
        return Resimulation("model not supported", e.message, era=era)
    try:
        mid = run_scenario(scenario, layout=layout)
    except KvplanError as e:  # an option combination the engine model refuses (e.g. auto-fit before 0.14)
        return Resimulation("options not modelled", e.message, era=era)
    if dep.budget is None:
        return Resimulation("layout only", "the log shows no KV memory (no 'Available KV cache memory', "
                            "kv_cache_memory_bytes, admission error or auto-fit line): only the figures that do not "
                            "depend on it (grouping, padding, the hybrid manager, the drafter check) are compared",
                            scenario, mid, None, None, era)
    low = high = None
    if not dep.budget.exact:
        low = run_scenario(replace(scenario, kv_cache_memory=dep.budget.low), layout=layout)
        high = run_scenario(replace(scenario, kv_cache_memory=dep.budget.high), layout=layout)
    return Resimulation("simulated", "", scenario, mid, low, high, era)
