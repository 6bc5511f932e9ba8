"""Where a model argument's ``config.json`` comes from.

Order (first match wins):

1. ``local``: a path to a ``config.json``, or to a directory holding one.
2. ``catalog``: the bundled ``configs/<org>/<name>/config.json`` (ids as on the Hub, matched
   case-insensitively, as the Hub does). Skipped when ``--revision`` is given: a bundled
   snapshot has no revisions.
3. ``hf-cache``: the local Hugging Face cache, offline, matched case-insensitively:
   ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``;
   ``models--<org>--<name>/snapshots/<commit>/config.json`` where ``<commit>`` is
   ``refs/<revision or main>`` or the revision itself when it is a commit hash.
4. ``download``: ``huggingface_hub.hf_hub_download(repo, "config.json", revision=...)``,
   only with ``download=True`` (``--download``); it lands in the same cache.

Nothing else is fetched here: no weights, no remote code. With ``--download`` the budget later reads
the checkpoint's index and safetensors headers by HTTP range requests (``kvplan.budget.checkpoint_hub``;
``ModelSource.download`` says it may).

A path into a model cache names its repository, and is read as that repository (issue 39):

* a Hugging Face cache folder, ``…/hub/models--<org>--<name>[/snapshots/<commit>[/config.json]]``
  (the Hub forbids ``--`` in org and model names, so the folder name splits one way): its own
  ``config.json`` when the snapshot is on this machine (as ``hf-cache``, at that commit), else the
  same snapshot in this machine's cache, else the repository as an id (bundled catalog, cache,
  ``--download``), with a note;
* a ModelScope cache folder, ``…/modelscope/hub/models/<org>/<name>`` (and the older
  ``…/modelscope/hub/<org>/<name>``), where ModelScope writes a ``.`` of the name as ``___``
  (``Qwen2___5-7B-Instruct``): its own config when present (as ``local``), else the id.

When none of these has the argument (and ``--download`` is not given):

* a path that does not exist here (``/data/models/Qwen2.5-7B``, a server's path) is read as the
  known model its last part names (``org/name`` from the last two parts, else a name known under
  one org), with a note; an unknown one is an error that names ``--model-map PATH=ID``;
* an id the Hub renamed is read under its other name: meta-llama renamed its Llama 3.1 repos
  from ``Meta-Llama-3.1-*`` to ``Llama-3.1-*`` and the Hub redirects the old names (both
  directions are tried);
* a ``-Instruct`` / ``-hf`` variant of a known model (or the base of a known ``-Instruct``) is read
  with that model's config, with a note that the two configs may differ (max_position_embeddings).

A bare name without an org (``gpt-oss-20b``) takes the org of the one bundled or cached model
of that name (``openai/gpt-oss-20b``) and says so in ``ModelSource.note``; two or more
candidates, or none, give a one-line error with the nearest ids by edit distance.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from kvplan.frozen import dataclass
from kvplan.errors import ConfigError, KvplanError, ModelNotFoundError
from kvplan.model import catalog

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
# "org/name", or a bare legacy name such as "gpt2"
_REPO_ID_RE = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ModelSource:
    requested: str  # the argument as given
    kind: str  # "local" | "catalog" | "hf-cache" | "download"
    path: str  # the config.json that was read
    revision: str | None  # the commit of an HF-cache/download snapshot; None for local and catalog
    model_id: str = ""  # the id as resolved (catalog/cache spelling, inferred org); the argument for a path
    note: str | None = None  # how the argument became model_id, when it is not the argument as written
    download: bool = False  # --download was given: the checkpoint's index and headers may be fetched too
    provenance: str | None = None  # a bundled config's INDEX.json provenance ("genuine" / "reconstructed")

    def __post_init__(self) -> None:
        if not self.model_id:
            object.__setattr__(self, "model_id", self.requested)


# transformers 5.x writes the floats JSON has no literal for as a tagged object (configuration_utils.py, 5.25.0
# lines 1148 and 1173;
# transformers 5.22.2 lines 62-63 and 1138-1182: ``_encode_special_floats`` on ``to_json_string``,
# ``_decode_special_floats`` on ``_dict_from_json_file``): {"__float__": "Infinity"}, "-Infinity", "NaN".
_FLOAT_TAG_KEY = "__float__"
_FLOAT_TAG_VALUES = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def decode_special_floats(obj: object) -> object:
    """A config dict with transformers 5.x's tagged floats read back as floats, as
    ``PreTrainedConfig._decode_special_floats`` does: a dict whose only key is ``__float__`` with a known
    tag becomes the float (an unknown tag stays the dict); dicts and lists are walked."""
    if isinstance(obj, dict):
        if set(obj) == {_FLOAT_TAG_KEY} and isinstance(obj[_FLOAT_TAG_KEY], str):
            return _FLOAT_TAG_VALUES.get(obj[_FLOAT_TAG_KEY], obj)
        return {k: decode_special_floats(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode_special_floats(v) for v in obj]
    return obj


def read_config_json(path: str) -> dict:
    """The JSON object in ``path`` (read through kvplan.readfile: a regular file, bounded, UTF-8,
    nested at most 100 levels); a one-line ConfigError for every way that fails."""
    from kvplan.errors import InputFileError
    from kvplan.readfile import JsonLimitError, loads_json, read_text

    if os.path.isdir(path):
        raise ConfigError(path, None, "is a directory without a config.json", "pass the config.json inside it")
    try:
        text = read_text(path, "config", "", stdin=False)
    except InputFileError as e:
        if e.problem == "not found":
            raise ConfigError(path, None, "file not found",
                              "pass a path to a config.json or a directory holding one") from None
        raise ConfigError(path, None, e.problem, e.fix) from None
    try:
        # Python's json accepts Infinity/NaN, as Hugging Face's loader does
        # (nvidia/Nemotron-H-56B-Base-8K has time_step_limit [0.0, Infinity]); transformers 5.x writes
        # them as {"__float__": "Infinity"} and reads them back (decode_special_floats)
        data = decode_special_floats(loads_json(text))
    except JsonLimitError as e:
        raise ConfigError(path, None, f"its JSON {e}", "pass a Hugging Face config.json") from None
    except json.JSONDecodeError as e:
        raise ConfigError(
            path, None, f"invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}", "fix the JSON syntax"
        ) from None
    except RecursionError:
        raise ConfigError(path, None, "its JSON nests deeper than Python's parser goes",
                          "pass a Hugging Face config.json") from None
    if not isinstance(data, dict):
        raise ConfigError(path, None, f"expected a JSON object, got {type(data).__name__}", "pass a Hugging Face config.json")
    return data


def quant_config_beside(raw: dict, path: str) -> tuple[dict | None, str | None]:
    """``(its JSON, its path)`` of the ``hf_quant_config.json`` beside the config.json at ``path``, which
    vLLM reads when config.json (``raw``) has no ``quantization_config`` (ModelOpt <= 0.29:
    ``kvplan.model.options.with_quant_config``); ``(None, None)`` when it has one or there is none."""
    sibling = Path(path).parent / "hf_quant_config.json"
    if raw.get("quantization_config") is None and Path(path).name == "config.json" and sibling.is_file():
        return read_config_json(str(sibling)), str(sibling)
    return None, None


def hf_hub_cache_dir() -> Path:
    """huggingface_hub's cache directory, resolved from the same environment variables."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):  # the legacy name huggingface_hub still honours
        return Path(os.environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _local(model: str) -> str | None:
    p = Path(model).expanduser()
    try:  # anything but a directory is read (and a FIFO or a device refused by name there)
        if p.exists() and not p.is_dir():
            return str(p)
        if p.is_dir() and (p / "config.json").exists():
            return str(p / "config.json")
    except (OSError, ValueError):  # a name the file system refuses (a component over 255 bytes, a NUL)
        return None
    return None


def cache_repo(model: str) -> tuple[str, str | None, str] | None:
    """``(repository id, commit or None, which hub)`` when ``model`` is a path into a Hugging Face or
    ModelScope cache (the module docstring); None otherwise."""
    parts = [x for x in re.split(r"[/\\]+", model.strip()) if x]
    if parts and parts[-1] == "config.json":
        parts = parts[:-1]
    for i, part in enumerate(parts):
        if part.startswith("models--") and len(part) > len("models--"):
            rest = parts[i + 1:]
            if rest and (rest[0] != "snapshots" or len(rest) > 2):
                return None  # refs/, blobs/, or deeper than a snapshot
            commit = rest[1] if len(rest) == 2 and _COMMIT_RE.match(rest[1]) else None
            repo = part[len("models--"):].replace("--", "/", 1)
            return (repo, commit, "Hugging Face") if _REPO_ID_RE.match(repo) else None
    for i in range(len(parts) - 1):
        if parts[i].lower() == "modelscope" and parts[i + 1] == "hub":
            rest = parts[i + 2:]
            if len(rest) == 3 and rest[0] == "models":
                rest = rest[1:]
            if len(rest) == 2:
                repo = f"{rest[0]}/{rest[1].replace('___', '.')}"
                return (repo, None, "ModelScope") if _REPO_ID_RE.match(repo) else None
    return None


def _from_cache_path(model: str, repo: str, commit: str | None, hub: str, revision: str | None,
                     download: bool) -> ModelSource:
    """A path into a model cache read as the repository it names (``cache_repo``)."""
    at = f" (snapshot {commit[:12]})" if commit else ""
    local = _local(model)
    if local is not None:
        note = f"model path '{model}' is the {hub} cache's copy of '{repo}'{at}: read its config.json as '{repo}'"
        if hub == "Hugging Face":
            return ModelSource(model, "hf-cache", local, commit, repo, note, download)
        return ModelSource(model, "local", local, None, repo, note, download)
    if hub == "Hugging Face" and commit:
        here = _hf_cache(repo, commit)
        if here is not None:
            return ModelSource(model, "hf-cache", here[0], here[1], _match_case(repo, _cached_ids()) or repo,
                               f"model path '{model}' is not on this machine: read as '{repo}'{at} from this "
                               f"machine's Hugging Face cache, the same snapshot", download)
    try:
        found = resolve_model(repo, revision=revision or (commit if download else None), download=download)
    except ModelNotFoundError:
        err = ModelNotFoundError(model, [f"{hub} cache folder of '{repo}'"])
        err.message = (f"model path '{model}' is the {hub} cache folder of '{repo}'{at}, which is not on this "
                       f"machine and not bundled; pass --model-map {model}=ID (a catalog or Hub id, a directory or a "
                       "config.json), or --download")
        err.args = (err.message,)
        raise err from None
    where = {"catalog": "the bundled config", "hf-cache": "this machine's Hugging Face cache",
             "download": "the Hub"}.get(found.kind, found.kind)
    if found.kind == "catalog":
        same = "; the bundled config may differ from that snapshot" if commit else ""
    elif commit and found.revision != commit:
        same = f"; at {(found.revision or 'its main revision')[:12]}, not that snapshot"
    else:
        same = ""
    return _resolved(found, model, f"model path '{model}' is the {hub} cache folder of '{repo}'{at}, not on this "
                                   f"machine: read as '{found.model_id}' from {where}{same}")


def _looks_like_path(model: str) -> bool:
    return (
        model.endswith(".json")
        or model.startswith((".", "/", "~"))
        or model.count("/") > 1  # a repo id has at most one '/'
        or (os.sep != "/" and os.sep in model)
        or _exists(model)
    )


def _exists(model: str) -> bool:
    try:
        return Path(model).expanduser().exists()
    except (OSError, ValueError):  # a name the file system refuses
        return False


def _cached_ids() -> list[str]:
    """Every model id in the local HF cache (``models--<org>--<name>``; the Hub forbids '--' in names)."""
    try:
        dirs = [d.name for d in hf_hub_cache_dir().glob("models--*") if d.is_dir()]
    except OSError:
        return []
    return sorted(d[len("models--"):].replace("--", "/") for d in dirs)


def _match_case(model: str, ids: list[str]) -> str | None:
    """``model`` as spelled in ``ids`` (exact first, then case-insensitive), or None."""
    if model in ids:
        return model
    folded = [i for i in ids if i.lower() == model.lower()]
    return folded[0] if folded else None


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insert, delete, substitute; each costs 1)."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def suggest_ids(model: str, ids: list[str], limit: int = 3) -> list[str]:
    """The known ids nearest to ``model`` by edit distance (case-insensitive; a bare name is
    also compared with each id's name part), the nearest ones only, at most ``max(3, len // 4)`` edits away."""
    q = model.lower()
    if len(q) > 200:  # nothing plausible is that long; keep the error instant
        return []
    cut = max(3, len(q) // 4)
    scored = []
    for i in dict.fromkeys(ids):
        d = _edit_distance(q, i.lower())
        if "/" not in q and "/" in i:
            d = min(d, _edit_distance(q, i.split("/", 1)[1].lower()))
        if d <= cut:
            scored.append((d, i.lower(), i))
    best = min((d for d, _k, _i in scored), default=None)
    return [i for d, _k, i in sorted(scored) if d == best][:limit]


def _hf_cache(model: str, revision: str | None) -> tuple[str, str] | None:
    """``(config_path, commit)`` from the local HF cache, or None. The id's spelling is matched
    case-insensitively here; the snapshot (a branch or tag through ``refs/``, or a commit) is resolved by
    huggingface_hub (``try_to_load_from_cache``, imported only when the model is not bundled)."""
    if not (hf_hub_cache_dir() / ("models--" + model.replace("/", "--"))).is_dir():
        spelled = _match_case(model, _cached_ids())
        if spelled is None:
            return None
        model = spelled
    from huggingface_hub import try_to_load_from_cache  # lazy: only for a model that is not bundled

    path = try_to_load_from_cache(model, "config.json", cache_dir=str(hf_hub_cache_dir()), revision=revision)
    if not isinstance(path, str) or not Path(path).is_file():  # None, or "known not to exist"
        return None
    return path, Path(path).parent.name


def hub_endpoint() -> str:
    """The Hub's base URL as huggingface_hub reads it: ``$HF_ENDPOINT`` (a mirror, a local Hub), else
    huggingface.co; read at each call (huggingface_hub reads it once, at import)."""
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


HUB_PROBE_TIMEOUT_S = 1.0


def hub_unreachable(timeout: float = HUB_PROBE_TIMEOUT_S) -> str | None:
    """Why the Hub cannot be reached now, or None: ``HF_HUB_OFFLINE``, or one TCP connection to
    ``$HF_ENDPOINT`` (or the proxy that serves it) that does not open within ``timeout`` seconds.
    Done once before ``hf_hub_download``, whose own retries take ~25 s and print a line each."""
    import socket
    import threading
    import urllib.request
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    url = urlparse(hub_endpoint())
    host, port = url.hostname or "", url.port or (80 if url.scheme == "http" else 443)
    proxy = urllib.request.getproxies().get(url.scheme or "https")
    if proxy and not urllib.request.proxy_bypass(host):
        p = urlparse(proxy if "://" in proxy else f"http://{proxy}")
        host, port = p.hostname or host, p.port or 8080
    outcome: list[BaseException | None] = []

    def probe() -> None:  # name resolution has no timeout of its own: run it in a thread
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome.append(None)
        except (OSError, ValueError) as e:
            outcome.append(e)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    if not outcome:
        return f"no answer from {host}:{port} within {timeout:g} s"
    if outcome[0] is not None:
        return f"{host}:{port} unreachable ({outcome[0].__class__.__name__}: {outcome[0]})"
    return None


def _hub_where() -> dict:
    """The cache and endpoint kvplan reads (``hf_hub_cache_dir``, ``hub_endpoint``) passed to ``hf_hub_download``,
    which otherwise keeps the ones set when huggingface_hub was first imported."""
    return {"cache_dir": str(hf_hub_cache_dir()), "endpoint": hub_endpoint()}


def _download(model: str, revision: str | None) -> tuple[str, str | None]:
    why = hub_unreachable()
    if why is not None:
        raise KvplanError(f"--download: cannot reach the Hugging Face Hub ({why}); connect to the network, "
                          f"or pass a local config.json")
    try:
        from huggingface_hub import hf_hub_download  # lazy: only with --download
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        raise KvplanError("--download needs the huggingface_hub package; pip install huggingface_hub") from None
    try:
        path = hf_hub_download(repo_id=model, filename="config.json", revision=revision, **_hub_where())
    except Exception as e:  # network, gated repo, missing revision: one line, no traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise KvplanError(
            f"could not download config.json of '{model}'"
            + (f" at revision '{revision}'" if revision else "")
            + f" from the Hugging Face Hub ({e.__class__.__name__}: {first}); "
            "check the id, the revision, your network and HF_TOKEN for gated repositories"
        ) from None
    parts = Path(path).parts
    commit = parts[-2] if len(parts) >= 2 and _COMMIT_RE.match(parts[-2]) else revision
    _download_quant_config(hf_hub_download, model, path, revision)
    return path, commit


