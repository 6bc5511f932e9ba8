"""Logs as production systems store them, unwrapped to the plain lines vLLM printed (issue 39).

Detected per line (a file may mix them, as a collector's output does):
- Docker's json-file driver: ``{"log": "<line>\\n", "stream": "stdout", "time": "…"}``; a line over
  16 KiB is split by Docker into parts whose ``log`` has no final newline, joined back here;
- vLLM's JSON logging (``--logging-config.formatter json``; python-json-logger with vLLM's
  ``JSON_FORMAT``, vllm/logging_utils/formatter.py, 0.34.0 l. 7-9): ``{"asctime": …, "levelname":
  "INFO", "name": …, "message": "…"}``, other collectors' ``msg`` / ``MESSAGE`` (journald) /
  ``textPayload`` (Cloud Logging) / ``@message`` the same way;
- Loki: ``logcli --output=jsonl`` (``{"labels": …, "line": "…", "timestamp": …}``, newest first by
  default: put back in time order) and ``logcli --output=default`` (timestamp, label set, line);
- logfmt: ``time=… level=info msg="…"`` (quoted values with ``\\"`` and ``\\\\`` escapes);
- ``kubectl logs --timestamps`` / ``docker logs -t``: an RFC 3339 prefix (the reader strips it);
- a prefix elided: the message alone (the reader reads it as it is).

And as whole documents:
- the Loki HTTP API's query_range JSON (``data.result[].values: [["<ns>", "<line>"], …]``), as
  Grafana's query inspector downloads it: the values of every stream, in time order;
- CloudWatch Logs' ``aws logs get-log-events`` / ``filter-log-events`` JSON (``events[].message``)
  and the console's CSV/TSV download (a ``timestamp,message`` header, or ``@timestamp,@message``
  from Logs Insights; RFC 4180 quoting, a message may span lines).

Nothing here is executed or evaluated: JSON is read by ``json.loads``, CSV by ``csv``; a line that
is not one of these shapes is kept as it is.
"""

from __future__ import annotations

import csv
import io
import json
import re

# the keys that hold the line, most specific first (Loki's "line" before a nested "log")
_LINE_KEYS = ("line", "log", "message", "msg", "MESSAGE", "textPayload", "@message")
_LEVEL_KEYS = ("levelname", "level", "severity", "PRIORITY")
# journald's PRIORITY numbers (syslog levels)
_PRIORITY = {"0": "CRITICAL", "1": "CRITICAL", "2": "CRITICAL", "3": "ERROR", "4": "WARNING", "5": "INFO",
             "6": "INFO", "7": "DEBUG"}
_LEVELS = {"debug": "DEBUG", "info": "INFO", "warn": "WARNING", "warning": "WARNING", "error": "ERROR",
           "err": "ERROR", "critical": "CRITICAL", "fatal": "CRITICAL"}
# a prefix some collectors put before a JSON or logfmt record: docker compose's "svc  | ", an RFC 3339
# timestamp (kubectl --timestamps), vLLM's process prefix "(EngineCore_DP0 pid=1) "
_OUTER = re.compile(r"^(?:[A-Za-z0-9][\w.-]{0,127}\s{1,64}\|\s?)?"
                    r"(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\s{1,8})?"
                    r"(?:\([A-Za-z_][\w\- =]{0,64}pid=\d{1,10}(?:,\s*ip=[\d.:a-f]{1,64})?\)\s{0,8})?")
# logfmt: key=value pairs, a value bare or double-quoted with backslash escapes (one pass, linear)
_LOGFMT_PAIR = re.compile(r'([A-Za-z_@][\w.@-]{0,63})=("(?:[^"\\]|\\.)*"|[^\s"]*)(?:\s+|$)')
# logcli --output=default: the stream's label set between the timestamp and the line
_LOKI_LABELS = re.compile(r'^\{(?:[A-Za-z_][\w.]{0,127}="(?:[^"\\]|\\.)*"(?:,\s?)?){1,64}\}\s')
_LOGFMT_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)")


def _level_of(obj: dict) -> str | None:
    for key in _LEVEL_KEYS:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return _PRIORITY.get(value) or _LEVELS.get(value.lower(), value.upper())
    return None


def _header(level: str | None, obj: dict) -> str:
    """vLLM's text header for a structured record: ``LEVEL [file.py:N] `` when the record names the
    source (``filename``/``lineno``), ``LEVEL `` when it names only the level."""
    if not level:
        return ""
    filename, lineno = obj.get("filename"), obj.get("lineno")
    if isinstance(lineno, str) and lineno.isdigit():
        lineno = int(lineno)
    caller = obj.get("caller") or obj.get("source")  # logfmt's "caller=gpu_worker.py:857" (go-kit, slog)
    if isinstance(filename, str) and isinstance(lineno, int):
        return f"{level} [{filename}:{lineno}] "
    if isinstance(caller, str) and re.fullmatch(r"[\w.-]{1,128}\.py:\d{1,9}", caller):
        return f"{level} [{caller}] "
    return f"{level} "


