"""Reading vLLM start-up logs (``kvplan explain-log``).

- ``reader``   the tolerant line reader (prefixes, timestamps, docker, wrapped lines);
- ``extract``  typed facts, one pattern per line vLLM prints;
- ``compare``  each logged figure beside kvplan's, with the line's meaning in that release;
- ``release``  the release a log comes from (banner, else line wordings).

The use case that assembles them, with the rebuild (facts → deployment → re-simulation) and the
traps, is ``kvplan.usecases.explain_log``: this package only reads text (it runs no scenario).
"""

from kvplan.logs.extract import Fact, Facts, facts_of
from kvplan.logs.reader import Record, read_log, read_records

__all__ = ["Fact", "Facts", "Record", "facts_of", "read_log", "read_records"]
