"""The ``minicpmv4_6`` family for mm_framework: MiniCPM-V 4.6's image preprocessing
(transformers 5.24's ``MiniCPMV4_6Processor`` with ``MiniCPMV4_6ImageProcessorPil`` or the
torchvision ``MiniCPMV4_6ImageProcessor``), bit for bit. See docs/families/minicpmv4_6.md."""

from .family import MiniCPMV46Family
from .slicing import SliceGrid
from .spec import FAMILY, PRESETS, MiniCPMV46Spec, parse_spec

__all__ = ["FAMILY", "PRESETS", "MiniCPMV46Family", "MiniCPMV46Spec", "SliceGrid", "parse_spec"]