def _download_quant_config(hf_hub_download, model: str, config_path: str, revision: str | None) -> None:
    """vLLM also fetches ``hf_quant_config.json`` when config.json has no quantization_config
    (ModelOpt <= 0.29 checkpoints; transformers_utils/config.py 0.34.0 lines 996-1007): fetch it into the
    same snapshot, where kvplan reads it beside config.json. A repository without one is the common case."""
    from huggingface_hub.errors import EntryNotFoundError

    try:
        with open(config_path, encoding="utf-8") as f:
            if "quantization_config" in json.load(f):
                return
    except (OSError, ValueError):
        return  # the config itself is reported when it is parsed
    try:
        hf_hub_download(repo_id=model, filename="hf_quant_config.json", revision=revision, **_hub_where())
    except EntryNotFoundError:
        return
    except Exception as e:  # network or auth: vLLM would fail too
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise KvplanError(f"could not download hf_quant_config.json of '{model}' from the Hugging Face Hub "
                          f"({e.__class__.__name__}: {first}); check your network and HF_TOKEN") from None


_RENAMES = (("Meta-Llama-3.1-", "Llama-3.1-"),)  # the Hub's repo renames (old prefix, new prefix of the name)
_VARIANT_SUFFIXES = ("-Instruct", "-hf")


