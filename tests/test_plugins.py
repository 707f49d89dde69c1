"""Plugin discovery and validation: entry points, switches, duplicates, misspelt hooks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mm_framework as mmf
from mm_framework import plugin as mmp
from mm_framework import plugins
from mm_framework.family import bind

from .toy_family import ToyFamily

TOY_DIST = Path(__file__).parent / "toy_dist"


@pytest.fixture(scope="session")
def toy_site(tmp_path_factory):
    """The toy distribution really installed (pip, offline) into its own site dir."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(TOY_DIST)],
        check=True,
    )
    return target


def run_py(site: Path, code: str, **env: str) -> dict:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MM_FRAMEWORK_")}
    full_env["PYTHONPATH"] = os.pathsep.join([str(site), full_env.get("PYTHONPATH", "")])
    full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


FAMILIES = """
import json, mm_framework as mmf
print(json.dumps({f["name"]: [f["distribution"], f["version"]] for f in mmf.list_families()}))
"""


def test_entry_point_family_end_to_end(toy_site):
    out = run_py(toy_site, """
        import io, json
        from PIL import Image
        import mm_framework as mmf
        buf = io.BytesIO(); Image.new("RGB", (5, 3), (10, 20, 30)).save(buf, "PNG")
        pipe = mmf.pipeline_from_spec(json.dumps(mmf.preset("toy_ep_default")))
        out = pipe.process(mmf.MmInput(images=[buf.getvalue()], input_ids=[7, 1, 8]))
        fams = {f["name"]: f for f in mmf.list_families()}
        print(json.dumps({"ids": out.input_ids.tolist(), "feature": out.items[0].feature.array.tolist(),
                          "dist": fams["toy_ep"]["distribution"], "version": fams["toy_ep"]["version"]}))
    """)
    assert out == {"ids": [7, 1, 8], "feature": [[10.0, 20.0, 30.0]], "dist": "mm-toy-family", "version": "0.0.7"}


def test_load_and_disable_switches(toy_site):
    assert "toy_ep" in run_py(toy_site, FAMILIES)
    assert run_py(toy_site, FAMILIES, MM_FRAMEWORK_LOAD_PLUGINS="") == {}
    assert set(run_py(toy_site, FAMILIES, MM_FRAMEWORK_LOAD_PLUGINS="toy_ep")) == {"toy_ep"}
    assert set(run_py(toy_site, FAMILIES, MM_FRAMEWORK_LOAD_PLUGINS="mm-toy-family")) == {"toy_ep"}
    assert "toy_ep" not in run_py(toy_site, FAMILIES, MM_FRAMEWORK_DISABLE_PLUGINS="toy_ep")
    assert "toy_ep" not in run_py(toy_site, FAMILIES, MM_FRAMEWORK_DISABLE_PLUGINS="mm-toy-family")


