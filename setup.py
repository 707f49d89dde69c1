"""Build of the optional native kernels (``mm_framework.kernels._native``).

Everything else about the distribution is in pyproject.toml. The extension is optional:
without a working C compiler the build prints a warning and the install goes on; the
package then runs its portable numpy/Pillow kernels (docs/kernels.md).

``MM_FRAMEWORK_NATIVE_CFLAGS`` replaces the optimisation flags (default ``-O3``), e.g.
for the sanitizer build of ``.ci/sanitize``.
"""

import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# Not named after the module: a source folder called _native would import as an empty
# namespace package wherever the extension is missing.
SRC = Path("mm_framework/kernels/native_src")


class BuildNative(build_ext):
    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "msvc":
            flags = ["/O2", "/fp:precise"]
        else:
            # No floating-point contraction: Pillow's tables are f64 arithmetic in a fixed
            # order, and a fused multiply-add would round some weights differently.
            opt = os.environ.get("MM_FRAMEWORK_NATIVE_CFLAGS", "-O3").split()
            flags = [*opt, "-std=gnu11", "-ffp-contract=off", "-fno-strict-aliasing", "-Wall", "-Wextra"]
            self._link_flags = [f for f in opt if f.startswith("-fsanitize")]
        for ext in self.extensions:
            ext.extra_compile_args = flags
            ext.extra_link_args = getattr(self, "_link_flags", [])
        super().build_extensions()


setup(
    ext_modules=[
        Extension(
            "mm_framework.kernels._native",
            sources=sorted(str(p) for p in SRC.glob("*.c")),
            depends=sorted(str(p) for p in SRC.glob("*.h")),
            optional=True,
        )
    ],
    cmdclass={"build_ext": BuildNative},
)
