"""``vllm serve``'s arguments read as the release's parser reads them.

The steps follow vLLM's ``FlexibleArgumentParser.parse_args`` (vllm/utils/argparse_utils.py,
checked on 0.34.0; 0.18.0 and 0.33.0 do the same for these steps):

1. ``--model X`` anywhere is moved to the front as the positional model;
2. ``--config FILE.yaml`` is replaced by the file's keys (``key: value`` → ``--key value``,
   ``true`` → ``--key``, ``false`` → ``--no-key`` when that spelling exists, a mapping → its
   JSON, a list → ``--key a b``), inserted after the model so the line's own flags win;
3. underscores in a flag's name become dashes (``--tensor_parallel_size``), ``-O3`` is
   ``--optimization-level 3``;
4. dotted flags (``--speculative-config.num_speculative_tokens 5``) are merged into one JSON
   value per flag.

Then each option string is matched against the release's flag list (exact, else a unique
prefix, as argparse's ``allow_abbrev``), and its values are taken by its ``nargs``.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvplan.engines.vllm.serve_flags import FlagTable, ServeFlag
from kvplan.errors import OptionError
from kvplan.readfile import JsonLimitError, loads_json

_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


@dataclass(frozen=True)
class Given:
    """One flag as the line gives it."""

    option: str  # the spelling on the line (after vLLM's underscore rule)
    flag: ServeFlag
    value: Any  # a string, a list of strings (nargs * / +), True/False for switches, None for a bare '?'
    origin: str = "line"  # "line", "config file", "dotted"


@dataclass(frozen=True)
class ParsedServe:
    model: str | None
    given: tuple[Given, ...]
    config_file: str | None = None
    warnings: tuple[str, ...] = ()  # flags of other releases skipped because they leave the KV cache as it is

    def last(self, dest: str) -> Given | None:
        """argparse keeps the last value of a flag given twice."""
        hits = [g for g in self.given if g.flag.dest == dest]
        return hits[-1] if hits else None


# `kvplan vllm`'s own inputs, which take the place of `serve MODEL …`
_KVPLAN_INPUTS = frozenset({"--line", "--file", "--container"})


def _flag_error(option: str, table: FlagTable, hits: list[str]) -> OptionError:
    where = f"vllm serve {table.requested}" + ("" if table.release == table.requested
                                                 else f" (flag list of {table.release})")
    if len(hits) > 1:
        return OptionError(f"{option}: ambiguous flag for {where}; could be {', '.join(hits[:6])}")
    from kvplan.options import VLLM_SERVE, options_for

    mine = {f for o in options_for(VLLM_SERVE) for f in o.flags} | {"--format", "-f"}
    if option in mine:
        return OptionError(f"{option} is kvplan's option, not vllm serve's: put it before `serve` "
                           f"(kvplan vllm {option} ... serve MODEL ...)")
    if option.startswith("--") and "-" + option[2:] in table.by_option:  # --tp for -tp
        return OptionError(f"{option}: not a flag of {where}; did you mean -{option[2:]}?")
    other = other_releases(option, table)
    if other is not None:
        return OptionError(f"{option}: not a flag of {where}; {_releases_phrase(other[1], table)}")
    from kvplan.engines.vllm.releases import version_key

    if version_key(table.requested) < version_key(table.release):
        # the flag list stands in for an older release (an image older than every list): a flag of that
        # release that later ones removed is in no list, and a near name of a newer list is no answer
        return OptionError(f"{option}: not in any flag list kvplan has (from {table.release}), and {where} stands "
                           f"in for an older vLLM that may have had it; if it does not change the KV cache "
                           "(logging, scheduling, tokenizer workers), remove it from the line")
    longs = [o for o in table.by_option if o.startswith("--")]
    close = difflib.get_close_matches(option, longs, n=1, cutoff=0.75)  # 0.73: --enable-reasoning ~ --enable-prefix-caching
    hint = f"; did you mean {close[0]}?" if close else "; `vllm serve --help=all` lists the flags"
    return OptionError(f"{option}: not a flag of {where}{hint}")


def other_releases(option: str, table: FlagTable) -> tuple[ServeFlag, list[str]] | None:
    """A flag the line's release does not have, in the generated lists of other releases:
    ``(the flag as the newest of them defines it, those releases)``, or None."""
    from kvplan.engines.vllm.serve_flags import flag_table, generated_releases

    hits = [(r, f) for r in generated_releases() if r != table.release
            if (f := flag_table(r).by_option.get(option)) is not None]
    if not hits:
        return None
    return hits[-1][1], [r for r, _ in hits]


def _releases_phrase(releases: list[str], table: FlagTable) -> str:
    from kvplan.engines.vllm.releases import version_key
    from kvplan.engines.vllm.serve_flags import generated_releases

    span = releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]}"
    lists = ", ".join(generated_releases())
    if all(version_key(r) < version_key(table.release) for r in releases):
        return f"removed after {releases[-1]} (in the flag lists of {span}; kvplan has the lists of {lists})"
    if all(version_key(r) > version_key(table.release) for r in releases):
        return f"added after {table.release} (in the flag lists of {span}; kvplan has the lists of {lists})"
    return f"in the flag lists of {span} (kvplan has the lists of {lists})"


def before_serve_hint(word: str) -> str:
    """The message for an option written before ``serve`` that ``kvplan vllm`` does not take."""
    from kvplan.engines.vllm.releases import NEWEST_CHECKED
    from kvplan.engines.vllm.serve_flags import flag_table
    from kvplan.options import find_option

    option = word.split("=", 1)[0]
    opt = find_option(option) if option.startswith("-") else None
    if opt is not None and opt.vllm:
        table = flag_table(NEWEST_CHECKED)
        spelled = next((f for f in opt.flags if f in table.by_option), opt.flag)
        return f"{option} is a vllm serve flag: write {spelled} on the serve line, after `serve MODEL`"
    return (f"{option}: not an option of `kvplan vllm`; vLLM's flags go after `serve` "
            "(kvplan vllm [--gpu/--policy/--format ...] serve MODEL [vllm flags])")


def _config_args(path_text: str, table: FlagTable, base: Path | None) -> list[str]:
    """vLLM's ``load_config_file``: a YAML of flags → argv words (yaml.safe_load)."""
    import yaml

    if path_text.rsplit(".", 1)[-1] not in ("yaml", "yml"):
        raise OptionError(f"--config {path_text}: vLLM reads only .yaml/.yml config files")
    path = Path(path_text).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    from kvplan.readfile import load_yaml, read_text, yaml_line, yaml_problem

    text = read_text(path, "serve-config", "--config", stdin=False)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as e:
        line = yaml_line(e)
        where = f"{path_text}:{line}" if line else path_text
        raise OptionError(f"--config {where}: not valid YAML ({yaml_problem(e)}); fix the YAML") from None
    if data is None:
        return []
    if not isinstance(data, dict):
        raise OptionError(f"--config {path_text}: expected a mapping of flag names to values")
    out: list[str] = []
    for key, value in data.items():
        if isinstance(value, bool):
            if value:
                out.append(f"--{key}")
            elif f"--no-{key}" in table.by_option:
                out.append(f"--no-{key}")
        elif isinstance(value, list):
            if value:
                out += [f"--{key}", *(str(v) for v in value)]
        elif isinstance(value, dict):
            out += [f"--{key}", json.dumps(value)]
        else:
            out += [f"--{key}", str(value)]
    return out


