"""``allow_private_networks=False``: which addresses an HTTP target may be connected at.

Every resolved address must be global; the connection then goes to the address that was
checked, so DNS cannot swap in another between the check and the connect. Through a
proxy the proxy connects, so the target is checked with local DNS first and refused when
that fails (the proxy might resolve it to an internal address).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from typing import Any

import anyio
import attrs

from .policy import FetchPolicy, allowed_entry


class Refused(Exception):
    """A policy refusal raised below httpx; the fetch reports it as a ``FetchError``."""


def _non_public_kind(address: str) -> str | None:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for kind in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if ip.is_global else "non-global"


@attrs.frozen
class AddressGuard:
    """The ``allowed_hosts`` exceptions of a policy that refuses private networks."""

    allowed: frozenset[tuple[str, int | None]]

    @classmethod
    def of(cls, policy: FetchPolicy) -> AddressGuard | None:
        if policy.allow_private_networks:
            return None
        return cls(frozenset(allowed_entry(e) for e in policy.allowed_hosts))

    def _exempt(self, host: str, port: int) -> bool:
        return (host, None) in self.allowed or (host, port) in self.allowed

    @staticmethod
    def _vet(host: str, infos: Sequence[tuple[Any, ...]]) -> list[str]:
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:
            kind = _non_public_kind(address)
            if kind is not None:
                raise Refused(
                    f"refused by fetch policy allow_private_networks=False: {host} resolves to a {kind} "
                    f"address and is not in allowed_hosts"
                )
        return addresses

    async def addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to (all vetted); ``OSError`` if ``host`` does not resolve."""
        if self._exempt(host, port):
            return [host]
        return self._vet(host, await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM))

    async def check_before_proxy(self, host: str, port: int) -> None:
        try:
            await self.addresses(host, port)
        except OSError as e:
            raise Refused(
                f"refused by fetch policy allow_private_networks=False: cannot resolve {host} to check it "
                f"before using the proxy ({e})"
            ) from None
