"""A ``vllm serve`` line → the kvplan options of one simulation, and how each flag was treated.

``read_serve`` picks the release (the docker image's tag, else ``--policy``, else kvplan's
default), reads the words with that release's flag list (``kvplan.serve.args``), and maps each
flag by its class (``kvplan.serve.effects``): applied flags become kvplan options, flags with no
effect on the KV cache are listed, flags that would change it but are not modelled are refused
with a one-line error naming the flag.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kvplan.engines.vllm.serve_flags import FlagTable, flag_table
from kvplan.errors import OptionError
from kvplan.results.serve import ServeFlagRow
from kvplan.serve import effects as fx
from kvplan.serve.args import Given, ParsedServe, parse_serve_args
from kvplan.serve.line import ServeLine

# speculative_config keys (vLLM 0.34.0 SpeculativeConfig fields) that leave the KV cache as it is
SPEC_NO_EFFECT = frozenset({
    "max_model_len", "revision", "code_revision", "enforce_eager", "moe_backend", "quantization",
    "disable_eagle_block_drop", "disable_lookahead_block_hashes", "draft_lm_head_quantization",
    "use_local_argmax_reduction", "prompt_lookup_max", "prompt_lookup_min", "suffix_decoding_max_tree_depth",
    "suffix_decoding_max_cached_requests", "suffix_decoding_corpus_tokens", "suffix_decoding_max_spec_factor",
    "suffix_decoding_min_token_prob", "draft_load_config", "rejection_sample_method", "synthetic_acceptance_rates",
    "synthetic_acceptance_length", "enable_adaptive_verification", "draft_sample_method", "dspark_draft_topk",
    "xpress_topc", "speculator_options", "fly_window_size", "fly_entropy_threshold", "fly_entropy_top_k",
    "disable_padded_drafter_batch", "disable_by_batch_size", "disable_log_stats", "acceptance_method",
    "posterior_threshold", "posterior_alpha", "index_share_for_mtp_iteration", "hf_overrides",
})
# methods whose draft layers kvplan builds, with vLLM's spelling → kvplan's
_NO_LAYER = {"ngram": "ngram", "[ngram]": "ngram", "ngram_gpu": "ngram", "suffix": "suffix"}


@dataclass
class ServeRequest:
    model: str
    options: dict  # kvplan option name → value, for kvplan.simulate
    flags: list[ServeFlagRow]  # one row per flag given
    env: dict  # VAR=value from the line (every name)
    release: str  # the release whose rules the line is read with
    release_source: str
    table: FlagTable
    warnings: list[str] = field(default_factory=list)
    line: ServeLine | None = None
    # why the line is not a deployment kvplan simulates (vLLM's demo server, a TPU image): `kvplan vllm` answers
    # with it (exit 1); `kvplan check` shows it beside the entry's result
    refused: str | None = None


def _text(value: Any) -> Any:
    return value if isinstance(value, (bool, list)) or value is None else str(value)


def choose_release(line: ServeLine | None, policy: str | None) -> tuple[str | None, str, str, list[str]]:
    """``(policy, release, how, warnings)``: the image tag names the release; ``--policy`` wins
    over it (with a warning when they differ); else kvplan's default policy."""
    from kvplan.engines.vllm import get_era
    from kvplan.engines.vllm.releases import NEWEST_CHECKED

    warnings: list[str] = []
    if line is not None and (line.form == "docker" or line.image is not None):  # docker run, or a manifest's image
        tag = line.image_tag or "latest"
        if line.image_release is not None:
            from kvplan.engines.vllm.versions import VERSIONS, version_key
            from kvplan.serve.line import tag_is_prerelease

            release = line.image_release
            oldest = next(iter(VERSIONS))
            how = f"image tag {tag}"
            if version_key(release) < version_key(oldest):
                warnings.append(f"image tag {tag} is vLLM {release}, older than every release kvplan models; "
                                f"assuming {oldest}'s flags and rules (the oldest kvplan knows), which may "
                                f"differ from {release}'s")
                release, how = oldest, f"image tag {tag} (assumed {oldest})"
            elif tag_is_prerelease(tag):
                warnings.append(f"image tag {tag} is a pre-release of vLLM {release}: read with {release}'s "
                                "flags and rules")
            tagged = f"vllm=={release}"
            if policy is not None and policy != tagged:
                warnings.append(f"--policy {policy} given: it replaces the image tag's release ({line.image}: "
                                f"{tagged})")
            else:
                era = get_era(tagged)
                return tagged, era.release or release, how, warnings
        elif policy is None:
            what = "an NGC container tag (its vLLM release is in NVIDIA's release notes)" if _ngc(line) \
                else "no release"
            warnings.append(f"image tag '{tag}' names {what}: assuming the newest release kvplan checked, "
                            f"vllm=={NEWEST_CHECKED}; give --policy vllm==X to read it as another")
            return f"vllm=={NEWEST_CHECKED}", NEWEST_CHECKED, f"image tag {tag} (newest checked)", warnings
    era = get_era(policy or "vllm-latest")
    release = era.stands_for
    how = "--policy" if policy else ("installed vLLM" if era.release_note == "installed" else "kvplan's default")
    return policy, release, how, warnings


