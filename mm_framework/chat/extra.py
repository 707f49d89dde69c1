"""The optional libraries of the chat front door, imported on first use.

``import mm_framework`` must work without them, so nothing here runs at import time;
a missing library is an ``UnsupportedError`` that names the extra installing it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import UnsupportedError

EXTRA = "mm-framework[chat]"


def need(module: str) -> ModuleType:
    """``module`` imported, else an ``UnsupportedError`` naming :data:`EXTRA`."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UnsupportedError(
            f"chat requests need the {module.split('.')[0]} library: pip install '{EXTRA}'"
        ) from None
