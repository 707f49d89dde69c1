"""The toolkit's light modules (images, records) import without the harness, and load
without mm_framework at all, as the golden generators need in the reference environment."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mm_framework.testing as testing
from mm_framework.testing import load_module

TESTING = Path(testing.__file__).parent


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_images_and_records_import_without_pytest_or_the_harness():
    out = _run(
        "import sys; import mm_framework.testing.images, mm_framework.testing.records;"
        "print(sorted(m for m in ('pytest', 'mm_framework.testing.conformance', 'mm_framework.testing.golden')"
        " if m in sys.modules))"
    )
    assert out == "[]"


def test_light_modules_load_standalone_without_mm_framework():
    # mm_framework cannot be imported here at all; blake3 loads only when a digest is taken.
    out = _run(
        "import sys; sys.modules['mm_framework'] = None;"
        f"sys.path.insert(0, {str(TESTING)!r}); import standalone; standalone.use_light_modules();"
        "from mm_framework.testing.images import Makers, image_table;"
        "from mm_framework.testing.records import digest, sha256;"
        "before = 'blake3' in sys.modules;"
        "make = image_table('t', {'a.png': Makers().still(8, 6, 'PNG')});"
        "print(before, sha256(make('a.png')) == sha256(make('a.png')), len(digest(b'x')), 'pytest' in sys.modules)"
    )
    assert out == "False True 64 False"


def test_load_module_executes_a_file_once(tmp_path):
    log = tmp_path / "runs.txt"
    path = tmp_path / "counter.py"
    path.write_text(f"open({str(log)!r}, 'a').write('run ')\n")
    name = "mm_test_counter_module"
    try:
        first = load_module(path, name)
        assert load_module(path, name) is first and sys.modules[name] is first
        assert log.read_text() == "run "
    finally:
        sys.modules.pop(name, None)


def test_a_failing_module_is_not_left_registered(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("raise RuntimeError('broken on purpose')\n")
    with pytest.raises(RuntimeError, match="broken on purpose"):
        load_module(path, "mm_test_broken_module")
    assert "mm_test_broken_module" not in sys.modules


def test_image_jobs_and_write_reference_case(tmp_path):
    from mm_framework.testing.records import image_jobs, write_reference_case

    jobs = image_jobs(["a.png", "b.jpg"], {"two": ("<i><i>", ["a.png", "b.jpg"])}, ["b.jpg"], lambda n: f"<i>{n}")
    assert jobs == [("pil_object", "a_png", "<i>a.png", ["a.png"]), ("pil_object", "b_jpg", "<i>b.jpg", ["b.jpg"]),
                    ("pil_object", "two", "<i><i>", ["a.png", "b.jpg"]), ("path", "path_b_jpg", "<i>b.jpg", ["b.jpg"])]
    ok, rejected = str(tmp_path / "ok"), str(tmp_path / "rejected")
    divergences = {"b.jpg": ("MediaError", "unsupported", "why")}
    accepted = {"name": "c1", "images": [{"name": "a.png"}], "expected": {"input_ids": {"length": 7}}, "fam": {}}
    assert write_reference_case(accepted, divergences, ok, rejected, "fam") == "c1: 7"
    assert (tmp_path / "ok" / "c1" / "case.json").is_file()
    refused = {"name": "c2", "images": [{"name": "a.png"}, {"name": "b.jpg"}], "expected": {}, "fam": {},
               "reference_error": "ValueError: x"}
    assert write_reference_case(refused, divergences, ok, rejected, "fam") == "c2: rejected"
    assert refused["expected_error"] == {"type": "MediaError", "item": 1, "match": "unsupported", "divergence": "why"}
    assert "expected" not in refused and "fam" not in refused
    assert (tmp_path / "rejected" / "c2" / "case.json").is_file()
    with pytest.raises(RuntimeError, match="c3: unexpected reference error ValueError: y"):
        write_reference_case({"name": "c3", "images": [{"name": "a.png"}], "reference_error": "ValueError: y"},
                             divergences, ok, rejected, "fam")


def test_probe_samples_evenly_over_the_values_asked_for():
    from mm_framework.testing.records import probe

    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert probe(a, 4).tolist() == [0.0, 3.0, 7.0, 11.0]
    assert probe(a, 3, 5).tolist() == [0.0, 2.0, 4.0]
    assert probe(np.zeros((0, 3)), 4).tolist() == []