def _ngc(line: ServeLine) -> bool:
    return bool(line.image and line.image.startswith("nvcr.io/"))


def _spec_method(raw: Any) -> str:
    m = str(raw).strip().lower()
    if m in _NO_LAYER:
        return _NO_LAYER[m]
    if m == "mtp" or m.endswith("_mtp"):
        return "mtp"
    if m in ("eagle", "eagle3", "draft_model"):
        return m
    raise OptionError(f"--speculative-config: method {raw!r} is not modelled by kvplan "
                      "(eagle, eagle3, mtp and its *_mtp aliases, draft_model, ngram, suffix are)")


def _kvplan_flag_abbreviating(g: Given) -> str | None:
    """When a flag on the serve line is one of kvplan's own options written where vLLM reads it as the
    prefix of one of its flags (argparse's allow_abbrev: 0.34.0's parser reads ``--gpu H100-80GB`` as
    ``--gpu-memory-utilization`` and fails "argument --gpu-memory-utilization/--device-memory-utilization:
    Value H100-80GB cannot be converted to <class 'float'>", run with scripts/golden's release
    environment), what vLLM makes of it; else None."""
    from kvplan.options import VLLM_SERVE, options_for

    if g.option in g.flag.options or not g.option.startswith("--"):
        return None
    if g.option not in {f for o in options_for(VLLM_SERVE) for f in o.flags}:
        return None
    full = next((o for o in g.flag.options if o.startswith(g.option)), g.flag.options[0])
    return f"vLLM's {full} (vLLM's parser takes a flag's unambiguous prefix)"


