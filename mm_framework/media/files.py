"""Local file sources: only regular files, read with a cap and never blocking on open."""

from __future__ import annotations

import errno
import os
import stat

from ..errors import FetchError
from .policy import CHUNK_BYTES, ByteBudget, Collector, FetchPolicy


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def read_file(
    shown: str, path: str, max_bytes: int, budget: ByteBudget, policy: FetchPolicy, missing_hint: str = ""
) -> bytes:
    """Read one regular file, never more than ``max_bytes + 1`` bytes, never blocking on open.

    ``missing_hint`` is appended when the path does not exist (or cannot be a name).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if policy.local_roots is not None:
        # Checked before any stat, so files outside the roots cannot be probed for existence.
        path = os.path.realpath(path)
        if not any(_inside(path, os.path.realpath(root)) for root in policy.local_roots):
            raise FetchError(
                f"media fetch: {shown}: refused by fetch policy local_roots (resolves outside every allowed root)"
            )
        # The resolved path has no symlink left; one swapped in now is not followed.
        flags |= getattr(os, "O_NOFOLLOW", 0)
    sink = Collector(shown, max_bytes, budget)
    try:
        # stat first: opening a device or FIFO can have side effects (or, without
        # O_NONBLOCK, block); fstat again after open in case the path was swapped.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise FetchError(f"media fetch: {shown}: not a regular file")
        fd = os.open(path, flags)
    except OSError as e:
        hint = missing_hint if e.errno in (errno.ENOENT, errno.ENAMETOOLONG) else ""
        raise FetchError(f"media fetch: {shown}: {e.strerror or e}{hint}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FetchError(f"media fetch: {shown}: not a regular file")
        sink.expect(st.st_size)
        want = st.st_size + 1  # one read for an honest size, one more to see EOF
        while True:
            try:
                chunk = os.read(fd, want)
            except OSError as e:
                raise FetchError(f"media fetch: read {shown}: {e.strerror or e}") from None
            if not chunk:
                return sink.result()
            sink.add(chunk)
            want = min(CHUNK_BYTES, max_bytes + 1 - sink.size)
    finally:
        os.close(fd)
