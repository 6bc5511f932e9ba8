"""``python -m kvplan``: the command-line entry point (the same as the ``kvplan`` script).

This module is the one place outside ``kvplan/cli`` that imports the CLI: it is run, never
imported by the library (``tests/test_layering.py`` allows exactly this edge).
"""

from kvplan.cli.entry import main

if __name__ == "__main__":
    main()
