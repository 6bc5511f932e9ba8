"""Every file kvplan reads from its user, read one bounded way.

kvplan is a CI gate (``kvplan check`` on a pull request), so what it reads is untrusted: a path
may name a FIFO that never answers, a character device that never ends (``/dev/urandom``), a
directory, a file of gigabytes; a YAML file may hold an alias bomb or nest a thousand levels; a
JSON value may nest five thousand. This module is the one door for all of it:

- ``read_text(path, kind, field)``: regular files only (the path is resolved through symlinks,
  then ``os.stat`` must say "regular file"; a FIFO, device, socket or directory is refused by
  name and never opened), opened with ``O_NONBLOCK`` and checked again with ``fstat`` (a file
  swapped for a FIFO between the two is refused, not waited on), at most ``LIMIT_BYTES[kind]``
  bytes read, decoded as UTF-8 (a UTF-8 byte-order mark is dropped; UTF-16 and binary files are
  refused with the offset of the first bad byte). ``-`` is standard input, read with the same cap.
- ``open_binary(path, kind, field)``: the same checks, an open binary file for streaming readers
  (logs), which must stop at ``LIMIT_BYTES[kind]`` themselves (``BoundedStream`` does).
- ``yaml_loader_class()``: PyYAML's ``SafeLoader`` that counts while it composes: more than
  ``YAML_MAX_DEPTH`` levels of nesting, an alias that refers to the node containing it, or aliases
  that would expand to more than ``YAML_MAX_ALIAS_NODES`` nodes are refused *before* anything is
  constructed (a billion-laughs file is refused in milliseconds); ``load_yaml`` / ``load_yaml_all``
  use it.
- ``loads_json(text)``: ``json.loads`` after a linear scan that refuses more than
  ``JSON_MAX_DEPTH`` levels of nesting (Python's decoder would raise RecursionError, and the
  code reading the value would recurse as deep).

Every refusal is an ``InputFileError``: one line naming the file, the field it came from and the
fix (exit 1). Pure core: imports only ``kvplan.errors``; PyYAML is imported when YAML is read.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
import sys
from functools import lru_cache
from typing import Any, BinaryIO

from kvplan.errors import InputFileError

MiB = 1 << 20
# The most bytes read from one input, by kind. Generous for what each kind is in practice (a
# Hugging Face config.json is under 1 MiB; `helm template` of a whole cluster a few MiB; a vLLM
# start-up log of a long-running server can be hundreds of MiB), small enough that a runaway file
# cannot take the machine's memory.
LIMIT_BYTES: dict[str, int] = {
    "config": 16 * MiB,  # a model's config.json, hf_quant_config.json, a checkpoint's index
    "manifest": 64 * MiB,  # docker-compose, Kubernetes / KServe manifests, Helm values (`--file`, `manifest:`)
    "deployments": 16 * MiB,  # a `kvplan check` deployments file
    "serve-config": 4 * MiB,  # vLLM's `--config` YAML of flags
    "line": 4 * MiB,  # a pasted `vllm serve` line (`--line -`)
    "log": 1024 * MiB,  # a vLLM start-up log (`kvplan explain-log`), streamed
    "checkpoint": 1 << 50,  # a safetensors shard: only its header is read (at most 100 MiB, checkpoint.py)
}
KIND_WORDS = {
    "config": "a model config", "manifest": "a manifest", "deployments": "a deployments file",
    "serve-config": "a vLLM --config file", "line": "a serve line", "log": "a log", "checkpoint": "a checkpoint",
}
YAML_MAX_DEPTH = 100  # nesting levels of one YAML document (Kubernetes manifests use about 15)
YAML_MAX_ALIAS_NODES = 100_000  # nodes that aliases may add when expanded (a bomb adds billions)
JSON_MAX_DEPTH = 100  # nesting levels of one JSON value (config.json and vLLM's JSON flags use under 10)
# digits of one integer in YAML or JSON: no field kvplan reads needs more (2**64 has 20 digits), and
# Python refuses to convert more than 4,300 (sys.get_int_max_str_digits) with a bare ValueError
MAX_INT_DIGITS = 100

STDIN = "-"


def _human(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n:,} bytes"


def _refuse(path: str, field: str, problem: str, fix: str) -> InputFileError:
    return InputFileError(path, field, problem, fix)


def _kind_of_mode(mode: int) -> str | None:
    """The name of a file that is not a regular one (None for a regular file)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _check_mode(path: str, field: str, mode: int, shown: str, stdin: bool) -> None:
    what = _kind_of_mode(mode)
    if what is not None:
        via = "" if shown == path else f" (the link resolves to {shown})"
        raise _refuse(path, field, f"is {what}{via}, not a regular file",
                      "pass a regular file" + (", or - to read standard input" if stdin else ""))


def _check_size(path: str, field: str, size: int, kind: str) -> None:
    cap = LIMIT_BYTES[kind]
    if size > cap:
        raise _refuse(path, field, f"is {_human(size)}, more than kvplan reads for {KIND_WORDS[kind]} ({_human(cap)})",
                      "pass the part that matters (a smaller file)")