def _renamed_ids(model: str) -> list[tuple[str, str]]:
    """``(candidate id, why)`` for an id the Hub renamed, and for its -Instruct / -hf variants."""
    org, slash, name = model.rpartition("/")
    prefix = org + slash
    out: list[tuple[str, str]] = []
    for old, new in _RENAMES:
        if name.startswith(old):
            out.append((prefix + new + name[len(old):], f"the Hub renamed {prefix}{old}* to {prefix}{new}* and redirects"))
        elif name.startswith(new):
            out.append((prefix + old + name[len(new):], f"the Hub renamed {prefix}{old}* to {prefix}{new}*"))
    same = [(model, "")] + out
    variants: list[tuple[str, str]] = []
    for cand, why in same:
        cname = cand.rpartition("/")[2]
        for suffix in _VARIANT_SUFFIXES:
            other = cand[: -len(suffix)] if cname.endswith(suffix) else cand + suffix
            what = "its base model" if cname.endswith(suffix) else f"its {suffix} variant"
            note = f"{what}'s config; their configs may differ (max_position_embeddings, ...)"
            variants.append((other, (why + "; " if why else "") + note))
    return out + variants


def _known_renamed(model: str, ids: list[str]) -> tuple[str, str] | None:
    for cand, why in _renamed_ids(model):
        spelled = _match_case(cand, ids)
        if spelled is not None:
            return spelled, why
    return None


