"""A model directory's chat template, found and rendered as transformers does.

Found in the processor's places first (``processor_config.json["chat_template"]``, the
legacy ``chat_template.json``, else ``chat_template.jinja`` and the named
``chat_templates/*.jinja``: ``ProcessorMixin.from_pretrained``'s precedence), then in the
tokenizer's (``tokenizer_config.json["chat_template"]``, a string or a list of named
templates), which is what ``AutoTokenizer.apply_chat_template`` renders and where vLLM
falls back to. Rendered with jinja2 in the environment of transformers'
``utils/chat_template_utils.py`` (an ``ImmutableSandboxedEnvironment`` with
``trim_blocks``/``lstrip_blocks``, loop controls, the ``{% generation %}`` tag,
``raise_exception``, ``strftime_now``, its ``tojson``, a limited ``dict`` and
``namespace``), with one difference: touching an unsafe attribute (``''.__class__``) is
refused at once, where transformers renders it as an empty string.
"""

from __future__ import annotations

import functools
import glob
import json
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from ..errors import InvalidInputError, SpecError
from .extra import need
from .files import optional_json, read_json, read_text

# The fields transformers copies a message's reasoning under (the first is what templates read).
_REASONING = ("reasoning_content", "thinking", "reasoning")
_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


class _Raised(Exception):
    """What the template's ``raise_exception(message)`` raises (never a jinja2 error, so it
    cannot be mistaken for one)."""


@attrs.frozen
class ChatTemplate:
    """The model's chat template(s): one text, or named texts (``{"default": ..., "tool_use": ...}``),
    with the file they came from and whose rules pick among named ones (``"processor"``:
    only ``default`` unless named; ``"tokenizer"``: ``tool_use`` when tools are given)."""

    templates: str | Mapping[str, str]
    source: str
    picker: str = "processor"

    def select(self, chat_template: str | None = None, tools: Sequence[Any] | None = None) -> str:
        """The template text to render: the model's, a named one of the model's, or ``chat_template``
        itself when it names none (transformers takes that argument as a template text)."""
        named = self.templates if isinstance(self.templates, Mapping) else None
        if chat_template is not None:
            return named[chat_template] if named is not None and chat_template in named else chat_template
        if named is None:
            return self.templates
        if self.picker == "tokenizer" and tools is not None and "tool_use" in named:
            return named["tool_use"]
        if "default" in named:
            return named["default"]
        raise SpecError(
            f"{self.source}: the model has several chat templates and none is named 'default'; "
            f"pass chat_template= one of {sorted(named)}"
        )


def _check_templates(value: Any, source: str) -> str | dict[str, str]:
    if isinstance(value, list):  # tokenizer_config.json's [{"name": ..., "template": ...}]
        if not all(isinstance(t, Mapping) and isinstance(t.get("name"), str) for t in value):
            raise SpecError(f"{source}: chat_template list entries must be objects with 'name' and 'template'")
        value = {t["name"]: t.get("template") for t in value}
    if isinstance(value, Mapping):
        bad = next((k for k, v in value.items() if not isinstance(v, str)), None)
        if bad is not None:
            raise SpecError(f"{source}: chat template {bad!r} must be a string")
        return dict(value)
    if not isinstance(value, str):
        raise SpecError(f"{source}: chat_template must be a string, got {type(value).__name__}")
    return value


def load_template(path: str | os.PathLike[str]) -> ChatTemplate:
    """The chat template of a model directory; ``SpecError`` naming the file at fault, or
    the places looked in when there is none."""
    root = os.fspath(path)
    at = functools.partial(os.path.join, root)
    named = {os.path.basename(f)[: -len(".jinja")]: f for f in sorted(glob.glob(at("chat_templates", "*.jinja")))}
    processor = optional_json(root, "processor_config.json") or {}
    if processor.get("chat_template") is not None:
        return ChatTemplate(_check_templates(processor["chat_template"], at("processor_config.json")),
                            at("processor_config.json"))
    if os.path.isfile(at("chat_template.json")):
        if named:
            raise SpecError(
                f"{at('chat_template.json')}: a legacy chat_template.json beside chat_templates/*.jinja "
                "is ambiguous (transformers refuses it too); keep one of them"
            )
        legacy = read_json(at("chat_template.json"))
        if "chat_template" not in legacy:
            raise SpecError(f"{at('chat_template.json')}: no 'chat_template' entry")
        return ChatTemplate(_check_templates(legacy["chat_template"], at("chat_template.json")),
                            at("chat_template.json"))
    files = {name: read_text(f) for name, f in named.items()}
    if os.path.isfile(at("chat_template.jinja")):
        files["default"] = read_text(at("chat_template.jinja"))
    if files:
        source = at("chat_template.jinja") if "default" in files else at("chat_templates")
        return ChatTemplate(files["default"] if list(files) == ["default"] else files, source)
    config = optional_json(root, "tokenizer_config.json") or {}
    if config.get("chat_template") is not None:
        source = at("tokenizer_config.json")
        return ChatTemplate(_check_templates(config["chat_template"], source), source, "tokenizer")
    raise SpecError(
        f"{root}: no chat template (looked for processor_config.json, chat_template.json, chat_template.jinja, "
        "chat_templates/*.jinja and tokenizer_config.json's chat_template)"
    )


