"""The ``smolvlm`` family for mm_framework: SmolVLM's and Idefics3's image preprocessing
(transformers 5.24's ``SmolVLMProcessor`` / ``Idefics3Processor`` with their image
processors) and SmolVLM2's video frames (``SmolVLMVideoProcessor``), bit for bit. See
docs/families/smolvlm.md."""

from .family import SmolVLMFamily
from .sizing import SplitGrid
from .spec import FAMILY, PRESETS, SmolVLMSpec, parse_spec
from .video import VideoFrames

__all__ = ["FAMILY", "PRESETS", "SmolVLMFamily", "SmolVLMSpec", "SplitGrid", "VideoFrames", "parse_spec"]
