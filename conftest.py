"""Repository-wide test setup (loaded before any test directory is collected).

Test modules are imported with ``--import-mode=importlib`` under their rootdir-relative
names, e.g. ``qwen_vl_plugin.tests.test_qwen_spec``, and import their helpers relatively
(``from . import golden_images``). Two plugins' distribution directories are named like
their packages (``qwen_vl_plugin/``, ``inkling_plugin/``); unless the installed package is
imported first, pytest would make that directory a namespace package of the same name
and hide the real one from every test.
"""

import importlib
import importlib.util

for _package in ("qwen_vl_plugin", "inkling_plugin"):
    if importlib.util.find_spec(_package) is not None:
        importlib.import_module(_package)