class _Reader:
    def __init__(self, parsed: ParsedServe, table: FlagTable):
        self.parsed, self.table = parsed, table
        self.options: dict[str, Any] = {}
        self.rows: list[ServeFlagRow] = []
        self.warnings: list[str] = []
        self.spec: dict[str, Any] = {}
        self.spec_from: list[str] = []
        self.from_compilation: set[str] = set()  # options --compilation-config set (kvplan's of the same name)

    def row(self, g: Given, effect: str, applied_as: str | None = None, note: str | None = None) -> None:
        self.rows.append(ServeFlagRow(g.option, _text(g.value), g.flag.dest, effect, applied_as, note, g.origin))

    def set(self, name: str, value: Any) -> None:
        from kvplan.options import OPTIONS

        self.options[name] = OPTIONS[name].parse(value)

    def read(self) -> None:
        for g in self.parsed.given:
            dest = g.flag.dest
            effect = fx.effect_of(dest, g.flag.group)
            if effect is None:
                raise OptionError(f"{g.option}: kvplan has not classified this flag of vllm serve {self.table.release}; "
                                  "it cannot say whether it changes the KV cache")
            if effect == fx.REFUSED:
                if fx.is_default(dest, g.value):
                    self.row(g, fx.NO_EFFECT, note="the default value")
                    continue
                if dest == "kv_cache_dtype_skip_layers":  # decided once --kv-cache-dtype is known
                    self.skip_layers = g
                    continue
                raise OptionError(f"{g.option}: not modelled by kvplan ({fx.REFUSED_WHY[dest]}); "
                                  "drop it to simulate without it")
            if effect == fx.NO_EFFECT:
                self.row(g, fx.NO_EFFECT)
            elif effect == fx.ESTIMATE:
                if not self._no_graphs(g) and not self._compilation_sizes(g):
                    self.row(g, fx.ESTIMATE, note=f"{fx.ESTIMATE_WHY[dest]}: not read by kvplan's budget estimate")
            elif (name := fx.option_of(dest)) is not None and dest not in fx.HANDLED:
                if name in self.from_compilation:
                    raise OptionError(f"{g.option}: {name} and compilation_config.{name} are mutually exclusive "
                                      "(vLLM's rule); give it once")
                value = g.value if g.value is not None else None
                mine = _kvplan_flag_abbreviating(g)
                try:
                    self.set(name, value)
                except OptionError as e:
                    if mine:  # kvplan's --gpu after `serve`: vLLM reads it as --gpu-memory-utilization
                        raise OptionError(f"{g.option} after `serve` is {mine}; put kvplan's {g.option} before "
                                          f"`serve` (kvplan vllm {g.option} {_text(g.value)} --line '…')") from None
                    raise OptionError(f"{g.option}: {e.message.split(': ', 1)[-1]}") from None
                if mine:
                    self.warnings.append(f"{g.option} {_text(g.value)} after `serve` is {mine}; kvplan's own "
                                         f"{g.option} goes before `serve`")
                self.row(g, fx.APPLIED, name)
            else:
                getattr(self, f"_h_{dest}", self._h_default)(g)
        self._finish_spec()
        self._finish_skip_layers()

    def _finish_skip_layers(self) -> None:
        """--kv-cache-dtype-skip-layers keeps the named layers' KV in the model dtype: with
        kv_cache_dtype auto every layer is in the model dtype already (no effect); with another
        cache dtype it is kvplan's --kv-cache-dtype-skip-layers (the values comma-joined)."""
        g = getattr(self, "skip_layers", None)
        if g is None:
            return
        dtype = str(self.options.get("kv_cache_dtype") or "auto")
        if dtype == "auto":
            self.row(g, fx.NO_EFFECT, note="kv_cache_dtype auto: every layer's KV is in the model dtype already")
            return
        values = g.value if isinstance(g.value, (list, tuple)) else str(g.value).split()
        self.set("kv_cache_dtype_skip_layers", ",".join(str(v) for v in values))
        self.row(g, fx.APPLIED, "kv_cache_dtype_skip_layers")

    # ---------------------------------------------------------------- handlers
    def _h_default(self, g: Given) -> None:  # model, config: read by parse_serve_args
        self.row(g, fx.APPLIED, None, fx.HANDLED[g.flag.dest])

    def _json(self, g: Given) -> dict:
        if isinstance(g.value, dict):
            return g.value
        from kvplan.readfile import loads_json

        try:
            data = loads_json(g.value)
        except (TypeError, ValueError) as e:
            raise OptionError(f"{g.option}: not valid JSON ({getattr(e, 'msg', e)}); quote it, e.g. "
                              f"{g.option} '{{\"method\": \"eagle3\", ...}}'") from None
        if not isinstance(data, dict):
            raise OptionError(f"{g.option}: expected a JSON object")
        return data

    def _h_speculative_config(self, g: Given) -> None:
        data = self._json(g)
        for key, value in data.items():
            if key in ("method", "model", "num_speculative_tokens"):
                self.spec[key] = value
            elif key in ("draft_tensor_parallel_size", "tensor_parallel_size"):
                self.spec[key] = value
            elif key == "parallel_drafting":
                self.set("parallel_drafting", value)
            elif key in ("kv_cache_dtype", "attention_backend",
                         "draft_decode_context_parallel_size"):
                self.spec[key] = value
            elif key in SPEC_NO_EFFECT:
                continue
            else:
                self.warnings.append(f"{g.option}: key {key!r} is not modelled by kvplan (it may change the "
                                     "drafter's KV cache or the tokens proposed per step); simulated without it")
        self.spec_from.append(g.option)
        self.row(g, fx.APPLIED, "drafter, speculative_method, num_speculative_tokens"
                 + (", parallel_drafting" if "parallel_drafting" in data else ""))

    def _spec_key(self, g: Given, key: str) -> None:
        if key in self.spec and self.spec_from:
            raise OptionError(f"{g.option} and --speculative-config['{key}'] are mutually exclusive (vLLM's rule)")
        self.spec[key] = g.value
        self.spec_from.append(g.option)
        self.row(g, fx.APPLIED, f"speculative_config.{key}")

    def _h_spec_method(self, g: Given) -> None:
        self._spec_key(g, "method")

    def _h_spec_model(self, g: Given) -> None:
        self._spec_key(g, "model")

    def _h_spec_tokens(self, g: Given) -> None:
        self._spec_key(g, "num_speculative_tokens")

    _h_speculative_model = _h_spec_model

    def _h_num_speculative_tokens(self, g: Given) -> None:
        self._spec_key(g, "num_speculative_tokens")

    def _h_kv_events_config(self, g: Given) -> None:
        self._json(g)
        self.set("kv_events", True)
        self.row(g, fx.APPLIED, "kv_events", "vLLM turns the hybrid manager off when --kv-events-config is set "
                 "(before vLLM PR #37688)")

    def _h_enforce_eager(self, g: Given) -> None:
        if g.value:
            self.options.setdefault("cudagraph_memory", 0)
            self.row(g, fx.APPLIED, "cudagraph_memory", "no CUDA graphs are captured: 0 bytes reserved")
        else:
            self.row(g, fx.NO_EFFECT, note="the default")

    def _no_graphs(self, g: Given) -> bool:
        """A --compilation-config with cudagraph_mode NONE or no capture sizes: no CUDA graphs, as --enforce-eager
        (-O0: ``_h_optimization_level``)."""
        dest, none = g.flag.dest, False
        if dest == "compilation_config":
            data = self._json(g)
            none = str(data.get("cudagraph_mode", "")).upper().removeprefix("CUDAGRAPHMODE.") == "NONE" or \
                data.get("cudagraph_capture_sizes") == []
        if none:
            self.options.setdefault("cudagraph_memory", 0)
            self.row(g, fx.APPLIED, "cudagraph_memory", "no CUDA graphs are captured: 0 bytes reserved")
        return none

    def _compilation_sizes(self, g: Given) -> bool:
        """``--compilation-config``'s ``cudagraph_capture_sizes`` and ``max_cudagraph_capture_size`` (0.11.2+) are
        kvplan's options of those names: vLLM merges its flags into the same CompilationConfig fields and refuses a
        field given both ways ("... and compilation_config.... are mutually exclusive", 0.11.2
        engine/arg_utils.py:1745-1770). Its ``cudagraph_mode`` (every release: 0.10.1 config/compilation.py:226)
        PIECEWISE or FULL_AND_PIECEWISE is kvplan's ``cudagraph_mode`` (NONE: ``_no_graphs``). Its other keys
        (compile sizes, FULL and FULL_DECODE_ONLY modes) are not read."""
        from kvplan.engines.vllm.versions import version_key

        if g.flag.dest != "compilation_config":
            return False
        data = self._json(g)
        keys = [k for k in ("cudagraph_capture_sizes", "max_cudagraph_capture_size") if data.get(k) is not None] \
            if version_key(self.table.release) >= version_key("0.11.2") else []
        mode = str(data.get("cudagraph_mode", "")).upper().removeprefix("CUDAGRAPHMODE.")
        if mode in ("PIECEWISE", "FULL_AND_PIECEWISE"):
            data = {**data, "cudagraph_mode": mode}
            keys.append("cudagraph_mode")
        for key in keys:
            if key in self.options:
                raise OptionError(f"{g.option}: {key} and compilation_config.{key} are mutually exclusive "
                                  "(vLLM's rule); give it once")
            try:
                self.set(key, data[key])
            except OptionError as e:
                raise OptionError(f"{g.option}: {key}: {e.message.split(': ', 1)[-1]}") from None
            self.from_compilation.add(key)
        if keys:
            self.row(g, fx.APPLIED, ", ".join(keys), "its other keys (compilation, other CUDA-graph modes) are not "
                     "read by kvplan's budget estimate")
        return bool(keys)

    def _h_optimization_level(self, g: Given) -> None:
        """``--optimization-level`` / ``-O`` (0.12.0+; the serve-flag list has it from there): kvplan's
        ``optimization_level``, the CUDA-graph mode its level table sets; -O0 captures no graphs, as --enforce-eager
        (``cudagraph_memory`` 0, the same override)."""
        try:
            self.set("optimization_level", str(g.value).strip())
        except OptionError as e:
            raise OptionError(f"{g.option}: {e.message.split(': ', 1)[-1]}") from None
        if self.options["optimization_level"] == 0:
            self.options.setdefault("cudagraph_memory", 0)
            self.row(g, fx.APPLIED, "optimization_level, cudagraph_memory", "no CUDA graphs are captured: 0 bytes "
                     "reserved")
        else:
            self.row(g, fx.APPLIED, "optimization_level")

    def _h_attention_config(self, g: Given) -> None:
        data = self._json(g)
        backend = data.get("backend")
        if backend is not None:
            self.set("attention_backend", str(backend))
        self.row(g, fx.APPLIED if backend is not None else fx.NO_EFFECT,
                 "attention_backend" if backend is not None else None)

    def _h_eplb_config(self, g: Given) -> None:
        """``--eplb-config`` (EPLBConfig, vllm/config/parallel.py): its ``num_redundant_experts`` is kvplan's
        ``--num-redundant-experts``; the other keys (window, step interval, policy, communicator) change when
        experts move, not how many each rank holds."""
        data = self._json(g)
        n = data.get("num_redundant_experts")
        if n is not None:
            self.set("num_redundant_experts", n)
        self.row(g, fx.APPLIED if n is not None else fx.NO_EFFECT, "num_redundant_experts" if n is not None else None)

    # ---------------------------------------------------------------- speculative decoding
    def _finish_spec(self) -> None:
        if not self.spec:
            return
        s = self.spec
        tp = int(self.options.get("tensor_parallel_size") or 1)
        for key in ("draft_tensor_parallel_size", "tensor_parallel_size"):
            if s.get(key) is not None and int(s[key]) != tp:
                raise OptionError(f"--speculative-config: {key} {s[key]} differs from the target's "
                                  f"tensor_parallel_size {tp}; kvplan models a drafter sharded like its target")
        dcp = int(self.options.get("decode_context_parallel_size") or 1)
        if s.get("draft_decode_context_parallel_size") not in (None, dcp):
            raise OptionError("--speculative-config: draft_decode_context_parallel_size differs from the target's; "
                              "not modelled by kvplan")
        for key, mine in (("kv_cache_dtype", self.options.get("kv_cache_dtype")),
                          ("attention_backend", self.options.get("attention_backend"))):
            if s.get(key) is not None and str(s[key]) not in ("auto", str(mine)):
                raise OptionError(f"--speculative-config: a drafter {key} of its own ({s[key]!r}) is not modelled "
                                  "by kvplan")
        model = s.get("model")
        method_raw = s.get("method")
        if method_raw is None and str(model) in ("ngram", "[ngram]"):
            method_raw = "ngram"  # SpeculativeConfig.__post_init__: model "ngram" selects the method
        method = _spec_method(method_raw) if method_raw is not None else None
        if method in ("mtp", "ngram", "suffix"):
            # MTP drafts with the target's own layers ("model" names the target); n-gram and suffix
            # drafting read the prompt, so no draft model is loaded whatever "model" says
            model = None
        if model is not None:
            self.set("drafter", str(model))
        if method is not None:
            self.set("speculative_method", method)
        if s.get("num_speculative_tokens") is not None:
            self.set("num_speculative_tokens", s["num_speculative_tokens"])
        if method is None and model is None:
            raise OptionError("--speculative-config: give a method or a model (vLLM infers the method from the model)")


