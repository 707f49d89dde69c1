"""Fetch: source forms, strict base64, local files, byte caps and the fetch policy (no HTTP)."""

from __future__ import annotations

import base64
import os
import pickle
import threading

import numpy as np
import pytest
from .fetch_helpers import IMAGE, PLACEHOLDER, clean_env, probe_family, probe_pipeline, resolve

import mm_framework as mmf
from mm_framework import media
from mm_framework.media import sources
from mm_framework import content_hash

MAX = 64 * 1024 * 1024
B64_IMAGE = base64.b64encode(IMAGE).decode()
MODES = ["sync", "async"]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    clean_env(monkeypatch)


@pytest.fixture
def image_file(tmp_path):
    p = tmp_path / "img.png"
    p.write_bytes(IMAGE)
    return p


def _raises(exc: type, match: str, mode: str, sources: list, **kw):
    with pytest.raises(exc, match=match) as info:
        resolve(mode, sources, **kw)
    return info.value


# --------------------------------------------------------------------------- forms


@pytest.mark.parametrize(
    "source, form",
    [
        ("http://h/x", "http"),
        ("https://h/x", "https"),
        ("file:///a/x", "file"),
        ("file://rel", "file"),
        ("/abs/x.png", "path"),
        ("data:image/png;base64,AAAA", "data"),
        ("aGVsbG8=", "base64"),
        # Prefix checks are case-sensitive: these are all (bad) base64.
        ("HTTP://h/x", "base64"),
        ("File:///a", "base64"),
        ("DATA:,AAAA", "base64"),
        ("relative/x.png", "base64"),
        ("", "base64"),
    ],
)
def test_source_form_precedence(source, form):
    assert media.source_form(source) == form


@pytest.mark.parametrize("mode", MODES)
def test_data_url_and_bare_base64_decode(mode):
    sources = [
        "data:text/plain;base64,aGVsbG8=",
        "data:,aGVsbG8=",  # no ;base64 marker: still base64, as the reference
        "data:image/png;base64,  aGVsbG8=\n",  # surrounding whitespace trimmed
        "aGVsbG8=",
        " \t aGVsbG8=\r\n",
    ]
    assert resolve(mode, sources) == [b"hello"] * len(sources)


def test_data_url_payload_starts_after_the_first_comma():
    assert media.fetch_bytes("data:a,aGVsbG8=") == b"hello"
    with pytest.raises(mmf.MediaError, match="invalid symbol ','"):
        media.fetch_bytes("data:a,b,aGVsbG8=")


@pytest.mark.parametrize(
    "source, match",
    [
        ("data:image/png;base64", "malformed data: URL"),
        ("data:", "malformed data: URL"),
        ("data:image/png;base64,", "empty payload"),
        ("data:,   ", "empty payload"),
        ("data:;base64,aGVsbG8", "invalid length 7"),
        ("data:;base64,aGVs bG8=", "invalid symbol ' ' at offset 4"),
        ("data:;base64,aGVs\nbG8=", r"invalid symbol '\\n' at offset 4"),
        ("data:;base64,aGVsbG8-", "invalid symbol '-'"),  # URL-safe alphabet
        ("data:;base64,aGVsbG8_", "invalid symbol '_'"),
        ("data:image/png,%89PNG%0D%0A", "invalid symbol '%'"),  # percent-encoded, not base64
        ("data:;base64,aGVsbG9=", "non-zero trailing bits"),
        ("data:;base64,aGVsbA=!", "invalid padding at offset 6"),
        ("data:;base64,aGVsbG8===", "invalid padding"),
        ("data:;base64,aGVsbA==aGVs", "invalid padding at offset 6"),
        ("data:;base64,=aGVsbG8", "invalid padding at offset 0"),
        ("data:;base64,aGVsbG8\u00e9", "invalid symbol '\u00e9'"),
    ],
)
def test_malformed_data_urls_are_media_errors(source, match):
    for mode in MODES:
        err = _raises(mmf.MediaError, match, mode, [IMAGE, source])
        assert err.item == 1 and str(err).startswith("item 1: media fetch")


@pytest.mark.parametrize(
    "source, match",
    [
        ("!!not-base64!!", "invalid symbol '!' at offset 0"),
        ("aGVsbG8", "invalid length 7"),
        ("aGVsbG8=aGVsbG8=", "invalid padding at offset 7"),
        ("aGVs\tbG8=", r"invalid symbol '\\t'"),
        ("aGVsbG8*", r"invalid symbol '\*'"),
        ("QR==", "invalid last symbol 'R' at offset 1"),
        ("QUJ=", "invalid last symbol 'J' at offset 2"),
        ("A===", "invalid padding at offset 1"),
        ("====", "invalid padding at offset 0"),
        ("A", "invalid length 1"),
        ("   ", "empty payload"),
        ("", "empty payload"),
        ("relative/path.png", "invalid symbol '.'"),
        ("\u00e9t\u00e9", "invalid symbol '\u00e9' at offset 0"),
    ],
)
def test_bad_bare_base64_is_a_media_error(source, match):
    for mode in MODES:
        err = _raises(mmf.MediaError, match, mode, [source])
        assert err.item == 0