def open_binary(path: str | os.PathLike, kind: str, field: str, *, stdin: bool = True) -> BinaryIO:
    """A regular file at ``path`` opened for reading bytes, after every check above; the caller
    closes it and reads at most ``LIMIT_BYTES[kind]`` bytes (``BoundedStream``)."""
    name = os.fspath(path)
    try:
        real = os.path.realpath(os.path.expanduser(name))
        st = os.stat(real)  # follows symlinks: the kind of what is read, never opened here
    except FileNotFoundError:
        raise _refuse(name, field, "not found", "check the path") from None
    except (OSError, ValueError) as e:  # a name the file system refuses (too long, a NUL byte)
        raise _refuse(name[:200], field, f"cannot be read ({_reason(e)})", "check the path") from None
    shown = real if real != os.path.abspath(os.path.expanduser(name)) else name
    _check_mode(name, field, st.st_mode, shown, stdin)
    _check_size(name, field, st.st_size, kind)
    try:
        # O_NONBLOCK: a path swapped for a FIFO after the stat above is opened without waiting
        # for a writer, and refused by the fstat below
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise _refuse(name, field, f"cannot be read ({_reason(e)})", "check the file's permissions") from None
    try:
        st = os.fstat(fd)
        _check_mode(name, field, st.st_mode, shown, stdin)
        _check_size(name, field, st.st_size, kind)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # a regular file: blocking reads, as usual
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


class BoundedStream:
    """Reads a binary stream and refuses once more than ``LIMIT_BYTES[kind]`` bytes came (for
    standard input, whose size is not known in advance, and for streaming readers)."""

    def __init__(self, raw: BinaryIO, name: str, kind: str, field: str):
        self.raw, self.name, self.kind, self.field = raw, name, kind, field
        self.seen = 0

    def read(self, n: int = -1) -> bytes:
        cap = LIMIT_BYTES[self.kind]
        want = cap + 1 - self.seen if n is None or n < 0 else min(n, cap + 1 - self.seen)
        data = self.raw.read(max(want, 0)) if want > 0 else b""
        self.seen += len(data)
        if self.seen > cap:
            raise _refuse(self.name, self.field, f"is more than kvplan reads for {KIND_WORDS[self.kind]} ({_human(cap)})",
                          "pass the part that matters (a smaller file)")
        return data


def read_bytes(path: str | os.PathLike, kind: str, field: str, *, stdin: bool = True) -> bytes:
    """The bytes of a regular file (or of standard input for ``-`` where ``stdin``), at most
    ``LIMIT_BYTES[kind]``."""
    name = os.fspath(path)
    if name == STDIN and stdin:
        raw = getattr(sys.stdin, "buffer", None)
        if raw is None:  # a text stream without a buffer (a test harness): encode what it gives
            text = sys.stdin.read(LIMIT_BYTES[kind] + 1)
            data = text.encode("utf-8", "surrogateescape")
            _check_size("standard input", field, len(data), kind)
            return data
        return BoundedStream(raw, "standard input", kind, field).read()
    with open_binary(name, kind, field, stdin=stdin) as f:
        try:
            return BoundedStream(f, name, kind, field).read()
        except OSError as e:
            raise _refuse(name, field, f"cannot be read ({_reason(e)})", "check the file") from None


_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