_NOT_GPU = re.compile(r"(?:^|[-_.])(?P<what>tpu|cpu|neuron|hpu|gaudi)(?:$|[-_.])")
_NOT_GPU_WHAT = {"tpu": "TPU", "cpu": "CPU", "neuron": "AWS Neuron (Inferentia/Trainium)", "hpu": "Intel Gaudi (HPU)",
                 "gaudi": "Intel Gaudi (HPU)"}


def _not_a_gpu_deployment(line: ServeLine) -> str | None:
    """A vLLM image built for another accelerator (``vllm/vllm-tpu``, a ``-cpu`` image): kvplan models
    vLLM on CUDA GPUs, so there is nothing to simulate; one line that says so."""
    if not line.image:
        return None
    name = line.image.rsplit("/", 1)[-1].split(":")[0].split("@")[0].lower()
    m = _NOT_GPU.search(name) if "vllm" in line.image.lower() else None
    if m:
        what = _NOT_GPU_WHAT[m.group("what")]
        return (f"{line.image} is vLLM's {what} image: not a GPU deployment; kvplan predicts the KV cache of vLLM on "
                f"CUDA GPUs, and a {what} backend sizes its own memory; nothing to simulate")
    return None


# vllm/entrypoints/api_server.py: in the unpacked sources of every release kvplan has to 0.24.0, absent from 0.25.1's
_DEMO_SERVER = "vllm.entrypoints.api_server"
_DEMO_LAST = "0.24.0"


