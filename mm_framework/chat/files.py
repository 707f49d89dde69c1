"""Reading a model directory's JSON and text files: every failure a ``SpecError`` naming the file."""

from __future__ import annotations

import os
from typing import Any

from .. import specs
from ..errors import SpecError


def read_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise SpecError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SpecError(f"{path}: not UTF-8 text: {e}") from None


def read_json(path: str, kind: type = dict) -> Any:
    """The JSON value of ``path`` (:func:`~mm_framework.specs.read_json`), which must be a ``kind``
    (an object unless told)."""
    value = specs.read_json(path)
    if not isinstance(value, kind):
        raise SpecError(f"{path}: expected a JSON {'object' if kind is dict else kind.__name__}, "
                        f"got {type(value).__name__}")
    return value


def optional_json(root: str, name: str) -> dict[str, Any] | None:
    path = os.path.join(root, name)
    return read_json(path) if os.path.isfile(path) else None
