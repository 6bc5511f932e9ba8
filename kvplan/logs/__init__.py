"""Reading vLLM start-up logs (``kvplan explain-log``).

- ``reader``   the tolerant line reader (prefixes, timestamps, docker, wrapped lines);
- ``extract``  typed facts, one pattern per line vLLM prints;
- ``rebuild``  facts → the deployment as kvplan options, and its re-simulation;
- ``compare``  each logged figure beside kvplan's, with the line's meaning in that release;
- ``traps``    what the deployment falls into, with numbers.

The use case that assembles them is ``kvplan.usecases.explain_log``.
"""

from kvplan.logs.extract import Fact, Facts, facts_of
from kvplan.logs.reader import Record, read_log, read_records

__all__ = ["Fact", "Facts", "Record", "facts_of", "read_log", "read_records"]