def decode(data: bytes, name: str, field: str, *, errors: str = "strict") -> str:
    """UTF-8 text of ``data`` (a UTF-8 byte-order mark dropped); ``errors="replace"`` for logs,
    whose stray bytes do not matter, else a refusal naming the first bad byte (a NUL byte in the
    first 4 KiB: binary, or UTF-16 without a mark). UTF-16/32 with a byte-order mark is always
    refused: read as UTF-8 it would be noise."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    for bom, enc in _BOMS:
        if data.startswith(bom):
            raise _refuse(name, field, f"is {enc} text (it starts with a {enc} byte-order mark)",
                          "save it as UTF-8 (iconv -f UTF-16 -t UTF-8)")
    nul = data.find(b"\x00", 0, 4096) if errors == "strict" else -1  # a log may hold a stray NUL
    if nul >= 0:
        raise _refuse(name, field, f"is binary or UTF-16 (a NUL byte at offset {nul})", "pass a UTF-8 text file")
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as e:
        raise _refuse(name, field, f"is not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
                      "save it as UTF-8") from None


def read_text(path: str | os.PathLike, kind: str, field: str, *, errors: str = "strict", stdin: bool = True) -> str:
    """The UTF-8 text of a regular file (or standard input for ``-`` where ``stdin``: the command
    line's files; a path inside a file is never standard input), bounded and checked as above."""
    name = os.fspath(path)
    data = read_bytes(name, kind, field, stdin=stdin)
    return decode(data, "standard input" if name == STDIN and stdin else name, field, errors=errors)


def _reason(e: BaseException) -> str:
    return getattr(e, "strerror", None) or e.__class__.__name__


# ---------------------------------------------------------------------------------------------
# YAML


@lru_cache(maxsize=None)
def yaml_loader_class():
    """PyYAML's ``SafeLoader`` with limits counted while composing (so before any alias is
    expanded): nesting depth, self-referring aliases, and the nodes aliases add. A refusal is a
    ``yaml.composer.ComposerError`` (a ``yaml.MarkedYAMLError``) with the line of the node."""
    import yaml
    from yaml.composer import ComposerError
    from yaml.constructor import ConstructorError
    from yaml.scanner import ScannerError

    class BoundedSafeLoader(yaml.SafeLoader):
        def __init__(self, stream):
            super().__init__(stream)
            self._depth = 0
            self._weight: dict[int, int] = {}  # id(node) → nodes it stands for, expanded
            self._open: set[str] = set()  # anchors whose node is being composed
            self._alias_nodes = 0

        def fetch_flow_collection_start(self, TokenClass):
            # refused in the scanner too: PyYAML keeps a possible simple key per open flow level and
            # walks them all at every token, so 1,000 open brackets cost a million steps before the
            # composer sees the depth
            if self.flow_level >= YAML_MAX_DEPTH:
                raise ScannerError(None, None, f"it nests more than {YAML_MAX_DEPTH} levels deep", self.get_mark())
            return super().fetch_flow_collection_start(TokenClass)

        def construct_yaml_int(self, node):
            digits = sum(c.isalnum() for c in str(node.value))
            if digits > MAX_INT_DIGITS:
                raise ConstructorError(None, None, f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS})",
                                       node.start_mark)
            return super().construct_yaml_int(node)

        def compose_document(self):
            self._weight.clear()
            self._open.clear()
            self._alias_nodes = 0
            return super().compose_document()

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                if event.anchor in self._open:
                    raise ComposerError(None, None, f"the alias *{event.anchor} refers to the node that contains it",
                                        event.start_mark)
                node = self.anchors.get(event.anchor)
                if node is not None:
                    self._alias_nodes += self._weight.get(id(node), 1)
                    if self._alias_nodes > YAML_MAX_ALIAS_NODES:
                        raise ComposerError(None, None, f"aliases expand to more than {YAML_MAX_ALIAS_NODES:,} nodes "
                                            "(a YAML alias bomb?)", event.start_mark)
                return super().compose_node(parent, index)
            self._depth += 1
            anchor = getattr(event, "anchor", None)
            try:
                if self._depth > YAML_MAX_DEPTH:
                    raise ComposerError(None, None, f"it nests more than {YAML_MAX_DEPTH} levels deep", event.start_mark)
                if anchor is not None:
                    self._open.add(anchor)
                node = super().compose_node(parent, index)
            finally:
                self._depth -= 1
                if anchor is not None:
                    self._open.discard(anchor)
            if isinstance(node, yaml.MappingNode):
                w = 1 + sum(self._weight.get(id(k), 1) + self._weight.get(id(v), 1) for k, v in node.value)
            elif isinstance(node, yaml.SequenceNode):
                w = 1 + sum(self._weight.get(id(v), 1) for v in node.value)
            else:
                w = 1
            if w > 1:
                self._weight[id(node)] = w
            return node

    BoundedSafeLoader.add_constructor("tag:yaml.org,2002:int", BoundedSafeLoader.construct_yaml_int)
    return BoundedSafeLoader


def yaml_problem(e: Exception) -> str:
    """A YAML error as one line: its problem and context, with no source excerpt."""
    problem = "; ".join(filter(None, [getattr(e, "context", None), getattr(e, "problem", None)]))
    return problem or " ".join(str(e).split())


def yaml_line(e: Exception) -> int | None:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def load_yaml(text: str) -> Any:
    """One YAML document through the bounded safe loader (yaml.YAMLError on a bad or hostile one)."""
    loader = yaml_loader_class()(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


# ---------------------------------------------------------------------------------------------
# JSON

_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


class JsonLimitError(ValueError):
    """A JSON value past the limits: nested deeper than JSON_MAX_DEPTH, or an integer of more
    than MAX_INT_DIGITS digits."""


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonLimitError(f"holds an integer of {len(text.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def json_depth_ok(text: str, max_depth: int = JSON_MAX_DEPTH) -> bool:
    """Whether ``text`` nests at most ``max_depth`` levels (brackets inside strings ignored; one
    linear pass)."""
    if text.count("[") + text.count("{") <= max_depth:
        return True
    depth = 0
    for m in _JSON_BRACKET.finditer(_JSON_STRING.sub('""', text)):
        if m.group() in "[{":
            depth += 1
            if depth > max_depth:
                return False
        else:
            depth -= 1
    return True


def loads_json(text: str, max_depth: int = JSON_MAX_DEPTH) -> Any:
    """``json.loads`` (Infinity and NaN accepted, as Hugging Face's loader does) after refusing a
    value nested deeper than ``max_depth`` (JsonLimitError, a ValueError)."""
    if not json_depth_ok(text, max_depth):
        raise JsonLimitError(f"nests more than {max_depth} levels deep")
    return json.loads(text, parse_int=_json_int)
