"""The ``qwen2_audio`` family plugin for mm_framework (Qwen2-Audio's Whisper features).

Bit-exact with transformers 5.24's ``Qwen2AudioProcessor`` over ``WhisperFeatureExtractor``'s
numpy path (docs/families/qwen2_audio.md). The plugin object the ``mm_framework`` entry
point loads is :mod:`qwen2_audio_plugin.plugin`.
"""

from .family import AUDIO_TOKEN_TEXT, Qwen2AudioFamily
from .hf_config import resolve as spec_from_hf_configs
from .spec import PRESETS, Qwen2AudioSpec, parse_spec

__version__ = "0.1.0"
__all__ = [
    "AUDIO_TOKEN_TEXT", "PRESETS", "Qwen2AudioFamily", "Qwen2AudioSpec", "parse_spec", "spec_from_hf_configs",
]
