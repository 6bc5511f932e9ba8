"""Logs as production systems store them, generated from a plain vLLM log by each store's documented
shape (tests/test_log_formats.py), and a large log made by repeating a real one among the periodic
lines a serving vLLM prints (tests/test_log_speed.py).

Each wrapper takes the plain lines and returns the stored text; the sources of the shapes:
- Docker's json-file driver: one JSON object a line, ``{"log": "<line>\\n", "stream": "stdout",
  "time": "<RFC 3339 nano>"}`` (docs.docker.com/engine/logging/drivers/json-file/);
- vLLM's JSON logging: ``VLLM_LOGGING_CONFIG_PATH`` with a ``pythonjsonlogger`` formatter
  (docs/examples/others/logging_configuration.md in vLLM: ``"format": "%(message)s"`` plus the
  fields the config names), one JSON object a line with the message under ``message``;
- logfmt: ``time=… level=info msg="…"`` with ``"`` and ``\\`` escaped inside the quoted value
  (brandur.org/logfmt; Go's log/slog TextHandler, Grafana Agent / Promtail pipelines);
- ``kubectl logs --timestamps``: an RFC 3339 timestamp with nanoseconds and a space before the line;
- Loki: ``logcli query --output=jsonl`` (``{"labels": {…}, "line": "…", "timestamp": "…"}``) and the
  HTTP API's query_range JSON (``data.result[].values: [["<ns>", "<line>"], …]``), which Grafana's
  "Download data" exports;
- CloudWatch Logs: ``aws logs get-log-events`` (``{"events": [{"timestamp": ms, "message": "…",
  "ingestionTime": ms}], "nextForwardToken": …}``) and ``filter-log-events`` (``events`` with
  ``logStreamName`` and ``eventId``), and the console's CSV download (``timestamp,message`` header,
  RFC 4180 quoting);
- a prefix elided: vLLM's ``LEVEL MM-DD HH:MM:SS [file.py:N]`` dropped, the message alone.
"""

from __future__ import annotations

import csv
import io
import json

from kvplan.logs.reader import _strip_header  # the plain message of a line, for the elided form

_T0_NS = 1_759_508_537_123_456_789  # 2025-10-03T16:22:17.123456789Z


