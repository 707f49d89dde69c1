"""The ``llava_onevision`` family for mm_framework: LLaVA-OneVision anyres preprocessing.

Bit-exact with transformers 5.24's ``LlavaOnevisionProcessor`` over
``LlavaOnevisionImageProcessorPil`` (docs/families/llava_onevision.md).
"""
