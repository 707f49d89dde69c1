"""Modules loaded from their files: generator scripts, and this package's light modules
without mm_framework.

A golden generator runs in the reference environment (transformers, Pillow, numpy),
which need not have mm_framework's dependencies, while any import of
``mm_framework.testing.images`` the usual way first runs ``mm_framework/__init__.py``.
So a generator puts this directory on ``sys.path`` and calls :func:`use_light_modules`
before it imports its image table::

    REPO = ...  # the repository root
    sys.path.insert(0, os.path.join(REPO, "mm_framework", "testing"))
    import standalone  # noqa: E402

    standalone.use_light_modules()

Afterwards ``from mm_framework.testing.images import photo`` and
``from mm_framework.testing.records import digest`` find those files, loaded alone (they
import numpy, Pillow and the standard library only). Use that ``from`` form: a plain
``import mm_framework.testing.images`` binds ``mm_framework`` and so still imports the
package. This module imports the standard library only.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

__all__ = ["load_module", "use_light_modules"]

LIGHT = ("images", "records")  # this package's modules that import nothing of mm_framework


def load_module(path: str | os.PathLike[str], name: str) -> ModuleType:
    """The module ``name`` executed from the file at ``path`` (as import does: registered in
    ``sys.modules`` first, and not executed again when already there)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def use_light_modules() -> None:
    """Register ``mm_framework.testing.images`` and ``.records`` loaded from their files, so they
    import without mm_framework (those already imported are kept)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for leaf in LIGHT:
        load_module(os.path.join(here, f"{leaf}.py"), f"mm_framework.testing.{leaf}")
