"""mm_framework.spec_fields: the shared spec-field reader, on its own (no family)."""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest

from mm_framework.errors import SpecError
from mm_framework.spec_fields import INT64_MAX, INT64_MIN, SpecFields

REQUIRED = ("size", "mean")
DEFAULTS = {"mode": "a", "flag": True}
GOOD = {"size": 4, "mean": [0.5, 0.5, 0.5]}


def reader(**changes):
    return SpecFields("fam", {**GOOD, **changes}, required=REQUIRED, defaults=DEFAULTS)


def rejects(get, value, message):
    """``get(reader)`` on field ``x = value`` raises a SpecError naming ``x`` with ``message``."""
    f = SpecFields("fam", {"x": value}, required=("x",))
    with pytest.raises(SpecError, match=f"^fam spec: field 'x' {re.escape(message)}"):
        get(f)


# ----- the mapping as a whole ---------------------------------------------------------


def test_defaults_fill_absent_optional_fields():
    f = reader()
    assert (f.integer("size"), f.choice("mode", "ab"), f.boolean("flag")) == (4, "a", True)
    assert reader(mode="b", flag=False).choice("mode", "ab") == "b"


@pytest.mark.parametrize("params", [[("size", 4)], "size=4", None, 4])
def test_non_mapping_is_rejected(params):
    with pytest.raises(SpecError, match=f"^fam spec: expected an object, got {type(params).__name__}$"):
        SpecFields("fam", params, required=REQUIRED, defaults=DEFAULTS)


def test_unknown_fields_are_named_with_the_known_ones():
    with pytest.raises(SpecError, match="^fam spec: unknown field 'sise'; known fields: size, mean, mode, flag$"):
        reader(sise=4)
    with pytest.raises(SpecError, match="^fam spec: unknown fields 'b', 'a'; known fields: "):
        reader(b=1, a=2)


def test_missing_required_fields_are_named():
    with pytest.raises(SpecError, match="^fam spec: missing required field 'mean'$"):
        SpecFields("fam", {"size": 4}, required=REQUIRED)
    with pytest.raises(SpecError, match="^fam spec: missing required fields 'size', 'mean'$"):
        SpecFields("fam", {}, required=REQUIRED, defaults=DEFAULTS)


def test_unknown_is_reported_before_missing():
    with pytest.raises(SpecError, match="unknown field 'x'"):
        SpecFields("fam", {"x": 1}, required=REQUIRED)


# ----- integer ------------------------------------------------------------------------


@pytest.mark.parametrize("value", [4.0, "4", None, True, False, [4]])
def test_integer_rejects_non_integers(value):
    rejects(lambda f: f.integer("x"), value, f"must be an integer, got {value!r}")


@pytest.mark.parametrize(
    "bounds, value, message",
    [
        ({"minimum": 0}, -1, "must be >= 0, got -1"),
        ({"minimum": 1}, 0, "must be greater than zero, got 0"),
        ({"minimum": 2}, 1, "must be >= 2, got 1"),
        ({"minimum": 1, "maximum": 8}, 9, "must be <= 8, got 9"),
        ({}, INT64_MAX + 1, f"must fit in int64, got {INT64_MAX + 1}"),
        ({}, INT64_MIN - 1, f"must fit in int64, got {INT64_MIN - 1}"),
    ],
)
def test_integer_bounds(bounds, value, message):
    rejects(lambda f: f.integer("x", **bounds), value, message)


def test_integer_accepts_in_range_values_as_plain_ints():
    for value in (INT64_MIN, -101, 0, INT64_MAX, np.int64(7), np.uint8(3)):
        got = SpecFields("fam", {"x": value}, required=("x",)).integer("x")
        assert got == value and type(got) is int
    assert SpecFields("fam", {"x": 8}, required=("x",)).integer("x", minimum=8, maximum=8) == 8


def test_nullable_integer():
    assert SpecFields("fam", {"x": None}, required=("x",)).integer("x", minimum=1, nullable=True) is None
    rejects(lambda f: f.integer("x", nullable=True), "1", "must be an integer or null/None, got '1'")
    rejects(lambda f: f.integer("x", minimum=1, nullable=True), 0, "must be greater than zero, got 0")


# ----- number -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["2.0", True, None, [1.0], 1j])
def test_number_rejects_non_numbers(value):
    rejects(lambda f: f.number("x"), value, f"must be a number, got {value!r}")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 10**400, -(10**400)])
def test_number_rejects_non_finite(value):
    rejects(lambda f: f.number("x"), value, f"must be finite, got {value!r}")


