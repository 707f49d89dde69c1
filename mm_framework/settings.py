"""Every environment variable the package reads, with its accepted forms, and one check of them all.

Each variable is parsed next to the code that uses it, by the one function that both this
code (on use: a process may change a variable, and ``par.set_threads``/``native.set_mode``
override two of them) and :func:`check_environment` call. So a bad value gives the same
:class:`~mm_framework.errors.SettingError` wherever it is found: a ``SpecError`` naming
the variable, its value and the accepted forms, never an item. ``Pipeline()`` and
``mm-framework --version``/``plugins`` run the check, so a bad setting fails at start-up
rather than on the first request that reads it. README.md, "Environment variables", is
this table for readers.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from . import par, plugins
from .kernels import native
from .media import http, proxy


@attrs.frozen
class Variable:
    names: tuple[str, ...]  # several when they make one setting, in the order they are looked up
    forms: str
    read: Callable[[], object] = attrs.field(repr=False)  # the owner's parser, of the current environment


VARIABLES = (
    Variable((par.ENV,), par.FORMS, par.threads_from_env),
    Variable((native.ENV,), native.FORMS, native.mode_from_env),
    Variable((native.SIMD_ENV,), native.SIMD_FORMS, native.simd_from_env),
    Variable((http.TIMEOUT_ENV,), http.TIMEOUT_FORMS, http.request_timeout),
    Variable(proxy.PROXY_ENV_ORDER, proxy.PROXY_FORMS, proxy.proxy_from_env),
    Variable(proxy.NO_PROXY_ENV_ORDER, proxy.NO_PROXY_FORMS, proxy.no_proxy_from_env),
    Variable((plugins.LOAD_VAR,), plugins.LOAD_FORMS, lambda: plugins.switch_names(plugins.LOAD_VAR)),
    Variable((plugins.DISABLE_VAR,), plugins.DISABLE_FORMS, lambda: plugins.switch_names(plugins.DISABLE_VAR)),
)


def check_environment() -> None:
    """Parse every variable now; the first bad one (in :data:`VARIABLES` order) raises its
    ``SettingError``."""
    for var in VARIABLES:
        var.read()