def _rfc3339(i: int) -> str:
    ns = _T0_NS + i * 1_000_000
    s, frac = divmod(ns, 1_000_000_000)
    import datetime as dt

    return dt.datetime.fromtimestamp(s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def docker_json(lines: list[str]) -> str:
    return "".join(json.dumps({"log": line + "\n", "stream": "stdout", "time": _rfc3339(i)}) + "\n"
                   for i, line in enumerate(lines))


def vllm_json(lines: list[str]) -> str:
    """A line vLLM logged as a JSON record; a line without a header (a traceback, a wrapped remainder)
    as the raw text it is: Python prints a traceback to stderr itself, outside the logging formatter."""
    out = []
    for i, line in enumerate(lines):
        message, level, _proc, _h, site = _strip_header(line)
        if level is None:
            out.append(line)
            continue
        out.append(json.dumps({"asctime": _rfc3339(i), "name": "vllm.v1.worker.gpu_worker",
                               "levelname": level or "INFO", "message": message,
                               "filename": (site or "gpu_worker.py:1").split(":")[0],
                               "lineno": int((site or "x:1").split(":")[1])}))
    return "\n".join(out) + "\n"


def _logfmt_value(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def logfmt(lines: list[str]) -> str:
    out = []
    for i, line in enumerate(lines):
        message, level, _proc, _h, site = _strip_header(line)
        if level is None:  # as vllm_json: text printed outside the logging formatter stays raw
            out.append(line)
            continue
        lvl = level.lower()
        caller = f" caller={site}" if site else ""
        out.append(f"time={_rfc3339(i)} level={lvl}{caller} msg={_logfmt_value(message)}")
    return "\n".join(out) + "\n"


def kubectl_timestamps(lines: list[str]) -> str:
    return "".join(f"{_rfc3339(i)} {line}\n" for i, line in enumerate(lines))


def loki_jsonl(lines: list[str]) -> str:
    labels = {"app": "vllm", "container": "vllm", "namespace": "serving", "pod": "vllm-0"}
    # logcli prints newest first by default (--forward for oldest first); a reader sorts by timestamp
    rows = [json.dumps({"labels": labels, "line": line, "timestamp": _rfc3339(i)}) for i, line in enumerate(lines)]
    return "\n".join(reversed(rows)) + "\n"


def loki_query_range(lines: list[str]) -> str:
    values = [[str(_T0_NS + i * 1_000_000), line] for i, line in enumerate(lines)]
    return json.dumps({"status": "success", "data": {"resultType": "streams", "result": [
        {"stream": {"app": "vllm", "pod": "vllm-0"}, "values": list(reversed(values))}]}}, indent=2) + "\n"


def cloudwatch_get_log_events(lines: list[str]) -> str:
    ms0 = _T0_NS // 1_000_000
    events = [{"timestamp": ms0 + i, "message": line, "ingestionTime": ms0 + i + 500} for i, line in enumerate(lines)]
    return json.dumps({"events": events, "nextForwardToken": "f/3" + "0" * 55,
                       "nextBackwardToken": "b/3" + "0" * 55}, indent=4) + "\n"


def cloudwatch_filter_log_events(lines: list[str]) -> str:
    ms0 = _T0_NS // 1_000_000
    events = [{"logStreamName": "vllm/vllm/0123456789abcdef", "timestamp": ms0 + i, "message": line,
               "ingestionTime": ms0 + i + 500, "eventId": str(37_000_000_000_000_000_000_000_000_000_000_000_000 + i)}
              for i, line in enumerate(lines)]
    return json.dumps({"events": events, "searchedLogStreams": []}, indent=4) + "\n"


def cloudwatch_csv(lines: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["timestamp", "message"])
    for i, line in enumerate(lines):
        w.writerow([_T0_NS // 1_000_000 + i, line])
    return buf.getvalue()


def elided(lines: list[str]) -> str:
    """Each line's vLLM header (level, date, ``[file.py:N]``, process prefix) dropped; a line without
    one (a wrapped remainder, a traceback) as it is."""
    out = []
    for line in lines:
        message, _level, _proc, headed, _site = _strip_header(line)
        out.append((message if headed else line) + "\n")
    return "".join(out)


FORMATS = {
    "docker-json-file": docker_json,
    "vllm-json-logging": vllm_json,
    "logfmt": logfmt,
    "kubectl-timestamps": kubectl_timestamps,
    "loki-logcli-jsonl": loki_jsonl,
    "loki-query-range": loki_query_range,
    "cloudwatch-get-log-events": cloudwatch_get_log_events,
    "cloudwatch-filter-log-events": cloudwatch_filter_log_events,
    "cloudwatch-csv": cloudwatch_csv,
    "prefix-elided": elided,
}

# what a serving vLLM prints between start-ups: the stat logger (v1/metrics/loggers.py) and uvicorn's access log
NOISE = (
    "(APIServer pid=1) INFO 10-03 16:30:{s:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 1024.3 tokens/s, "
    "Avg generation throughput: 88.1 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 4.2%, "
    "Prefix cache hit rate: 31.0%",
    '(APIServer pid=1) INFO:     10.0.0.{s}:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
)


def big_log(plain: str, size_bytes: int, noise_per_copy: int = 400) -> str:
    """The plain log, then ``noise_per_copy`` periodic lines, repeated to ``size_bytes`` (a server
    restarted many times under load, as one file)."""
    noise = "".join(NOISE[i % 2].format(s=i % 60) + "\n" for i in range(noise_per_copy))
    unit = plain.rstrip("\n") + "\n" + noise
    return unit * max(1, size_bytes // len(unit.encode()))