@pytest.mark.parametrize("n", range(0, 12))
def test_base64_decode_strict_round_trips(n):
    raw = bytes(range(200, 200 - n, -1))
    text = base64.b64encode(raw)
    assert media.base64_decode_strict(text.decode()) == raw
    assert media.base64_decode_strict(text) == raw
    assert media.base64_decode_strict(f"\n {text.decode()} \n") == raw


def test_oversized_base64_rejected_before_decoding():
    big = "A" * (MAX // 3 * 4 + 8)
    with pytest.raises(mmf.LimitExceededError, match="base64 payload exceeds 67108864 bytes"):
        media.fetch_bytes(big)
    # Invalid characters too: the size check comes first, nothing is decoded.
    with pytest.raises(mmf.LimitExceededError, match="exceeds 67108864 bytes"):
        media.fetch_bytes("data:," + "!" * (MAX // 3 * 4 + 8))


def test_base64_just_under_the_cap_passes():
    payload = base64.b64encode(bytes(1000)).decode()
    assert resolve("sync", [payload], limits=mmf.Limits(max_source_bytes=1000)) == [bytes(1000)]
    with pytest.raises(mmf.LimitExceededError, match="exceeds 999 bytes"):
        resolve("sync", [payload], limits=mmf.Limits(max_source_bytes=999))


@pytest.mark.parametrize("mode", MODES)
def test_base64_shares_the_request_budget(mode):
    # 4096-byte payloads with a budget of 6144: the first passes, the second does not.
    payload = base64.b64encode(bytes(range(256)) * 16).decode()
    limits = mmf.Limits(max_request_bytes=6144)
    assert len(resolve(mode, [payload], limits=limits)[0]) == 4096
    err = _raises(mmf.LimitExceededError, "request media byte budget", mode, [payload, payload], limits=limits)
    assert err.item in (0, 1) if mode == "async" else err.item == 1
    # The exact budget: base64 of b"a" fits a budget of 1, a second one does not.
    assert resolve(mode, ["YQ=="], limits=mmf.Limits(max_request_bytes=1)) == [b"a"]
    _raises(mmf.LimitExceededError, "budget", mode, ["YQ==", "YQ=="], limits=mmf.Limits(max_request_bytes=1))


# --------------------------------------------------------------------------- bytes


@pytest.mark.parametrize("mode", MODES)
def test_bytes_like_sources_are_copied_and_capped(mode):
    buf = bytearray(b"abc")
    out = resolve(mode, [buf, memoryview(b"xyz"), b"q"])
    buf[0] = ord("z")
    assert out == [b"abc", b"xyz", b"q"] and all(type(x) is bytes for x in out)
    limits = mmf.Limits(max_source_bytes=2)
    err = _raises(mmf.LimitExceededError, "exceeds 2 bytes", mode, [b"ab", b"abc"], limits=limits)
    assert err.item == 1
    _raises(mmf.LimitExceededError, "budget", mode, [b"ab", b"abc"], limits=mmf.Limits(max_request_bytes=4))


def test_unsupported_source_type_is_invalid_input():
    with pytest.raises(mmf.InvalidInputError, match="item 1: unsupported source type int"):
        media.resolve_sources([b"x", 5], limits=mmf.Limits())


# --------------------------------------------------------------------------- files


@pytest.mark.parametrize("mode", MODES)
def test_file_url_and_absolute_path_read_the_file(mode, image_file):
    assert resolve(mode, [f"file://{image_file}", str(image_file)]) == [IMAGE, IMAGE]


def test_bare_base64_starting_with_a_slash_is_a_path():
    # The reference's precedence: a JPEG's base64 ("/9j/...") is read as a path. The
    # error says so, and abbreviates the would-be path.
    b64 = "/9j/" + "A" * 4000
    hint = r"\(sources starting with '/' are paths; send base64 as a data: URL\)"
    with pytest.raises(mmf.FetchError, match=r"\(4004 chars\): No such file or directory " + hint):
        media.fetch_bytes(b64)
    assert media.fetch_bytes(f"data:image/jpeg;base64,{b64}") == base64.b64decode(b64)


def test_relative_file_url_reads_relative_to_cwd(tmp_path, monkeypatch, image_file):
    monkeypatch.chdir(tmp_path)
    assert media.fetch_bytes("file://img.png") == IMAGE


@pytest.mark.parametrize("mode", MODES)
def test_missing_file_fails(mode, tmp_path):
    for src in (f"file://{tmp_path}/nope.png", f"{tmp_path}/nope.png"):
        err = _raises(mmf.FetchError, "No such file or directory", mode, [src])
        assert err.item == 0 and src in str(err)


@pytest.mark.parametrize("mode", MODES)
def test_non_regular_files_are_refused_without_reading(mode, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for src in ("/dev/zero", str(tmp_path), str(fifo), f"file://{fifo}"):
        _raises(mmf.FetchError, "not a regular file", mode, [src])


def test_dev_zero_with_a_large_budget_is_still_refused():
    with pytest.raises(mmf.FetchError, match="/dev/zero: not a regular file"):
        media.resolve_sources(["/dev/zero"], limits=mmf.Limits(max_request_bytes=4 * MAX))


@pytest.mark.parametrize("mode", MODES)
def test_file_caps(mode, tmp_path):
    files = []
    for i in range(4):
        p = tmp_path / f"f{i}"
        p.write_bytes(bytes([i]) * 1024)
        files.append(str(p))
    # Four 1 KiB files fit a 4 KiB budget exactly; one more byte does not.
    assert resolve(mode, files, limits=mmf.Limits(max_request_bytes=4096)) == [bytes([i]) * 1024 for i in range(4)]
    one = tmp_path / "one"
    one.write_bytes(b"!")
    limits = mmf.Limits(max_request_bytes=4096)
    _raises(mmf.LimitExceededError, "request media byte budget", mode, [*files, str(one)], limits=limits)
    # The per-source cap holds whatever the budget.
    big = tmp_path / "big"
    big.write_bytes(bytes(1001))
    limits = mmf.Limits(max_source_bytes=1000, max_request_bytes=10**9)
    _raises(mmf.LimitExceededError, "exceeds 1000 bytes", mode, [str(big)], limits=limits)
    big.write_bytes(bytes(1000))
    assert resolve(mode, [str(big)], limits=limits) == [bytes(1000)]


# --------------------------------------------------------------------------- policy


def test_policy_defaults_allow_everything():
    p = mmf.FetchPolicy()
    assert p.schemes == frozenset(media.FORMS)
    assert p.local_roots is None and p.allow_private_networks and p.allowed_hosts == () and p.max_redirects == 5


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"schemes": ["ftp"]}, mmf.SpecError, "unknown form"),
        ({"schemes": "http"}, mmf.SpecError, "not one string"),
        ({"local_roots": "/srv"}, mmf.SpecError, "not one path"),
        ({"local_roots": [""]}, mmf.SpecError, "non-empty"),
        ({"allowed_hosts": "127.0.0.1"}, mmf.SpecError, "not one string"),
        ({"allowed_hosts": ["127.0.0.1:http"]}, mmf.SpecError, "malformed entry"),
        ({"allowed_hosts": ["127.0.0.1:70000"]}, mmf.SpecError, "malformed entry"),
        ({"allowed_hosts": [":80"]}, mmf.SpecError, "malformed entry"),
        ({"allowed_hosts": ["::ffff:127.0.0.1"]}, mmf.SpecError, "brackets"),
        ({"allowed_hosts": ["[::ffff:127.0.0.1"]}, mmf.SpecError, "malformed entry"),
        ({"allowed_hosts": [5]}, mmf.SpecError, "must be str"),
        ({"max_redirects": -1}, mmf.SpecError, "max_redirects"),
        ({"allow_private_networks": "no"}, mmf.SpecError, "allow_private_networks"),
    ],
)
def test_policy_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        mmf.FetchPolicy(**kwargs)


