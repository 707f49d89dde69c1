"""Environment variables: every one is checked when a Pipeline is built, and a bad value is
the same SpecError wherever it is read, naming the variable, its value and the accepted
forms, never an item."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mm_framework as mmf
from mm_framework import par, settings
from mm_framework.kernels import native

from .conftest import png_bytes

SPEC = {"family": "toy", "image_token_id": 1}
PROXY_FORMS = (
    "an http:// or https:// URL, or host[:port] for http:// (only http and https proxies are supported; "
    "the first parseable of ALL_PROXY, all_proxy, HTTPS_PROXY, https_proxy, HTTP_PROXY, http_proxy is the proxy)"
)
BAD = [
    ("MM_FRAMEWORK_THREADS", "abc",
     "MM_FRAMEWORK_THREADS must be 'inline', a number of threads, or 0 or unset for min(8, cores); got 'abc'"),
    ("MM_FRAMEWORK_KERNELS", "fast",
     "MM_FRAMEWORK_KERNELS must be 'native', 'portable', or unset for native when built, else portable; got 'fast'"),
    ("MM_FRAMEWORK_SIMD", "Baseline",
     ("MM_FRAMEWORK_SIMD must be 'baseline' (the portable C weighted sums even on an AVX2 CPU), "
      "or unset for AVX2 where present; got 'Baseline'")),
    ("REQUEST_TIMEOUT", "1.5", "REQUEST_TIMEOUT must be a positive whole number of seconds (default 3); got '1.5'"),
    # The password is not shown.
    ("ALL_PROXY", "socks5://user:secret@127.0.0.1:1080",
     f"ALL_PROXY must be {PROXY_FORMS}; got 'socks5://127.0.0.1:1080'"),
    ("https_proxy", "socks4://127.0.0.1:1080", f"https_proxy must be {PROXY_FORMS}; got 'socks4://127.0.0.1:1080'"),
]


@pytest.fixture
def env(monkeypatch, toy):
    """A clean environment for every variable the package reads; re-read afterwards."""
    for var in settings.VARIABLES:
        for name in var.names:
            monkeypatch.delenv(name, raising=False)
    yield monkeypatch
    monkeypatch.undo()
    par.set_threads(None)
    native.set_mode(None)


def _no_item(err: mmf.MmError) -> None:
    assert err.item is None and "item " not in str(err)


@pytest.mark.parametrize("name, value, message", BAD, ids=[b[0] for b in BAD])
def test_a_bad_variable_fails_when_the_pipeline_is_built(env, name, value, message):
    env.setenv(name, value)
    with pytest.raises(mmf.SpecError) as info:
        mmf.pipeline_from_spec(SPEC)
    assert str(info.value) == message
    _no_item(info.value)


@pytest.mark.parametrize("name, value", [
    ("MM_FRAMEWORK_THREADS", " Inline "), ("MM_FRAMEWORK_THREADS", "0"), ("MM_FRAMEWORK_KERNELS", " Portable "),
    ("MM_FRAMEWORK_SIMD", "baseline"), ("MM_FRAMEWORK_SIMD", ""), ("REQUEST_TIMEOUT", " 7 "),
    ("ALL_PROXY", "proxy.internal:3128"),  # no scheme: http://
    ("ALL_PROXY", "http://[::1"),  # unparseable: skipped, as when fetching
    ("NO_PROXY", ",,*, .internal,10.0.0.0/99,host:port"),  # no entry is ever refused
    ("MM_FRAMEWORK_DISABLE_PLUGINS", " , nothing"),
])
def test_accepted_forms_build(env, name, value):
    env.setenv(name, value)
    assert mmf.pipeline_from_spec(SPEC).family == "toy"


def test_a_socks_proxy_behind_the_one_in_use_is_not_checked(env):
    # The fetch goes through ALL_PROXY and never reads HTTP_PROXY; neither does the check.
    env.setenv("ALL_PROXY", "http://127.0.0.1:3128")
    env.setenv("HTTP_PROXY", "socks5://127.0.0.1:1080")
    mmf.pipeline_from_spec(SPEC)


@pytest.mark.parametrize("items", [1, 2])
def test_threads_set_after_the_build_name_no_item(env, threads, items):
    # One large image reads the variable in its own row-band fan-out, inside the item.
    pipe = mmf.pipeline_from_spec(mmf.preset("qwen2_vl"))
    env.setenv("MM_FRAMEWORK_THREADS", "abc")
    threads(None)
    inp = mmf.MmInput(images=[png_bytes(700, 700, seed=i) for i in range(items)],
                      input_ids=[pipe.capabilities.placeholders["image"]] * items)
    with pytest.raises(mmf.SpecError, match="^MM_FRAMEWORK_THREADS must be") as info:
        pipe.process(inp)
    _no_item(info.value)


def test_timeout_set_after_the_build_names_no_item_when_fetching(env):
    pipe = mmf.pipeline_from_spec(SPEC)
    env.setenv("REQUEST_TIMEOUT", "1.5")
    with pytest.raises(mmf.SpecError, match="^REQUEST_TIMEOUT must be") as info:
        pipe.process(mmf.MmInput(images=["http://127.0.0.1:9/a.png"], input_ids=[1]))
    _no_item(info.value)


def test_readme_lists_every_variable():
    text = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^### Environment variables$(.*?)^#", text, re.DOTALL | re.MULTILINE)
    assert section is not None
    missing = [n for var in settings.VARIABLES for n in var.names if f"`{n}`" not in section.group(1)]
    assert missing == []
