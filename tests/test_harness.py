"""The conformance harness itself, exercised with pytester in subprocesses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
REPO = TESTS.parent

# The sandboxes import the toy family from a copy beside their own conftest.
CONFTEST = """
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
    pytester.makepyfile(toy_family=(TESTS / "toy_family.py").read_text())
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


RECORD = """
import mm_framework as mmf
from mm_framework import plugins
from mm_framework.testing import golden, record_case, sample_image
from toy_family import ToyPlugin
plugins.register(ToyPlugin(), name="toy-plugin")
spec = {"family": "toy", "image_token_id": 1, "block": 4}
import pathlib
d = pathlib.Path("golden/two_images")
d.mkdir(parents=True)
(d / "input_0.png").write_bytes(sample_image(20, 12, seed=5))
big = sample_image(40, 24, "JPEG", seed=6)
pipe = mmf.pipeline_from_spec(spec)
inp = mmf.MmInput(images=[(d / "input_0.png").read_bytes(), big], input_ids=[5, 1, 6, 1, 7])
stages = {k: golden.digest(v) for k, v in golden.standard_stages(pipe, inp).items()}
images = ["input_0.png", {"name": "big", "blake3": golden.digest(big)}]
record_case(d, spec=spec, prompt_ids=[5, 1, 6, 1, 7], images=images, output=pipe.process(inp),
            provenance={"mm_framework": mmf.__version__}, stages=stages)
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
    assert sorted(doc["expected"]["stages"]) == ["decoded_rgb[0]", "decoded_rgb[1]"]
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=21)

    doc["expected"]["features"][1]["blake3"] = "0" * 64
    case.write_text(json.dumps(doc))
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=20, failed=1)
    result.stdout.fnmatch_lines(["*golden case two_images: stage 'feature[[]1[]]' differs*"])

    pytester.runpytest_subprocess("-q", "--mm-update-goldens").assert_outcomes(passed=21)
    assert json.loads(case.read_text())["expected"]["features"][1]["blake3"] != "0" * 64
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=21)


def test_altered_stage_fails_replay(pytester):
    case = golden_suite(pytester)
    doc = json.loads(case.read_text())
    doc["expected"]["stages"]["decoded_rgb[1]"] = "0" * 64
    case.write_text(json.dumps(doc))
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=20, failed=1)
    result.stdout.fnmatch_lines(["*golden case two_images: stage 'decoded_rgb[[]1[]]' differs*"])


def test_recorded_stage_the_family_cannot_compute_fails_replay(pytester):
    case = golden_suite(pytester)
    doc = json.loads(case.read_text())
    doc["expected"]["stages"]["resized_u8[0]"] = "0" * 64
    case.write_text(json.dumps(doc))
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=20, failed=1)
    result.stdout.fnmatch_lines(["*golden case two_images: stage 'resized_u8[[]0[]]' is recorded but not computed*"])


REFUSED = "*golden case * was made in the reference environment (*): --mm-update-goldens may not rewrite it*"


def test_update_refuses_a_reference_case(pytester):
    case = golden_suite(pytester)
    doc = json.loads(case.read_text())
    doc["expected"]["features"][1]["blake3"] = "0" * 64
    doc["provenance"] = {"generator": "tests/generate_toy_goldens.py", "transformers": "5.24.0"}
    case.write_text(json.dumps(doc))
    before = case.read_bytes()
    result = pytester.runpytest_subprocess("-q", "--mm-update-goldens")
    assert result.ret != 0
    result.assert_outcomes(passed=20, failed=1)
    made_by = "(generator tests/generate_toy_goldens.py, transformers 5.24.0)"
    result.stdout.fnmatch_lines([REFUSED.replace("(*)", made_by)])
    assert case.read_bytes() == before


# One case of every bundled family's golden cases (each family's own replay runs them all).
BUNDLED = sorted(
    p.parent for d in (REPO / "qwen_vl_plugin", REPO / "inkling_plugin", *sorted((REPO / "plugins").glob("*_plugin")))
    for p in sorted((d / "tests" / "golden" / "cases").glob("*/case.json"))[:1]
)

REFERENCE_SUITE = """
import json
import pytest
from mm_framework.testing import FamilyConformance


class TestBundled(FamilyConformance):
    golden_dir = "golden"

    @pytest.fixture
    def family_spec(self):
        return json.load(open("golden/{name}/case.json"))["spec"]
"""


def test_every_bundled_family_has_golden_cases_here():
    families = {json.loads((d / "case.json").read_text())["spec"]["family"] for d in BUNDLED}
    assert families >= {"qwen_vl", "inkling", "gemma3", "pixtral", "llava_onevision"}


@pytest.mark.parametrize("case_dir", BUNDLED, ids=lambda d: d.parents[3].name)
def test_update_refuses_every_bundled_familys_goldens(pytester, case_dir):
    copy = pytester.path / "golden" / case_dir.name
    shutil.copytree(case_dir, copy)
    before = (copy / "case.json").read_bytes()
    assert json.loads(before)["provenance"].get("generator")
    pytester.makepyfile(test_bundled=REFERENCE_SUITE.format(name=case_dir.name))
    result = pytester.runpytest_subprocess("-q", "-k", "test_golden_case", "--mm-update-goldens")
    assert result.ret != 0
    result.assert_outcomes(failed=1, deselected=20)
    result.stdout.fnmatch_lines([REFUSED])
    assert (copy / "case.json").read_bytes() == before


def test_plugin_is_inert_for_other_test_modules(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    # Autoloaded through the pytest11 entry point: its option exists, nothing else happens.
    result = pytester.runpytest_subprocess("-q", "--mm-update-goldens")
    result.assert_outcomes(passed=1)