@functools.lru_cache(maxsize=32)
def compiled(text: str) -> Any:
    """The jinja2 template of ``text`` in transformers' environment (compiled once per text)."""
    jinja2 = need("jinja2")
    from jinja2 import ext, nodes, sandbox

    class Generation(ext.Extension):
        # transformers marks assistant spans with {% generation %}; the text renders unchanged.
        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return caller()

    class Environment(sandbox.ImmutableSandboxedEnvironment):
        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            raise jinja2.exceptions.SecurityError(
                f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
            )

    def raise_exception(message: Any) -> None:
        raise _Raised(str(message))

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
               sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format: str) -> str:  # noqa: A002 (transformers' parameter name)
        return datetime.now().strftime(format)

    class TemplateDict:
        # Only construction: no attribute of the dict type reaches the template.
        def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
            return dict(*args, **kwargs)

        def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 (jinja2's own signature trick)
            self, args = args[0], args[1:]
            values = dict(*args, **kwargs)
            for name in values:
                TemplateNamespace._check(name)
            jinja2.utils.Namespace.__init__(self, values)

        def __setitem__(self, name: str, value: Any) -> None:
            TemplateNamespace._check(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check(name: Any) -> None:
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(f"a namespace cannot hold the underscore attribute {name!r}")

    env = Environment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now, dict=TemplateDict(),
                       namespace=TemplateNamespace)
    return env.from_string(text)


def _alias_reasoning(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        reasoning = next((m[k] for k in _REASONING if m.get(k) is not None), None)
        out.append(m if reasoning is None else {"thinking": reasoning, **m, "reasoning_content": reasoning})
    return out


def _tag_final(messages: list[dict[str, Any]], field: str, text: str) -> str:
    """Append the continue tag to the final message's ``field`` (its last text part when a list),
    as transformers does; the text to continue is returned."""
    final = messages[-1].get(field)
    if final is None:
        raise InvalidInputError(f"continue_final_message: the final message has no {field!r} to continue")
    fields = [f for f in _REASONING if messages[-1].get(f) == final] if field in _REASONING else [field]
    if not any(f in text for f in fields):
        raise InvalidInputError(f"continue_final_message: the chat template does not read the message's {field!r}")
    if isinstance(final, (list, tuple)):
        for part in reversed(final):
            if isinstance(part, dict) and "text" in part:
                found = part["text"]
                part["text"] = found + _CONTINUE_TAG
                return found
        raise InvalidInputError("continue_final_message: the final message has no text part to continue")
    for f in fields:
        messages[-1][f] = messages[-1][f] + _CONTINUE_TAG
    return final


def render(
    text: str,
    messages: list[dict[str, Any]],
    *,
    source: str,
    tools: Any = None,
    documents: Any = None,
    add_generation_prompt: bool = False,
    continue_final_message: bool | str = False,
    variables: Mapping[str, Any] | None = None,
) -> str:
    """``messages`` (plain JSON values, see :mod:`.messages`) through template ``text`` with
    transformers' ``render_jinja_template`` semantics. ``variables`` are the special tokens and
    the caller's extra template kwargs, which the template sees as globals."""
    jinja2 = need("jinja2")
    if continue_final_message and add_generation_prompt:
        raise InvalidInputError("continue_final_message and add_generation_prompt cannot both be set")
    try:
        template = compiled(text)
    except jinja2.exceptions.TemplateSyntaxError as e:
        raise SpecError(f"{source}: the chat template does not compile: {e.message} (line {e.lineno})") from None
    messages = _alias_reasoning([dict(m) for m in messages])
    final = None
    if continue_final_message:
        field = continue_final_message if isinstance(continue_final_message, str) else "content"
        if isinstance(messages[-1].get(field), list):
            messages[-1][field] = [dict(p) if isinstance(p, dict) else p for p in messages[-1][field]]
        final = _tag_final(messages, field, text)
    try:
        out = template.render(
            **dict(variables or {}), messages=messages, tools=tools, documents=documents,
            add_generation_prompt=add_generation_prompt,
        )
    except _Raised as e:
        raise SpecError(f"the chat template refused the request: {e}") from None
    except jinja2.exceptions.SecurityError as e:
        raise SpecError(f"the chat template tried to leave its sandbox and was refused: {e}") from None
    except jinja2.exceptions.TemplateError as e:
        raise SpecError(f"{source}: the chat template failed: {type(e).__name__}: {e}") from None
    except Exception as e:  # the template's own arithmetic, indexing, ...
        raise SpecError(f"{source}: the chat template failed: {type(e).__name__}: {e}") from None
    if final is None:
        return out
    if final.strip() not in out or _CONTINUE_TAG.strip() not in out:
        raise InvalidInputError(
            "continue_final_message: the final message does not appear in the rendered chat "
            "(the template drops part of it)"
        )
    at = out.rindex(_CONTINUE_TAG.strip())
    return out[:at] if out[at: at + len(_CONTINUE_TAG)] == _CONTINUE_TAG else out[:at].rstrip()