def test_policy_pickles_with_the_pipeline():
    p = mmf.FetchPolicy(schemes={"https"}, local_roots=["/srv"], allow_private_networks=False,
                        allowed_hosts=["127.0.0.1:8080"], max_redirects=2)
    assert pickle.loads(pickle.dumps(p)) == p


def test_policy_normalizes_hosts_and_roots(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = mmf.FetchPolicy(allowed_hosts=[" 127.0.0.1:8080 ", "[::FFFF:127.0.0.1]:80"], local_roots=["imgs"])
    assert p.allowed_hosts == ("127.0.0.1:8080", "[::ffff:127.0.0.1]:80")
    assert p.local_roots == (str(tmp_path / "imgs"),)


@pytest.mark.parametrize(
    "form, source",
    [("file", "file:///x"), ("path", "/x"), ("data", "data:,YQ=="), ("base64", "YQ=="), ("http", "http://127.0.0.1:9/x")],
)
def test_schemes_refusal_names_the_rule(form, source):
    allowed = frozenset(media.FORMS) - {form}
    for mode in MODES:
        err = _raises(mmf.FetchError, f"{form} source refused by fetch policy schemes", mode, [source],
                      policy=mmf.FetchPolicy(schemes=allowed))
        assert err.item == 0


@pytest.fixture
def roots(tmp_path):
    inside = tmp_path / "root"
    outside = tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (inside / "img.png").write_bytes(IMAGE)
    (outside / "secret.png").write_bytes(IMAGE)
    (inside / "escape.png").symlink_to(outside / "secret.png")
    (inside / "alias.png").symlink_to(inside / "img.png")
    (tmp_path / "root_link").symlink_to(inside)
    return inside, outside


@pytest.mark.parametrize("mode", MODES)
def test_local_roots_allow_paths_inside(mode, roots, tmp_path):
    inside, _ = roots
    policy = mmf.FetchPolicy(local_roots=[str(inside)])
    sources = [str(inside / "img.png"), f"file://{inside}/alias.png", str(tmp_path / "root_link" / "img.png")]
    assert resolve(mode, sources, policy=policy) == [IMAGE] * 3
    # A root given through a symlink is resolved too.
    policy = mmf.FetchPolicy(local_roots=[str(tmp_path / "root_link")])
    assert resolve(mode, [str(inside / "img.png")], policy=policy) == [IMAGE]


@pytest.mark.parametrize("mode", MODES)
def test_local_roots_refuse_paths_outside(mode, roots):
    inside, outside = roots
    policy = mmf.FetchPolicy(local_roots=[str(inside)])
    refused = [
        str(outside / "secret.png"),  # plainly outside
        str(inside / "escape.png"),  # a symlink inside the root pointing out of it
        f"{inside}/../outside/secret.png",  # dot-dot
        f"file://{outside}/secret.png",
        str(outside / "missing.png"),  # same answer whether or not the file exists
        "/dev/zero",
    ]
    for src in refused:
        err = _raises(mmf.FetchError, "refused by fetch policy local_roots", mode, [src], policy=policy)
        assert "not a regular file" not in str(err) and "No such file" not in str(err)
    # An empty tuple allows no file at all.
    _raises(mmf.FetchError, "local_roots", mode, [str(inside / "img.png")], policy=mmf.FetchPolicy(local_roots=()))


def test_root_prefix_is_not_a_parent(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root2").mkdir()
    (tmp_path / "root2" / "x.png").write_bytes(IMAGE)
    with pytest.raises(mmf.FetchError, match="local_roots"):
        media.resolve_sources([str(tmp_path / "root2" / "x.png")], limits=mmf.Limits(),
                              policy=mmf.FetchPolicy(local_roots=[str(tmp_path / "root")]))


# --------------------------------------------------------------------------- pipeline


@pytest.fixture
def probe():
    with probe_family():
        yield


@pytest.mark.parametrize("mode", MODES)
def test_same_bytes_same_hash_across_local_forms(mode, probe, image_file):
    import asyncio

    sources = [IMAGE, f"data:image/png;base64,{B64_IMAGE}", B64_IMAGE, f"file://{image_file}", str(image_file)]
    pipe = probe_pipeline()
    inp = mmf.MmInput(images=sources, input_ids=[1, *[PLACEHOLDER] * len(sources), 2])
    out = pipe.process(inp) if mode == "sync" else asyncio.run(pipe.process_async(inp))
    assert [it.hash for it in out.items] == [content_hash(IMAGE)] * len(sources)
    assert np.array_equal(out.items[0].feature.array, out.items[-1].feature.array)


def test_pipeline_uses_its_fetch_policy(probe, image_file):
    pipe = probe_pipeline(fetch_policy=mmf.FetchPolicy(schemes={"data", "base64"}))
    inp = mmf.MmInput(images=[B64_IMAGE, str(image_file)], input_ids=[PLACEHOLDER, PLACEHOLDER])
    with pytest.raises(mmf.FetchError, match=r"item 1 \(img.png\): media fetch: path source refused by fetch policy"):
        pipe.process(inp)


def test_fetch_bytes_is_one_source_with_a_one_source_budget(image_file):
    assert media.fetch_bytes(str(image_file)) == IMAGE
    assert media.fetch_bytes(B64_IMAGE) == IMAGE


def test_sync_resolution_runs_on_the_calling_thread(image_file, monkeypatch):
    seen = []
    real = sources.read_file

    def spy(*args, **kwargs):
        seen.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(sources, "read_file", spy)
    media.resolve_sources([str(image_file)] * 3, limits=mmf.Limits())
    assert seen == [threading.current_thread()] * 3


def test_a_missing_real_path_gets_no_base64_hint(tmp_path):
    with pytest.raises(mmf.FetchError) as e:
        media.fetch_bytes(str(tmp_path / "photos" / "cat.jpg"))
    assert "No such file or directory" in str(e.value) and "base64" not in str(e.value)