def _demo_server(line: ServeLine, release: str, known: bool) -> str | None:
    """``python -m vllm.entrypoints.api_server``: vLLM's demo server, not the OpenAI-compatible one
    (``known``: the release is the image tag's or --policy's, not kvplan's assumption)."""
    if _DEMO_SERVER not in (line.text or "").split():
        return None
    from kvplan.engines.vllm.releases import version_key

    what = (f"python -m {_DEMO_SERVER} is vLLM's demo server, not its OpenAI-compatible server "
            "(vllm/entrypoints/api_server.py: \"used only for demonstrating usage of AsyncEngine and simple performance "
            "benchmarks. It is not intended for production use\"): one /generate endpoint, no /v1 API")
    gone = (f"vLLM {release} has no such module (the last release kvplan has with it is {_DEMO_LAST}): it exits at "
            f"start with \"No module named {_DEMO_SERVER}\"" if known else
            f"vLLM has it to {_DEMO_LAST} (kvplan's sources) and not from 0.25.1: with a newer vLLM it exits at start")
    if known and version_key(release) <= version_key(_DEMO_LAST):
        gone = f"vLLM {release} has it"
    return (f"{what}; {gone}; its engine takes the same engine flags: for its KV cache, give kvplan the line with "
            "vllm.entrypoints.openai.api_server in its place (or vllm serve)")