@pytest.mark.parametrize("value", [0, 0.0, -1.5, float("nan")])
def test_positive_number(value):
    rejects(lambda f: f.number("x", positive=True), value, f"must be finite and greater than zero, got {value!r}")


def test_number_accepts_reals_as_plain_floats():
    for value, expected in [(2, 2.0), (-0.5, -0.5), (Fraction(1, 4), 0.25), (np.float32(1.5), 1.5), (10**300, 1e300)]:
        got = SpecFields("fam", {"x": value}, required=("x",)).number("x")
        assert got == expected and type(got) is float
    assert SpecFields("fam", {"x": 1e-300}, required=("x",)).number("x", positive=True) == 1e-300


def test_nullable_number():
    assert SpecFields("fam", {"x": None}, required=("x",)).number("x", positive=True, nullable=True) is None
    rejects(lambda f: f.number("x", nullable=True), "2", "must be a number or null/None, got '2'")


# ----- floats -------------------------------------------------------------------------


@pytest.mark.parametrize("value", [[0.5, 0.5], [0.5] * 4, 0.5, "0.5", None, {"a": 1}])
def test_floats_rejects_wrong_shapes(value):
    rejects(lambda f: f.floats("x"), value, f"must be a list of 3 numbers, got {value!r}")


@pytest.mark.parametrize(
    "value", [[0.5, "x", 0.5], [0.5, True, 0.5], [0.5, None, 0.5], [float("nan"), 0.5, 0.5], [0.5, 0.5, float("inf")],
              [0.5, 10**400, 0.5]],
)
def test_floats_rejects_non_finite_or_non_numbers(value):
    rejects(lambda f: f.floats("x"), value, f"must hold 3 finite numbers, got {value!r}")


@pytest.mark.parametrize("value", [[0.5, 1e39, 0.5], [-1e39, 0.5, 0.5], [0.5, 0.5, 10**39]])
def test_floats_must_stay_finite_as_float32(value):
    rejects(lambda f: f.floats("x"), value, f"must hold numbers within float32 range, got {value!r}")


@pytest.mark.parametrize("value", [[0.2, 0, 0.2], [0.2, -0.0, 0.2], [0.2, 1e-50, 0.2]])
def test_nonzero_floats_refuse_what_is_zero_as_float32(value):
    rejects(lambda f: f.floats("x", nonzero=True), value, f"must not contain 0 (as float32), got {value!r}")
    assert SpecFields("fam", {"x": value}, required=("x",)).floats("x") == tuple(float(v) for v in value)


def test_floats_returns_a_tuple_of_the_given_values():
    f = SpecFields("fam", {"x": (1, 0.25, 3.4e38), "y": [1e-40, 2]}, required=("x", "y"))
    got = f.floats("x", nonzero=True)
    assert got == (1.0, 0.25, 3.4e38) and all(type(v) is float for v in got)
    # Subnormal in float32 is not zero; the value kept is the given one, not its float32 rounding.
    assert f.floats("y", n=2, nonzero=True) == (1e-40, 2.0)
    rejects(lambda f: f.floats("x", n=2), [1.0], "must be a list of 2 numbers, got [1.0]")


# ----- choice, boolean ----------------------------------------------------------------


@pytest.mark.parametrize("value", ["c", "A", None, 1, ["a"]])
def test_choice(value):
    assert SpecFields("fam", {"x": "b"}, required=("x",)).choice("x", ("a", "b")) == "b"
    rejects(lambda f: f.choice("x", {"a": 0, "b": 1}), value, f"must be one of 'a', 'b', got {value!r}")


@pytest.mark.parametrize("value", [1, 0, "true", None])
def test_boolean(value):
    assert SpecFields("fam", {"x": False}, required=("x",)).boolean("x") is False
    rejects(lambda f: f.boolean("x"), value, f"must be true or false, got {value!r}")


# ----- cross-field errors and plain arguments -----------------------------------------


def test_error_names_the_field():
    err = reader().error("mode", "requires flag")
    assert isinstance(err, SpecError) and str(err) == "fam spec: field 'mode' requires flag"


def test_arguments_use_the_same_rules_with_bare_names():
    args = SpecFields.arguments(patch_size=0, frac=None, cap=8)
    with pytest.raises(SpecError, match="^patch_size must be greater than zero, got 0$"):
        args.integer("patch_size", minimum=1)
    assert args.number("frac", nullable=True) is None
    assert args.integer("cap", minimum=1) == 8
    assert str(args.error("cap", "requires frac > 1")) == "cap requires frac > 1"
