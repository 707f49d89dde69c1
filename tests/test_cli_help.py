"""The help texts: every command describes itself and its arguments."""

from __future__ import annotations

import pytest

from mm_framework.cli import main


def _help(capsys, *args: str) -> str:
    """The help of ``mm-framework ARGS --help``, its lines joined (argparse wraps to the terminal)."""
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--help"])
    assert exit_.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_the_description_names_every_command(capsys):
    description = _help(capsys).split("positional arguments")[0]
    for command in ("process", "chat", "inspect", "tokens", "plugins", "batch"):
        assert command in description, command


def test_batch_spec_takes_a_model_directory(capsys):
    assert "--spec SPEC preset, model directory, JSON file or inline JSON" in _help(capsys, "batch")


def test_tokens_describes_itself_and_its_arguments(capsys):
    text = _help(capsys, "tokens")
    assert "from the family's rules alone: no pixels or samples are read" in text and "--json" in text
    assert "--seconds SECONDS an audio item this long (instead of a size)" in text
    assert "width the image's (or a clip frame's) width in pixels" in text and "height its height in pixels" in text


def test_plugins_describes_what_it_lists(capsys):
    assert "List the pixel kernels in use (native with their SIMD level, or portable)" in _help(capsys, "plugins")