def _short(text: str, limit: int = 80) -> str:
    """A value as an error shows it: at most ``limit`` characters."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _move_model(args: list[str]) -> list[str]:
    for i, a in enumerate(args):
        if a == "--model" and i + 1 < len(args):
            return [args[i + 1], *args[:i], *args[i + 2:]]
        if a.startswith("--model="):
            return [a.removeprefix("--model="), *args[:i], *args[i + 1:]]
    return args


def _pull_config(args: list[str], table: FlagTable, base: Path | None) -> tuple[list[str], str | None]:
    idx = [i for i, a in enumerate(args) if a == "--config" or a.startswith("--config=")]
    if not idx:
        return args, None
    if len(idx) > 1:
        raise OptionError("--config: more than one config file on the line (vLLM asserts a single one)")
    i = idx[0]
    if args[i] == "--config":
        if i + 1 >= len(args):
            raise OptionError("--config: no config file given")
        path, end = args[i + 1], i + 2
    else:
        path, end = args[i].split("=", 1)[1], i + 1
    cfg = _config_args(path, table, base)
    cfg = _move_model(cfg) if "--model" in cfg else cfg
    rest = args[:i] + args[end:]
    if rest and not rest[0].startswith("-"):  # the model stays first; the file's flags follow it
        return [rest[0], *cfg, *rest[1:]], path
    return [*cfg, *rest], path


def _underscores(args: list[str]) -> list[str]:
    """Underscores → dashes in a flag's name (up to the first '.'), -O3 → --optimization-level 3."""
    out: list[str] = []
    for i, a in enumerate(args):
        if a.startswith("--"):
            key, eq, value = a.partition("=")
            head, dot, tail = key.partition(".")
            out.append(head.replace("_", "-") + dot + tail + eq + value)
        elif a.startswith("-O") and a != "-O":
            out += ["--optimization-level", a[3:] if a[2:3] == "=" else a[2:]]
        elif a == "-O" and i + 1 < len(args) and args[i + 1] in ("0", "1", "2", "3"):
            out.append("--optimization-level")
        else:
            out.append(a)
    return out


