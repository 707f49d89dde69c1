"""Test support shared by the gemma3 tests: the image maker is importable as a module."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
