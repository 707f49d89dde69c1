"""pytest11 entry point of the conformance harness.

Inert by default: it only adds the ``--mm-update-goldens`` option and the
``mm_update_goldens`` and ``mm_hf_stats`` fixtures. Nothing runs unless a test module subclasses
``mm_framework.testing.FamilyConformance``. Heavy imports stay inside the fixture so
coverage of mm_framework itself is not skewed by early imports.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mm_framework", "mm_framework family conformance")
    group.addoption(
        "--mm-update-goldens",
        action="store_true",
        default=False,
        help="rewrite the expected outputs of golden cases from the current implementation "
        "instead of comparing (deliberate re-baselining only; cases made in the reference "
        "environment are refused: only their generator rewrites them)",
    )


@pytest.fixture
def mm_update_goldens(request: pytest.FixtureRequest) -> bool:
    """True when the run was asked to rewrite golden cases."""
    return bool(request.config.getoption("--mm-update-goldens"))


@pytest.fixture
def mm_hf_stats():
    """``mm_framework.hf`` with its served/fallback counts reset before and after the test."""
    from mm_framework import hf

    hf.reset_stats()
    yield hf
    hf.reset_stats()