def _path_model(model: str, ids: list[str]) -> tuple[str, str] | None:
    """A path that is not here whose last part(s) name a known model → (id, note)."""
    parts = [x for x in re.split(r"[/\\]+", model.strip()) if x and x not in (".", "..", "~")]
    candidates = []
    if len(parts) >= 2:
        candidates.append("/".join(parts[-2:]))
        if "--" in parts[-1]:  # an HF cache folder name (models--org--name)
            candidates.append(parts[-1].removeprefix("models--").replace("--", "/", 1))
    if parts:
        candidates.append(parts[-1])
    # ModelScope's snapshot_download(cache_dir=…) folders write a "." of the name as "___" (Qwen2___5-7B)
    candidates += [c.replace("___", ".") for c in candidates if "___" in c]
    for cand in candidates:
        spelled = _match_case(cand, ids)
        if spelled is None and "/" not in cand:
            hits = list(dict.fromkeys(i for i in ids if "/" in i and i.split("/", 1)[1].lower() == cand.lower()))
            spelled = hits[0] if len(hits) == 1 else None
        renamed = None
        if spelled is None:
            renamed = _known_renamed(cand, ids) if "/" in cand else None
            spelled = renamed[0] if renamed else None
        if spelled is not None:
            how = f"; {renamed[1]}" if renamed else ""
            return spelled, (f"model path '{model}' is not on this machine: read as '{spelled}', the model its last "
                             f"part names{how}; pass --model-map {model}=ID to choose the config")
    return None