def test_cli_lists_entry_point_plugin(toy_site):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MM_FRAMEWORK_")}
    # As run_py: the toy site first, then the caller's path (the tree under test and its families).
    env["PYTHONPATH"] = os.pathsep.join([str(toy_site), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "mm_framework", "plugins"], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "toy_ep" in proc.stdout and "mm-toy-family 0.0.7" in proc.stdout
    assert "mm_process_item" in proc.stdout and "toy_ep_default" in proc.stdout


class Dup:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("toy", ToyFamily)


def test_duplicate_family_names_name_both(toy):
    plugins.register(Dup(), name="dup")
    try:
        match = r"family 'toy' is registered twice: by <in-process plugin .*> and by <in-process plugin .*>"
        with pytest.raises(mmf.SpecError, match=match):
            mmf.pipeline_from_spec({"family": "toy"})
    finally:
        plugins.unregister("dup")


class Misspelt:
    def __init__(self, params):
        pass

    @mmp.hookimpl
    def mm_proces_item(self, media):  # the typo is the point
        raise AssertionError


class MisspeltPlugin:
    @mmp.hookimpl
    def mm_register_families(self, register):
        register("misspelt", Misspelt)


def test_misspelt_hook_fails_at_build():
    plugins.register(MisspeltPlugin(), name="misspelt")
    try:
        with pytest.raises(mmf.SpecError, match="family 'misspelt': invalid plugin: .*mm_proces_item"):
            mmf.pipeline_from_spec({"family": "misspelt"})
    finally:
        plugins.unregister("misspelt")


def test_misspelt_discovery_hook_fails_at_registration():
    class Bad:
        @mmp.hookimpl
        def mm_register_familes(self, register):
            pass

    with pytest.raises(Exception, match="mm_register_familes"):
        plugins.register(Bad(), name="bad")
    if plugins.plugin_manager().get_plugin("bad") is not None:
        plugins.unregister("bad")


@pytest.mark.parametrize(
    "spec, msg",
    [
        ("{not json", "mm spec: "),
        ("[1, 2]", "mm spec: expected a JSON object, got list"),
        ({"image_token_id": 1}, "missing or non-string field 'family'"),
        ({"family": 3}, "missing or non-string field 'family'"),
        ({"family": "nope"}, r"unknown family 'nope'; installed families: .*'toy'"),
        ({"family": "toy", "colour": "red"}, "toy spec: unknown field 'colour'"),
        ({"family": "toy", "block": "4"}, "toy spec: field 'block' must be int"),
    ],
)
def test_spec_errors(toy, spec, msg):
    with pytest.raises(mmf.SpecError, match=msg):
        mmf.pipeline_from_spec(spec)


def test_presets_and_family_listing(toy):
    assert mmf.preset("toy_default") == {"family": "toy", "image_token_id": 1}
    with pytest.raises(mmf.SpecError, match="unknown preset 'nope'"):
        mmf.preset("nope")
    names = [f["name"] for f in mmf.list_families()]
    assert "toy" in names


def test_family_hooks_listing(toy_pipe):
    assert bind(toy_pipe.spec).implemented() == [
        "mm_capabilities", "mm_layout", "mm_plan_item", "mm_positions", "mm_process_item",
    ]


def test_factory_crash_is_internal_error():
    class Crashy:
        @mmp.hookimpl
        def mm_register_families(self, register):
            register("crashy", lambda params: 1 / 0)

    plugins.register(Crashy(), name="crashy")
    try:
        with pytest.raises(mmf.InternalError, match="family 'crashy' raised ZeroDivisionError in its factory"):
            mmf.pipeline_from_spec({"family": "crashy"})
    finally:
        plugins.unregister("crashy")


def test_no_family_for_hf_config():
    with pytest.raises(mmf.SpecError, match="no installed family handles model_type 'llama'"):
        mmf.spec_from_hf_configs({"model_type": "llama"}, {})


def test_family_without_a_required_hook_is_refused_when_built(toy_site):
    out = run_py(toy_site, """
        import json, mm_framework as mmf
        from mm_framework import plugin as mmp
        import mm_toy_family
        class NoPlan(mm_toy_family.OneToken):
            mm_plan_item = None
        class P:
            @mmp.hookimpl
            def mm_register_families(self, register):
                register("noplan", NoPlan)
        mmf.plugins.register(P(), name="p")
        try:
            mmf.pipeline_from_spec({"family": "noplan"})
        except mmf.SpecError as e:
            print(json.dumps(str(e)))
    """)
    assert out == "family 'noplan': invalid plugin: it does not implement mm_plan_item"


def test_video_preprocessor_config_reaches_the_resolver(tmp_path):
    """spec_from_model_dir passes video_preprocessor_config.json when the directory has one
    (None otherwise); resolvers that leave the argument out keep working."""
    seen = []

    class Resolver:
        @mmp.hookimpl
        def mm_spec_from_hf_configs(self, config, preprocessor_config, video_preprocessor_config):
            if config.get("model_type") != "vidtoy":
                return None
            seen.append(video_preprocessor_config)
            return {"family": "toy", "image_token_id": preprocessor_config["id"]}

    plugins.register(Resolver(), name="vidtoy-resolver")
    try:
        (tmp_path / "config.json").write_text('{"model_type": "vidtoy"}')
        (tmp_path / "preprocessor_config.json").write_text('{"id": 3}')
        assert mmf.spec_from_model_dir(tmp_path) == {"family": "toy", "image_token_id": 3}
        (tmp_path / "video_preprocessor_config.json").write_text('{"fps": 2}')
        mmf.spec_from_model_dir(tmp_path)
        assert mmf.spec_from_hf_configs({"model_type": "vidtoy"}, {"id": 4}, {"fps": 1})["image_token_id"] == 4
        assert seen == [None, {"fps": 2}, {"fps": 1}]
        (tmp_path / "video_preprocessor_config.json").write_text("{")
        with pytest.raises(mmf.SpecError, match="video_preprocessor_config.json: invalid JSON"):
            mmf.spec_from_model_dir(tmp_path)
    finally:
        plugins.unregister("vidtoy-resolver")
    with pytest.raises(mmf.SpecError, match="no installed family handles model_type 'llama'"):
        mmf.spec_from_hf_configs({"model_type": "llama"}, {}, {"fps": 2})


def test_spec_from_arg_reads_every_form_a_command_takes(toy, tmp_path):
    """The one reader of ``--spec`` (every command, batch included): a preset name, a model
    directory, a JSON file or inline JSON; anything else is a SpecError listing the presets."""

    class Resolver:
        @mmp.hookimpl
        def mm_spec_from_hf_configs(self, config, preprocessor_config):
            if config["model_type"] != "dirtoy":
                return None
            return {"family": "toy", "image_token_id": preprocessor_config["id"]}

    assert mmf.spec_from_arg("toy_default") == mmf.preset("toy_default")
    plugins.register(Resolver(), name="dirtoy-resolver")
    try:
        (tmp_path / "config.json").write_text('{"model_type": "dirtoy"}')
        (tmp_path / "preprocessor_config.json").write_text('{"id": 5}')
        assert mmf.spec_from_arg(str(tmp_path)) == {"family": "toy", "image_token_id": 5}
    finally:
        plugins.unregister("dirtoy-resolver")
    (tmp_path / "spec.json").write_text('{"family": "toy", "block": 2}')
    assert mmf.spec_from_arg(str(tmp_path / "spec.json")) == {"family": "toy", "block": 2}
    assert mmf.spec_from_arg(' {"family": "toy"}') == {"family": "toy"}
    with pytest.raises(mmf.SpecError, match=r"--spec 'nope' is neither a preset \(.*toy_default.*\), a model dir"):
        mmf.spec_from_arg("nope")
    with pytest.raises(mmf.SpecError, match="--spec: invalid JSON"):
        mmf.spec_from_arg("{nope")
