"""The caller's public address, so SSH can be opened to it alone.

Asked of an echo service that answers with the address it sees (plain text, or JSON with an
``ip`` field). The URL can be changed with ``OA_VM_IP_ECHO_URL`` (tests point it at a loopback
server). A short timeout: when detection fails, the user is told to pass ``--allow-cidr``.
"""

from __future__ import annotations

import ipaddress
import json
import os

from oa_vm.errors import OaVmError
from oa_vm.kit.lazy import requests

ECHO_URL_ENV = "OA_VM_IP_ECHO_URL"
DEFAULT_ECHO_URL = "https://checkip.amazonaws.com"
TIMEOUT_S = (3.0, 5.0)


class CidrDetectionError(OaVmError):
    """The caller's public address could not be found out."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"could not detect your public IP address ({reason}); pass it yourself with "
            "--allow-cidr <your-ip>/32"
        )


def echo_url() -> str:
    """The echo service used: ``$OA_VM_IP_ECHO_URL`` or the default."""
    return os.environ.get(ECHO_URL_ENV) or DEFAULT_ECHO_URL


def parse_echo(text: str) -> str:
    """The address in an echo service's answer, as a one-address CIDR (``/32`` or ``/128``).

    Raises:
        ValueError: no address in the answer.
    """
    body = text.strip()
    if body.startswith("{"):
        value = json.loads(body).get("ip", "")
    else:
        value = body.splitlines()[0].strip() if body else ""
    address = ipaddress.ip_address(str(value))
    if address.is_loopback or address.is_unspecified or address.is_multicast:
        raise ValueError(f"{address} cannot be a caller's address")
    return f"{address}/{address.max_prefixlen}"


def detect_cidr(url: str | None = None) -> str:
    """This machine's public address as a CIDR (e.g. ``203.0.113.7/32``).

    Raises:
        CidrDetectionError: the service is unreachable, slow, or answers nonsense.
    """
    target = url or echo_url()
    try:
        response = requests.get(target, timeout=TIMEOUT_S)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise CidrDetectionError(f"{target} did not answer: {type(exc).__name__}") from exc
    try:
        return parse_echo(response.text)
    except ValueError as exc:
        raise CidrDetectionError(f"{target} answered {response.text[:60]!r}: {exc}") from exc
