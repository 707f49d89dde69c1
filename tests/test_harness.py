"""The conformance harness itself, exercised with pytester in subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

TESTS = Path(__file__).parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import pytest
from mm_framework import plugins
from toy_family import ToyPlugin, ToyFamily
import mm_framework as mmf
from mm_framework import plugin as mmp


class OffByOne(ToyFamily):
    # Plans one grid row more than it processes, so its counts are one row off.
    @mmp.hookimpl
    def mm_plan_item(self, header):
        plan = super().mm_plan_item(header)
        return mmp.ItemPlan(mmf.Grid(1, plan.geometry.h + 1, plan.geometry.w), plan.size)


class Extra:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toy_off_by_one", OffByOne)


@pytest.fixture(autouse=True, scope="session")
def _families():
    plugins.register(ToyPlugin(), name="toy-plugin")
    plugins.register(Extra(), name="extra")
"""

SUITE = """
import pytest
from mm_framework.testing import FamilyConformance


class TestToy(FamilyConformance):
    optional_fields = frozenset({{"image_token_id", "block"}})
    golden_dir = {golden!r}
    expected_failures = {expected!r}

    @pytest.fixture
    def family_spec(self):
        return {{"family": {family!r}, "image_token_id": 1, "block": 4}}
"""


def suite(pytester, family="toy", expected=None, golden=None):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE.format(family=family, expected=expected or {}, golden=golden))


def test_conforming_family_passes(pytester):
    suite(pytester)
    result = pytester.runpytest_subprocess("-q", "-rs")
    result.assert_outcomes(passed=20, skipped=1)
    result.stdout.fnmatch_lines(["*this family declares no golden_dir*"])


def test_failing_check_has_a_readable_id(pytester):
    suite(pytester, family="toy_off_by_one")
    result = pytester.runpytest_subprocess("-q")
    result.stdout.fnmatch_lines([
        "*FAILED test_suite.py::TestToy::test_layout_spans_match_token_counts[[]1[]]*",
        "*FAILED test_suite.py::TestToy::test_num_media_tokens_matches_real*",
    ])
    result.stdout.fnmatch_lines(["*num_media_tokens 2 != real 1*"])


def test_declared_deviation_becomes_strict_xfail(pytester):
    suite(pytester, family="toy_off_by_one", expected={
        "test_num_media_tokens_matches_real": "counts include a separator token",
        "test_layout_spans_match_token_counts": "same reason",
        "test_count_tokens_matches_processing": "same reason",
    })
    result = pytester.runpytest_subprocess("-q", "-rx")
    result.assert_outcomes(passed=16, skipped=1, xfailed=4)
    result.stdout.fnmatch_lines(["*declared deviation: counts include a separator token*"])


def test_stale_declared_deviation_fails(pytester):
    suite(pytester, expected={"test_empty_image_is_rejected": "no longer true"})
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=19, skipped=1, failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*declared deviation: no longer true*"])


RECORD = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import mm_framework as mmf
from mm_framework import plugins
from mm_framework.testing import record_case, sample_image
from toy_family import ToyPlugin
plugins.register(ToyPlugin(), name="toy-plugin")
spec = {{"family": "toy", "image_token_id": 1, "block": 4}}
import pathlib
d = pathlib.Path("golden/two_images")
d.mkdir(parents=True)
(d / "input_0.png").write_bytes(sample_image(20, 12, seed=5))
big = sample_image(40, 24, "JPEG", seed=6)
out = mmf.pipeline_from_spec(spec).process(mmf.MmInput(images=[(d / "input_0.png").read_bytes(), big], input_ids=[5, 1, 6, 1, 7]))
from blake3 import blake3
record_case(d, spec=spec, prompt_ids=[5, 1, 6, 1, 7], images=["input_0.png", {{"name": "big", "blake3": blake3(big).hexdigest()}}],
            output=out, provenance={{"generator": "test_harness"}})
"""

SOURCE = """

    @pytest.fixture
    def golden_image_source(self):
        from mm_framework.testing import sample_image
        return lambda name: sample_image(40, 24, "JPEG", seed=6)
"""


def golden_suite(pytester):
    suite(pytester, golden="golden")
    pytester.makepyfile(record=RECORD)
    res = pytester.run(__import__("sys").executable, "record.py")
    assert res.ret == 0, res.stderr.str()
    path = pytester.path / "test_suite.py"
    path.write_text(path.read_text() + SOURCE)
    return pytester.path / "golden" / "two_images" / "case.json"


def test_golden_replay_and_update(pytester):
    case = golden_suite(pytester)
    doc = json.loads(case.read_text())
    assert doc["expected"]["offsets"] == [[1, 15], [17, 76]] and len(doc["expected"]["hashes"]) == 2
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=21)

    doc["expected"]["features"][1]["blake3"] = "0" * 64
    case.write_text(json.dumps(doc))
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=20, failed=1)
    result.stdout.fnmatch_lines(["*golden case two_images: stage 'feature[[]1[]]' differs*"])

    pytester.runpytest_subprocess("-q", "--mm-update-goldens").assert_outcomes(passed=21)
    assert json.loads(case.read_text())["expected"]["features"][1]["blake3"] != "0" * 64
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=21)


def test_plugin_is_inert_for_other_test_modules(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    # Autoloaded through the pytest11 entry point: its option exists, nothing else happens.
    result = pytester.runpytest_subprocess("-q", "--mm-update-goldens")
    result.assert_outcomes(passed=1)
