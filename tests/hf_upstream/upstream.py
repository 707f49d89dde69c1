"""transformers' own image-processor tests, run with every image processor they build
served by ``mm_framework.hf.accelerate``.

The upstream files are not in this repository (code fetched from public repositories is
never committed here). ``fetch_list`` names each one by repository path and commit; put
them under one directory, in transformers' layout::

    $MM_UPSTREAM_TESTS/tests/__init__.py                      (empty)
    $MM_UPSTREAM_TESTS/tests/test_image_processing_common.py  (the transformers 5.24.0 sdist's)
    $MM_UPSTREAM_TESTS/tests/models/__init__.py               (empty)
    $MM_UPSTREAM_TESTS/tests/models/<model>/__init__.py       (empty)
    $MM_UPSTREAM_TESTS/tests/models/<model>/test_image_processing_<model>.py
    $MM_UPSTREAM_TESTS/utils/fetch_hub_objects_for_ci.py      (its url_to_local_path)
    $MM_UPSTREAM_TESTS/_deps/                                  (optional: pip install --target, for parameterized)

and run ``MM_UPSTREAM_TESTS=<dir> pytest -q tests/hf_upstream`` in the torchvision venv
(the upstream test classes need torch; without it they skip). ``MM_UPSTREAM_ADAPTER=0``
runs the same tests on transformers' own classes, the baseline. Without the directory the
module skips, saying where to put the files. test_sdist_image.py and test_sdist_video.py run
the sdist's mixins alone (CI can download the sdist) with testers of ours, through the same
loader (``load_common``), wrapping (``served_class``) and shadow check.

What the runner changes, and only in the harness (no assertion is touched):

* every class in the mixin's ``image_processing_classes`` is replaced by a subclass whose
  construction (``cls(...)``, ``from_dict``, ``from_pretrained``, ``from_json_file``)
  returns ``mmf.hf.accelerate(<the real instance>)``;
* each call the adapter serves is also made on the real instance and the two results must
  be identical (keys, types, dtypes, shapes, bytes): a served call that differs fails the
  test (``MM_UPSTREAM_SHADOW=0`` turns this off);
* the stored per-model files predate the 5.24 mixin's ``image_processor_tester_class``
  (they build their tester in ``setUp`` and read ``image_processing_classes`` from the
  mixin, or the 4.x ``image_processor_list``): the mixin's ``setUp`` accepts a class
  without a tester class, and ``image_processing_classes`` falls back to transformers'
  mapping for the test file's folder, as the 5.24 tester computes it;
* the tests listed in ``NOT_APPLICABLE`` are skipped with their reason (each also fails,
  or cannot run, on transformers' own classes: docs/engines.md, "transformers' own tests").
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pathlib
import sys
import types
import unittest
from typing import Any

# The upstream files, as fetch_list names them (model folder -> test module).
MODELS = ("qwen2_vl", "gemma3", "glm4v", "paddleocr_vl", "deepseek_ocr2", "gemma4")
PACKAGE = "hf_upstream_tests"

_SLOW_FAST = "a 4.x slow/fast pair: builds the module's own classes (not the mixin's) and calls the removed " \
             "`test_slow_image_processor` / `_assert_slow_fast_tensors_equivalence`; 5.24 has backends instead"
_BACKENDS = "the PIL and torchvision classes differ by more than the test's atol 0.1 (0.16-0.28) on these seeded " \
            "random images: fails on transformers' own classes (each backend is cloned byte-exact, so does ours)"
_NETWORK = "the mixin's version loads a COCO image from the Hub (no network in CI or here)"
_PIXELS = "a 4.x file: 5.24 keeps min_pixels / max_pixels in `size` (no attribute, no JSON key): fails on " \
          "transformers' own classes"
_VIDEOS = "5.24's image processors take no `videos` (the video processor does): fails on transformers' own classes"
# Each reason is checked: the baseline run (MM_UPSTREAM_ADAPTER=0) fails or cannot run these.
NOT_APPLICABLE: dict[str, dict[str, str]] = {
    "*": {
        "test_pil_can_run_without_torchvision": "@slow: a subprocess without torchvision loading a saved processor",
        "test_can_compile_torchvision_backend": "@slow, needs an accelerator",
        "test_valid_kwargs_set": "checks the class's own wiring, finding the expected Kwargs class from "
                                 "`processor.__class__`, which through the adapter is AcceleratedImageProcessor "
                                 "(`processor.valid_kwargs` itself reads through, the real class's)",
    },
    "qwen2_vl": {
        "test_video_inputs": _VIDEOS,
        "test_custom_patch_size": _VIDEOS,
        "test_image_processor_properties": _PIXELS,
        "test_image_processor_from_dict_with_kwargs": _PIXELS,
        "test_image_processor_to_json_string": _PIXELS,
        "test_backends_equivalence": _NETWORK,
        "test_backends_equivalence_batched": _BACKENDS,
    },
    "gemma3": {"test_slow_fast_equivalence_batched_pas": _SLOW_FAST, "test_backends_equivalence": _NETWORK},
    "glm4v": {
        "test_call_numpy_4_channels": "5.24 refuses a 4-value image_mean (\"mean must have 3 elements\"): fails on "
                                      "transformers' own classes",
        "test_backends_equivalence": _NETWORK,
    },
    "gemma4": {"test_backends_equivalence": _NETWORK},
    "paddleocr_vl": {"test_backends_equivalence_batched": _BACKENDS},
    "deepseek_ocr2": {"test_backends_equivalence_batched": _BACKENDS},
}


def upstream_dir() -> pathlib.Path | None:
    root = os.environ.get("MM_UPSTREAM_TESTS")
    if not root:
        return None
    path = pathlib.Path(root)
    return path if (path / "tests" / "test_image_processing_common.py").is_file() else None


def load(root: pathlib.Path) -> dict[str, types.ModuleType]:
    """The upstream test modules present under ``root``, imported as ``hf_upstream_tests.models.<model>...``
    (their relative imports need the package; ``tests`` is this repository's name) with the mixin patched."""
    deps = root / "_deps"
    if deps.is_dir() and str(deps) not in sys.path:
        sys.path.insert(0, str(deps))
    load_common(PACKAGE, root / "tests")
    modules = {}
    for model in MODELS:
        if (root / "tests" / "models" / model / f"test_image_processing_{model}.py").is_file():
            modules[model] = importlib.import_module(f"{PACKAGE}.models.{model}.test_image_processing_{model}")
    return modules


def load_common(package: str, tests: pathlib.Path, name: str = "test_image_processing_common") -> types.ModuleType:
    """transformers' ``tests/<name>.py`` under ``tests`` (a directory with an ``__init__.py``),
    imported as ``<package>.<name>`` with the image mixin patched. The mixin imports the Hub
    helper ``fetch_hub_objects_for_ci`` from ``tests/../utils``; without that file (the sdist
    has none) it is one that refuses: only the tests loading Hub images use it, and they do not
    apply (``NOT_APPLICABLE``)."""
    if not (tests.parent / "utils" / "fetch_hub_objects_for_ci.py").is_file():
        sys.modules.setdefault("fetch_hub_objects_for_ci", _offline_hub())
    if package not in sys.modules:
        spec = importlib.util.spec_from_file_location(package, tests / "__init__.py",
                                                      submodule_search_locations=[str(tests)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[package] = module
        spec.loader.exec_module(module)
    _patch_mixin(importlib.import_module(f"{package}.test_image_processing_common").ImageProcessingTestMixin)
    return importlib.import_module(f"{package}.{name}")


def _offline_hub() -> types.ModuleType:
    def url_to_local_path(url: str) -> str:
        raise RuntimeError(f"{url}: the Hub is not reachable from these tests (no fetch_hub_objects_for_ci here)")

    module = types.ModuleType("fetch_hub_objects_for_ci")
    module.url_to_local_path = url_to_local_path
    return module


def skip_not_applicable(test_class: type, reasons: dict[str, str]) -> type:
    """``test_class`` with each test named in ``reasons`` skipped, saying why (none with ``MM_UPSTREAM_ALL=1``)."""
    if skip_listed():
        for test, reason in reasons.items():
            if hasattr(test_class, test):
                setattr(test_class, test, unittest.skip(f"does not apply: {reason}")(getattr(test_class, test)))
    return test_class


def skip_listed() -> bool:
    """``MM_UPSTREAM_ALL=1`` runs the ``NOT_APPLICABLE`` tests too (to check their reasons)."""
    return os.environ.get("MM_UPSTREAM_ALL", "0") != "1"


def adapter_on() -> bool:
    return os.environ.get("MM_UPSTREAM_ADAPTER", "1") != "0"


def _patch_mixin(mixin: type) -> None:
    if getattr(mixin, "_mm_patched", False):
        return
    set_up = mixin.setUp

    def setUp(self):  # noqa: N802 (unittest's name)
        if self.image_processor_tester_class is not None:
            set_up(self)

    def image_processing_classes(self) -> dict[str, type]:
        classes = getattr(self.image_processor_tester, "image_processing_classes", None)
        if classes is None:
            classes = _mapped_classes(type(self))
        return {backend: served_class(cls) for backend, cls in classes.items()}

    mixin.setUp = setUp
    mixin.image_processing_classes = property(image_processing_classes)
    mixin.image_processor_list = property(lambda self: list(self.image_processing_classes.values()))
    mixin._mm_patched = True


def _mapped_classes(test_class: type) -> dict[str, type]:
    """``{backend: class}`` transformers maps the test file's folder (the model type) to."""
    return mapped_classes(pathlib.Path(sys.modules[test_class.__module__].__file__).resolve().parent.name)


def mapped_classes(model_type: str) -> dict[str, type]:
    """``{backend: class}`` of ``model_type``'s image processor in transformers' mapping."""
    from transformers.models.auto.image_processing_auto import (
        IMAGE_PROCESSOR_MAPPING_NAMES,
        get_image_processor_class_from_name,
    )

    return {backend: get_image_processor_class_from_name(name)
            for backend, name in IMAGE_PROCESSOR_MAPPING_NAMES[model_type].items()}


_CLASSES: dict[type, type] = {}


def _accelerated(cls: type) -> type:
    """``cls`` whose instances come back accelerated, one subclass per class."""
    if cls not in _CLASSES:
        def wrap(result: Any) -> Any:
            if isinstance(result, tuple):  # from_dict(..., return_unused_kwargs=True)
                return (wrap(result[0]), *result[1:])
            return _accelerate(result) if isinstance(result, cls) else result

        def new(klass, *args, **kwargs):
            return _accelerate(cls(*args, **kwargs))

        namespace = {
            "__new__": new,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "from_dict": classmethod(lambda klass, *a, **k: wrap(cls.from_dict(*a, **k))),
            "from_pretrained": classmethod(lambda klass, *a, **k: wrap(cls.from_pretrained(*a, **k))),
            "from_json_file": classmethod(lambda klass, *a, **k: wrap(cls.from_json_file(*a, **k))),
        }
        _CLASSES[cls] = type(cls.__name__, (cls,), namespace)
    return _CLASSES[cls]


def served_class(cls: type) -> type:
    """``cls`` as the tests build it: accelerated (``_accelerated``), or itself with ``MM_UPSTREAM_ADAPTER=0``."""
    return _accelerated(cls) if adapter_on() else cls


def _accelerate(processor: Any) -> Any:
    from mm_framework import hf

    accelerated = hf.accelerate(processor)
    if os.environ.get("MM_UPSTREAM_SHADOW", "1") != "0":
        for shadowed, adapter in zip((_Shadowed, _ShadowedVideo), _adapter_classes()):
            if isinstance(accelerated, adapter):
                accelerated.__class__ = shadowed  # the same object, its served calls checked
    return accelerated


def _served() -> int:
    from mm_framework import hf

    return sum(hf.stats()["served"].values())


def _adapter_classes() -> tuple[type, type]:
    from mm_framework.hf.image_processor import AcceleratedImageProcessor
    from mm_framework.hf.video_processor import AcceleratedVideoProcessor

    return AcceleratedImageProcessor, AcceleratedVideoProcessor


class _Shadow:
    """Before an adapter class: its served calls are repeated on the real processor and compared."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        before = _served()
        result = super().__call__(*args, **kwargs)
        if _served() > before:
            expected = self.original(*args, **kwargs)
            problem = differs(expected, result)
            if problem:
                raise AssertionError(f"{type(self.original).__name__}: the served call differs from transformers' "
                                     f"({problem}); kwargs {sorted(kwargs)}")
        return result

    preprocess = __call__


class _Shadowed(_Shadow, _adapter_classes()[0]):
    """An accelerated image processor, shadowed."""


class _ShadowedVideo(_Shadow, _adapter_classes()[1]):
    """An accelerated video processor, shadowed."""


def differs(expected: Any, got: Any, name: str = "result") -> str | None:
    """Where ``got`` is not exactly ``expected`` (same keys, container and tensor types, dtypes,
    shapes and bytes), or None."""
    import numpy as np

    if hasattr(expected, "keys"):
        if not hasattr(got, "keys") or set(expected.keys()) != set(got.keys()):
            return f"{name}: keys {sorted(expected.keys())} != {sorted(got.keys()) if hasattr(got, 'keys') else got}"
        for key in expected.keys():
            problem = differs(expected[key], got[key], f"{name}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(expected, (list, tuple)):
        if type(expected) is not type(got) or len(expected) != len(got):
            return f"{name}: {type(expected).__name__} of {len(expected)} != {type(got).__name__}"
        for i, (a, b) in enumerate(zip(expected, got)):
            problem = differs(a, b, f"{name}[{i}]")
            if problem:
                return problem
        return None
    if type(expected) is not type(got):
        return f"{name}: type {type(expected).__name__} != {type(got).__name__}"
    if hasattr(expected, "dtype") and hasattr(expected, "shape"):
        if expected.dtype != got.dtype or tuple(expected.shape) != tuple(got.shape):
            return f"{name}: {expected.dtype} {tuple(expected.shape)} != {got.dtype} {tuple(got.shape)}"
        a = expected.numpy() if hasattr(expected, "numpy") else np.asarray(expected)
        b = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
        if a.tobytes() != b.tobytes():
            bad = np.argwhere(a != b)
            return f"{name}: {len(bad)} elements differ, first at {bad[0].tolist() if len(bad) else '?'}"
        return None
    return None if expected == got else f"{name}: {expected!r} != {got!r}"
