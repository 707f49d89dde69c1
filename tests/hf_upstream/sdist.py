"""transformers' shared image (and video) processing test mixins, from the transformers
5.24.0 sdist on PyPI, which CI can download (the per-model test files are not in it).

``MM_TRANSFORMERS_SDIST`` names the tarball (its sha256 is checked) or a directory it was
extracted to; only ``tests/test_image_processing_common.py`` and
``tests/test_video_processing_common.py`` are read, copied into a temporary package that
lives as long as the process. Nothing of it is committed here.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import pathlib
import shutil
import tarfile
import tempfile

ENV = "MM_TRANSFORMERS_SDIST"
NAME = "transformers-5.24.0"
SHA256 = "906cb8c3cb2123575e263962586a4d21a979ce97feeb95fe6aaf66fe6ae88bf3"
FILES = ("test_image_processing_common.py", "test_video_processing_common.py")
PACKAGE = "hf_sdist_tests"
HOW = (f"transformers' test mixins come from its 5.24.0 sdist: `pip download --no-deps --no-binary transformers "
       f"transformers==5.24.0 -d <dir>` and set {ENV}=<dir>/{NAME}.tar.gz (sha256 {SHA256}); the mixin also "
       f"imports `parameterized` (pip install parameterized==0.9.0)")


@functools.cache
def tests_dir() -> pathlib.Path | None:
    """A package directory holding the sdist's two mixin files (and an empty ``__init__.py``),
    or None when ``MM_TRANSFORMERS_SDIST`` is unset. A path that is not the 5.24.0 sdist (a
    wrong hash, missing files) raises: a misconfigured run must not pass by skipping."""
    value = os.environ.get(ENV)
    if not value:
        return None
    source = pathlib.Path(value)
    out = pathlib.Path(tempfile.mkdtemp(prefix="mm_sdist_")) / "tests"
    atexit.register(shutil.rmtree, out.parent, True)
    out.mkdir()
    if source.is_dir():
        for name in FILES:
            shutil.copyfile(_existing(source / "tests" / name), out / name)
    else:
        _extract(_existing(source), out)
    (out / "__init__.py").write_text("")
    return out


def _existing(path: pathlib.Path) -> pathlib.Path:
    if not path.is_file():
        raise FileNotFoundError(f"{ENV}: {path} does not exist ({HOW})")
    return path


def _extract(tarball: pathlib.Path, out: pathlib.Path) -> None:
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    if digest != SHA256:
        raise ValueError(f"{ENV}: {tarball} has sha256 {digest}, not the {NAME} sdist's {SHA256}")
    with tarfile.open(tarball, "r:gz") as tar:
        for name in FILES:
            member = tar.extractfile(f"{NAME}/tests/{name}")
            (out / name).write_bytes(member.read())
