"""The chat front door: a chat request (OpenAI Chat Completions or transformers messages) to
model inputs, with the model's own chat template and tokenizer (docs/chat.md).

Needs the ``mm-framework[chat]`` extra (``tokenizers``, ``jinja2``), imported on first use.
"""

from __future__ import annotations

from .processor import Processor
from .tokenizer import ChatTokenizer

__all__ = ["ChatTokenizer", "Processor"]