def _parse_dotted_value(text: str) -> Any:
    try:
        return loads_json(text)
    except ValueError:
        from kvplan.units import parse_human_int

        try:
            return parse_human_int(text)
        except ValueError:
            return text


def _merge(into: dict, update: dict) -> None:
    for k, v in update.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        elif isinstance(v, list) and isinstance(into.get(k), list):
            into[k] += v
        else:
            into[k] = v


def _dotted(args: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """``--x.a.b V`` words → one ``--x JSON`` per flag (appended at the end, as vLLM does)."""
    merged: dict[str, dict] = {}
    out: list[str] = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a.startswith("-") and "." in a.split("=", 1)[0] and not _NUMBER.match(a):
            key, eq, value = a.partition("=")
            if not eq:
                if i + 1 >= len(args):
                    raise OptionError(f"{a}: expected a value")
                value, skip = args[i + 1], True
            if key.endswith("+"):
                key, parsed = key[:-1], value.split(",")
            else:
                parsed = _parse_dotted_value(value)
            head, *path = key.split(".")
            nested: Any = parsed
            for p in reversed(path):
                nested = {p: nested}
            _merge(merged.setdefault(head, {}), nested)
            continue
        out.append(a)
    extra = [(head, json.dumps(value)) for head, value in merged.items()]
    for head, value in extra:
        out += [head, value]
    return out, extra


def _looks_like_option(word: str, table: FlagTable) -> bool:
    return word.startswith("-") and word != "-" and not _NUMBER.match(word)


_GLUED = re.compile(r"(?<=[^\s-])(--[A-Za-z][A-Za-z0-9_-]*)(?==|$)")


def _glued(args: list[str], table: FlagTable) -> None:
    """Two words pasted together (``8111--gpu-memory-utilization``): vLLM's argparse would refuse the
    word; say which one it is and where the space goes."""
    for word in args:
        m = _GLUED.search(word)
        if m and m.start() > 0 and m.group(1).replace("_", "-") in table.by_option:
            raise OptionError(f"{word!r}: two words glued together (vLLM's parser would refuse it); "
                              f"put a space before {m.group(1)}: {word[:m.start()]} {word[m.start():]}")


def _other_release_flag(option: str, eq: str, args: list[str], i: int, table: FlagTable,
                        warnings: list[str]) -> int | None:
    """A flag of other releases only (``--swap-space`` on a release that removed it): when it has no
    effect on the KV cache, skip it and its values with a warning and return the next index; else None."""
    from kvplan.serve import effects as fx

    other = other_releases(option, table)
    if other is None:
        return None
    flag, releases = other
    effect = fx.effect_of(flag.dest, flag.group)
    if effect == fx.REFUSED and flag.takes_value and flag.nargs is None:
        # a refused flag given the value that leaves the KV cache as without it (--task generate)
        value = args[i].partition("=")[2] if eq else (args[i + 1] if i + 1 < len(args) else "")
        if not fx.is_default(flag.dest, value):
            return None
    elif effect not in (fx.NO_EFFECT, fx.ESTIMATE):
        return None
    j = i + 1
    if flag.takes_value and not eq:
        if flag.nargs in (None, 1) or isinstance(flag.nargs, int):
            j += 1 if flag.nargs is None else int(flag.nargs)
        else:
            while j < len(args) and not _looks_like_option(args[j], table):
                j += 1
    warnings.append(f"{option}: not a flag of vllm serve {table.release}: {_releases_phrase(releases, table)}; "
                    "it does not change the KV cache, so the line is read without it")
    return j


def parse_serve_args(argv: list[str] | tuple[str, ...], table: FlagTable, *, base: Path | None = None) -> ParsedServe:
    """``vllm serve``'s words (after ``serve``) → the model and each flag given, in order."""
    _glued(list(argv), table)
    args = _move_model(list(argv))
    args, config_file = _pull_config(args, table, base)
    args = _underscores(args)
    args, dotted = _dotted(args)
    dotted_heads = {h for h, _ in dotted}
    model: str | None = None
    given: list[Given] = []
    warnings: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if not _looks_like_option(word, table):
            if model is not None:
                raise OptionError(f"{word}: unexpected argument after the model {model!r} (vLLM: unrecognized "
                                  "arguments); quote JSON values and check the flags before it")
            model = word  # argparse fills the optional positional with the first free word
            i += 1
            continue
        option, eq, inline = word.partition("=")
        flag = _flag_of(option, eq, args, i, table, warnings)
        if isinstance(flag, int):  # another release's flag, skipped up to there
            i = flag
            continue
        origin = "dotted" if option in dotted_heads else "line"
        value, i = _value_of(option, flag, eq, inline, args, i + 1, table)
        if flag.takes_value:
            _check_value(option, flag, value, table, warnings)
        given.append(Given(option, flag, value, origin))
    return ParsedServe(model, tuple(given), config_file, tuple(warnings))


def _flag_of(option: str, eq: str, args: list[str], i: int, table: FlagTable, warnings: list[str]) -> ServeFlag | int:
    """The release's flag ``option`` names (exact, else a unique prefix), or the index after another release's flag
    that is skipped (with its warning); a flag of no release, an ambiguous prefix or kvplan's own input is refused."""
    flag, hits = table.lookup(option)
    if flag is None and not hits:
        skipped = _other_release_flag(option, eq, args, i, table, warnings)
        if skipped is not None:
            return skipped
    if flag is None:
        raise _flag_error(option, table, hits)
    if option in _KVPLAN_INPUTS and option not in flag.options:
        # vLLM's parser takes a flag's unambiguous prefix: `serve --line -` would be --linear-backend
        full = next((o for o in flag.options if o.startswith(option)), flag.options[0])
        raise OptionError(f"{option} after `serve` is vLLM's {full} (vLLM's parser takes a flag's unambiguous "
                          f"prefix); {option} is kvplan's: write `kvplan vllm [options] {option} …` without `serve`")
    return flag


def _value_of(option: str, flag: ServeFlag, eq: str, inline: str, args: list[str], i: int,
              table: FlagTable) -> tuple[Any, int]:
    """The flag's value as its ``nargs`` takes it (from ``=`` or the words from ``i``), and the index after it."""
    if not flag.takes_value:
        if eq:
            raise OptionError(f"{option}: takes no value (got {option}={inline})")
        return (option not in flag.negative if flag.kind == "bool" else flag.kind != "false"), i
    if eq:
        return ([inline] if flag.nargs in ("*", "+") else inline), i
    return _take(option, flag, args, i, table)


def _take(option: str, flag: ServeFlag, args: list[str], i: int, table: FlagTable) -> tuple[Any, int]:
    """The words from ``i`` a value-taking flag takes by its ``nargs``, and the index after them."""
    if flag.nargs in (None, 1) or isinstance(flag.nargs, int):
        n = 1 if flag.nargs is None else int(flag.nargs)
        vals = args[i:i + n]
        if len(vals) < n or any(_looks_like_option(v, table) for v in vals):
            raise OptionError(f"{option}: expected {'a value' if n == 1 else f'{n} values'}")
        return (vals[0] if flag.nargs is None else vals), i + n
    if flag.nargs == "?":
        if i < len(args) and not _looks_like_option(args[i], table):
            return args[i], i + 1
        return None, i
    vals = []  # "*" or "+"
    while i < len(args) and not _looks_like_option(args[i], table):
        vals.append(args[i])
        i += 1
    if flag.nargs == "+" and not vals:
        raise OptionError(f"{option}: expected at least one value")
    return vals, i


def _check_value(option: str, flag: ServeFlag, value: Any, table: FlagTable, warnings: list[str]) -> None:
    """A value argparse would refuse: not JSON where the release reads JSON, not one of the flag's choices (a
    neighbouring release's choices only warn)."""
    values = value if isinstance(value, list) else [value]
    if flag.type == "json":
        for v in values:
            try:
                loads_json(v) if isinstance(v, str) else None
            except JsonLimitError as e:
                raise OptionError(f"{option}: its JSON {e}; give a flat JSON object") from None
            except json.JSONDecodeError:
                raise OptionError(f"{option}: vllm serve {table.release} reads it as JSON and {_short(v)!r} is "
                                  "not JSON (argparse refuses it); write e.g. '{\"key\": 3}'") from None
    if flag.choices is None:
        return
    for v in values:
        if v is None or str(v) in flag.choices:
            continue
        if table.release != table.requested:  # a neighbour's list: its choices are not the release's
            warnings.append(f"{option}: {v!r} is not one of the choices of vllm serve {table.release} "
                            f"(the nearest list kvplan has for {table.requested}); read as given")
            continue
        raise OptionError(f"{option}: {v!r} is not one of {', '.join(flag.choices)} "
                          f"(vllm serve {table.release})")