def _not_here(model: str) -> ModelNotFoundError:
    p = Path(model).expanduser()
    where = f"{p}/config.json" if p.is_dir() else str(p)
    err = ModelNotFoundError(model, [f"local path ({where} does not exist)"])
    err.message = (f"model path '{model}' not found ({where} does not exist here) and its last part names no known "
                   f"model; pass --model-map {model}=ID (a catalog or Hub id, a directory or a config.json)")
    err.args = (err.message,)
    return err


def _resolved(found: ModelSource, requested: str, note: str) -> ModelSource:
    return ModelSource(requested, found.kind, found.path, found.revision, found.model_id, note, found.download,
                       found.provenance)


def resolve_model(model: str, *, revision: str | None = None, download: bool = False) -> ModelSource:
    """Find the ``config.json`` for a model argument (see the module docstring for the order). A
    name no file system or Hub takes (longer than a path, a NUL, a component the file system
    refuses) is a one-line error, never an OSError."""
    from kvplan.bounds import MAX_NAME_CHARS
    from kvplan.errors import OptionError

    if len(model) > MAX_NAME_CHARS or "\x00" in model:
        what = f"{len(model):,} characters, more than any path or Hugging Face id ({MAX_NAME_CHARS:,})" \
            if len(model) > MAX_NAME_CHARS else "a NUL character, which no path or Hugging Face id has"
        raise OptionError(f"model {model[:40]!r}...: the name has {what}; check the model argument")
    try:
        return _resolve_model(model, revision=revision, download=download)
    except OSError as e:  # ENAMETOOLONG, ELOOP: the name as a path is refused by the file system
        raise OptionError(f"model {model[:60]!r}: the file system refuses it as a path "
                          f"({e.strerror or e.__class__.__name__}); check the model argument") from None