def _json_record(text: str) -> tuple[str, dict] | None:
    """(key, object) of a one-line JSON record that holds a log line; None otherwise."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict):
        return None
    for key in _LINE_KEYS:
        if isinstance(obj.get(key), str):
            return key, obj
    return None


def _logfmt(text: str) -> dict | None:
    """The pairs of a logfmt line that has a ``msg``/``message``; None otherwise."""
    pos, out = 0, {}
    while pos < len(text):
        m = _LOGFMT_PAIR.match(text, pos)
        if m is None:
            return None
        value = m.group(2)
        if value.startswith('"'):
            value = _ESCAPE.sub(lambda e: _LOGFMT_ESCAPES.get(e.group(1), "\\" + e.group(1)), value[1:-1])
        out[m.group(1)] = value
        pos = m.end()
    return out if ("msg" in out or "message" in out) else None


def _unwrap_line(line: str) -> tuple[list[str], bool] | None:
    """The plain lines one stored line holds, and whether it is a part cut by Docker (its ``log`` has
    no final newline); None when the line is not a structured record."""
    head = _OUTER.match(line)  # every part optional: it matches every line, at least the empty prefix
    end = head.end() if head else 0
    outer, body = line[:end], line[end:].strip()
    labels = _LOKI_LABELS.match(body) if body.startswith("{") else None
    if labels is not None:
        return [body[labels.end():]], False
    if body.startswith("{") and body.endswith("}"):
        got = _json_record(body)
        if got is None:
            return None
        key, obj = got
        value = obj[key]
        partial = key == "log" and not value.endswith("\n")
        inner = value.removesuffix("\n").split("\n")
        header = _header(_level_of(obj), obj) if key in ("message", "msg", "MESSAGE", "@message") else ""
        # a JSON record's outer prefix (process, timestamp) is kept on its first line, as vLLM prints it
        return [outer + header + inner[0], *inner[1:]], partial
    if ("msg=" in body or "message=" in body) and "=" in body[:64]:
        pairs = _logfmt(body)
        if pairs is None:
            return None
        message = pairs.get("msg", pairs.get("message", ""))
        inner = message.split("\n")
        return [outer + _header(_level_of(pairs), pairs) + inner[0], *inner[1:]], False
    return None


def _loki_order(stamps: list[str]) -> bool:
    """Whether Loki's records came newest first (logcli's default direction, "backward")."""
    return len(stamps) > 1 and stamps[0] > stamps[-1]


def _document(text: str) -> list[str] | None:
    """The lines of a log stored as one JSON or CSV document; None when the text is not one."""
    start = text.lstrip()[:1]
    if start in "{[":
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return None
        events = doc.get("events") if isinstance(doc, dict) else None
        if isinstance(events, list):  # CloudWatch: get-log-events / filter-log-events
            return [line for e in events if isinstance(e, dict) and isinstance(e.get("message"), str)
                    for line in e["message"].removesuffix("\n").split("\n")]
        data = doc.get("data") if isinstance(doc, dict) else None
        result = data.get("result") if isinstance(data, dict) else None
        if isinstance(result, list):  # Loki query_range: streams, each with [ns, line] values
            values = [v for s in result if isinstance(s, dict) and isinstance(s.get("values"), list)
                      for v in s["values"] if isinstance(v, list) and len(v) >= 2 and isinstance(v[1], str)]
            values.sort(key=lambda v: int(v[0]) if str(v[0]).isdigit() else 0)
            return [line for v in values for line in v[1].removesuffix("\n").split("\n")]
        return None
    first = text[:256].split("\n", 1)[0].strip().lower().replace('"', "")
    for sep in (",", "\t"):
        columns = first.split(sep)
        if len(columns) >= 2 and columns[0] in ("timestamp", "@timestamp", "time") and (
                "message" in columns or "@message" in columns):
            col = columns.index("message") if "message" in columns else columns.index("@message")
            rows = csv.reader(io.StringIO(text), delimiter=sep)
            next(rows, None)
            return [line for row in rows if len(row) > col for line in row[col].removesuffix("\n").split("\n")]
    return None


def plain_lines(text: str) -> list[str]:
    """The plain lines of a stored log (the module docstring lists the shapes); a plain log's own lines."""
    doc = _document(text)
    if doc is not None:
        return doc
    lines = text.splitlines()
    out: list[str] = []
    loki: list[str] = []  # logcli jsonl timestamps, to put records back in time order
    other = 0  # lines that are not logcli records
    pending = ""  # a Docker part waiting for the rest of its line
    for line in lines:
        # a cheap test first: a structured record has "{…}" or "key=" in it
        got = _unwrap_line(line) if ("{" in line or "msg=" in line or "message=" in line) else None
        if got is None:
            if pending:
                out.append(pending)
                pending = ""
            out.append(line)
            other += bool(line.strip())
            continue
        inner, partial = got
        if pending:
            inner[0] = pending + inner[0]
            pending = ""
        if partial:
            pending = inner[0]
            continue
        if line.lstrip().startswith('{"labels"'):
            m = re.search(r'"timestamp":\s*"([^"]{0,64})"', line)
            loki.append(m.group(1) if m else "")
        else:
            other += 1
        out.extend(inner)
    if pending:
        out.append(pending)
    if loki and not other and _loki_order(loki):
        out.reverse()
    return out
