"""A plain vLLM start-up log's messages emitted again through a release's own JSON logging
(``vllm serve --logging-config.formatter json``: python-json-logger with the release's
``vllm/logging_utils/formatter.py`` JSON_FORMAT, configured by ``vllm/logger.py``), for
tests/logs/formats/ (explain-log reads stored logs: kvplan/logs/stored.py).

Run with the release's interpreter and tree (scripts/golden/README.md):
    PYTHONPATH=$RELEASE_SRC/0.34.0:. $RELEASE_BASE/bin/python scripts/golden/json_log_sample.py PLAIN.log > OUT.jsonl
Each message goes to the logger named after the file of its ``[file.py:N]`` site (``vllm.<file>``).
"""

import sys

from vllm.config.logging import LoggingConfig
from vllm.logger import configure_logging, init_logger

from kvplan.logs.reader import _strip_header

configure_logging(LoggingConfig(formatter="json"))
LEVELS = {"DEBUG": "debug", "INFO": "info", "WARNING": "warning", "WARN": "warning", "ERROR": "error",
          "CRITICAL": "critical"}
for line in open(sys.argv[1], encoding="utf-8").read().splitlines():
    message, level, _process, _headed, site = _strip_header(line)
    if message:
        logger = init_logger("vllm." + (site.split(".py")[0] if site else "entrypoints.cli.serve"))
        getattr(logger, LEVELS.get(level or "INFO", "info"))(message)
