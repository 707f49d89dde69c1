"""The portable (non-AVX2) body of the resample sums gives the same bytes.

On an AVX2 machine the extension picks its AVX2 body when it loads, so the portable one
would go untested; ``MM_FRAMEWORK_SIMD=baseline`` keeps the portable body, and the random
sweeps of the Pillow and ATen kernels run again in a process started with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mm_framework.kernels import native

pytestmark = pytest.mark.skipif(not native.built(), reason=f"native kernels not built: {native.missing_cause()}")

HERE = Path(__file__).parent


def test_sweeps_pass_with_the_portable_body(tmp_path):
    # Run away from the repository root: there, ``python -c`` would import the source tree
    # (which holds no compiled extension when the package is installed, not editable).
    env = {**os.environ, "MM_FRAMEWORK_SIMD": "baseline", "MM_FRAMEWORK_KERNELS": "native"}
    probe = subprocess.run(
        [sys.executable, "-c", "from mm_framework.kernels import native; print(native.simd_level())"],
        env=env, capture_output=True, text=True, check=True, cwd=tmp_path,
    )
    assert probe.stdout.strip() == "baseline"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-k", "bicubic or lanczos or random_sweep or band",
         str(HERE / "test_native_pil.py"), str(HERE / "test_native_aten.py")],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
