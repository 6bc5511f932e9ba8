"""Test-wide settings: no on-disk config cache unless a test sets its own directory, so every
test reads configs through transformers exactly as a first run does."""

import os
import sys
from pathlib import Path

os.environ.setdefault("KVPLAN_NO_CACHE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/factories.py