def _resolve_model(model: str, *, revision: str | None = None, download: bool = False) -> ModelSource:
    tried: list[str] = []
    in_cache = cache_repo(model) if ("models--" in model or "modelscope" in model.lower()) else None
    if in_cache is not None:
        return _from_cache_path(model, *in_cache, revision=revision, download=download)
    local = _local(model)
    if local is not None:
        return ModelSource(model, "local", local, None)
    tried.append("local path")
    if _looks_like_path(model) and not _REPO_ID_RE.match(model):
        # A path that does not exist (or a directory without config.json): not a Hub id.
        hit = _path_model(model, [*catalog.catalog_ids(), *_cached_ids()])
        if hit is None:
            raise _not_here(model)
        return _resolved(resolve_model(hit[0], revision=revision, download=download), model, hit[1])
    if not _REPO_ID_RE.match(model):
        raise ModelNotFoundError(model, tried)
    requested, note = model, None
    bundled_ids = catalog.catalog_ids()
    known = [*bundled_ids, *_cached_ids()]
    if "/" not in model and _match_case(model, known) is None:
        model, note = _infer_org(model, known)
    if revision is None:
        spelled = _match_case(model, bundled_ids)
        bundled = catalog.catalog_config_path(spelled) if spelled else None
        if spelled and bundled is not None:
            entry = catalog.index_entry(spelled)
            return ModelSource(requested, "catalog", str(bundled), None, spelled, note,
                               provenance=entry.get("provenance") if entry else None)
        tried.append("bundled catalog")
    else:
        tried.append("bundled catalog (skipped: it has no revisions)")
    cached = _hf_cache(model, revision)
    if cached is not None:
        spelled = _match_case(model, _cached_ids()) or model
        return ModelSource(requested, "hf-cache", cached[0], cached[1], spelled, note, download)
    tried.append(f"Hugging Face cache {hf_hub_cache_dir()}" + (f" at revision '{revision}'" if revision else ""))
    if download:
        path, commit = _download(model, revision)
        return ModelSource(requested, "download", path, commit, model, note, True)
    tried.append("the Hub (not asked: no --download)")
    renamed = _known_renamed(model, known) if "/" in model else None
    if renamed is not None:
        found = resolve_model(renamed[0], revision=revision)
        return _resolved(found, requested, f"model '{requested}' read as '{found.model_id}' ({renamed[1]}); "
                                           "pass --model-map or --download to read its own config")
    raise ModelNotFoundError(requested, tried, suggest_ids(requested, known))


def _infer_org(name: str, known: list[str]) -> tuple[str, str | None]:
    """A bare name → the one bundled or cached ``org/name`` of that name (and a note saying so).
    Two or more: a one-line error naming them. None: the name unchanged (a legacy id such as gpt2)."""
    hits = list(dict.fromkeys(i for i in known if "/" in i and i.split("/", 1)[1].lower() == name.lower()))
    if len(hits) == 1:
        return hits[0], f"model '{name}' taken as '{hits[0]}' (the only known model of that name); write the full id"
    if len(hits) > 1:
        raise ModelNotFoundError(name, ["bundled catalog", "Hugging Face cache"], hits, ambiguous=True)
    return name, None
