"""Counts, per upstream test, the calls ``mm_framework.hf`` served and those it handed back,
and prints them by model at the end (a test that passes only through fallbacks proves
nothing about mm_framework's tensors). A family of test_sdist_image.py whose run passed one
of the mixin's tests calling the processor on images (``SERVING``) must have had calls served
on both backends (test_sdist_video.py: on the torchvision one, the only video backend), or
the session fails."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from . import upstream

# model, outcome, served by PIL-backend classes, served by torchvision-backend classes, fallbacks, not accelerated
_rows: list[tuple[str, str, int, int, int, int]] = []
# The mixin tests that call each backend's processor on 3-channel uint8 images, which the adapter serves.
SERVING = ("test_call_pil", "test_call_numpy", "test_call_pytorch", "test_cast_dtype_device", "test_nested_input")
# The backends each sdist run must serve, by the prefix of its test classes.
_BACKENDS = {"sdist_": ("PIL", "torchvision"), "sdistvideo_": ("torchvision",)}
_serving_passed: set[str] = set()


@pytest.fixture(autouse=True)
def _hf_counts(request):
    import zlib

    import numpy as np

    from mm_framework import hf

    # The upstream inputs are np.random draws: the same per test, with or without the adapter.
    np.random.seed(zlib.crc32(request.node.name.encode()))
    hf.reset_stats()
    yield
    counts = hf.stats()
    not_accelerated = sum(n for why, n in counts["fallbacks"].items() if ": not accelerated: " in why)
    request.node.user_properties += [
        ("served_pil", sum(n for name, n in counts["served"].items() if name.endswith("Pil"))),
        ("served_tv", sum(n for name, n in counts["served"].items() if not name.endswith("Pil"))),
        ("fallbacks", sum(counts["fallbacks"].values()) - not_accelerated),
        ("not_accelerated", not_accelerated),
        ("fallback_reasons", counts["fallbacks"]),
    ]


_outcomes: dict[str, str] = {}
_reasons: dict[str, Counter[str]] = defaultdict(Counter)


def pytest_runtest_logreport(report):
    # The counts are attached when the fixture ends, so they ride on the teardown report.
    if "hf_upstream" not in report.nodeid or "::" not in report.nodeid:
        return
    if report.when == "call" or report.skipped or report.failed:
        _outcomes.setdefault(report.nodeid, "skipped" if report.skipped else report.outcome)
    if report.when == "teardown":
        props = dict(report.user_properties)
        model = report.nodeid.split("::")[1].split("__")[0]
        _reasons[model].update(props.get("fallback_reasons", {}))
        outcome = _outcomes.pop(report.nodeid, "skipped")
        if outcome == "passed" and report.nodeid.split("::")[-1] in SERVING:
            _serving_passed.add(model)
        _rows.append((model, outcome, props.get("served_pil", 0), props.get("served_tv", 0), props.get("fallbacks", 0),
                      props.get("not_accelerated", 0)))


def _unserved() -> list[str]:
    """The sdist families that passed a ``SERVING`` test with no call served on a backend
    (none in a baseline run, ``MM_UPSTREAM_ADAPTER=0``)."""
    if not upstream.adapter_on():
        return []
    served: dict[str, Counter[str]] = defaultdict(Counter)
    for model, _, pil, tv, *_ in _rows:
        served[model].update({"PIL": pil, "torchvision": tv})
    return [f"{model}: {backend} backend served no call"
            for model in sorted(_serving_passed) for prefix, backends in _BACKENDS.items() if model.startswith(prefix)
            for backend in backends if served[model][backend] == 0]


def pytest_sessionfinish(session):
    if _unserved():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if not _rows:
        return
    table: dict[str, list[int]] = defaultdict(lambda: [0] * 8)
    for model, outcome, *counts in _rows:
        row = table[model]
        row[("passed", "failed", "skipped").index(outcome)] += 1
        for i, n in enumerate(counts):
            row[3 + i] += n
        row[7] += outcome == "passed" and counts[0] + counts[1] > 0
    terminalreporter.section("transformers' own tests through mm_framework.hf")
    terminalreporter.write_line("model                 passed failed skipped | calls served: pil torchvision | "
                                "fallback not-accel | passed with a served call")
    for model, r in sorted(table.items()):
        terminalreporter.write_line(f"{model:<21} {r[0]:>6} {r[1]:>6} {r[2]:>7} | {r[3]:>17} {r[4]:>11} | {r[5]:>8} "
                                    f"{r[6]:>9} | {r[7]}")
    terminalreporter.write_line("handed back to transformers, by reason (calls):")
    for model, reasons in sorted(_reasons.items()):
        for reason, n in reasons.most_common():
            terminalreporter.write_line(f"  {model}: {n} x {reason[:150]}")
    for problem in _unserved():
        terminalreporter.write_line(f"FAILED (tests passed only through transformers): {problem}", red=True)