def read_serve(argv: list[str] | tuple[str, ...] | None = None, *, line: ServeLine | None = None,
               policy: str | None = None, base: Path | None = None) -> ServeRequest:
    """Read a serve line (``line``) or the words after ``vllm serve`` (``argv``)."""
    if (argv is None) == (line is None):
        raise OptionError("give either the serve arguments or --line, not both")
    words = list(line.argv) if line is not None else list(argv or ())
    policy_out, release, how, warnings = choose_release(line, policy)
    refused = None
    if line is not None:
        known = policy is not None or line.image_release is not None
        refused = _not_a_gpu_deployment(line) or _demo_server(line, release, known)
    table = flag_table(release)
    if table.note:
        warnings.append(table.note)
    parsed = parse_serve_args(words, table, base=base)
    if not parsed.model:
        raise OptionError("no model on the serve line; write `vllm serve MODEL ...` (or --model MODEL)")
    if parsed.model.startswith("$"):
        raise OptionError(f"the line names its model through {parsed.model}, which the line does not set; "
                          "write the model id (or set it on the line: MODEL=org/name; vllm serve $MODEL)")
    r = _Reader(parsed, table)
    r.read()
    options = dict(r.options)
    if policy_out is not None:
        options["policy"] = policy_out
    env = dict(line.env) if line is not None else {}
    return ServeRequest(model=parsed.model, options=options, flags=r.rows, env=env, release=release,
                        release_source=how, table=table, warnings=[*warnings, *parsed.warnings, *r.warnings],
                        line=line, refused=refused)
