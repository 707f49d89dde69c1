"""The ``qwen_vl`` family plugin for mm_framework (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5).

The plugin object the ``mm_framework`` entry point loads is :mod:`qwen_vl_plugin.plugin`.
This package root imports nothing, so the golden generator can import
:mod:`qwen_vl_plugin.golden_images` in a reference environment without mm_framework.
"""

__version__ = "0.1.0"
