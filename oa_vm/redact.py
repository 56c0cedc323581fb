"""Credentials out of text before it is printed or written anywhere.

A URL such as ``https://user:secret@agent.example/act?token=abc`` would otherwise end up in error
messages, ``execution.json``, ``queue.sqlite`` and the run page. :func:`redact_url` keeps what a
reader needs (scheme, host, port, path, harmless query keys) and replaces the user, the password
and the values of credential-like query keys with ``***``; :func:`redact_text` does it for every
URL inside a message, and masks credentials in free text too: ``Bearer <token>``, an
``Authorization`` header, ``"api_key": "..."``-like pairs (JSON, headers, ``key=value``), keys of
well-known shapes (``sk-...``, ``AKIA...``, ``ghp_...``, PEM private keys), and every secret the
process registered with :func:`register_secret` (the agent server's token: a server that echoes
it back in an error body must not get it into a record).
"""

from __future__ import annotations

import re
import threading
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_SECRET_KEY = re.compile(
    r"(token|key|secret|pass|pwd|auth|sig|signature|credential|session|code)", re.IGNORECASE
)


def redact_url(url: str) -> str:
    """``url`` without its user, password or credential-like query values."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return MASK if "@" in url else url
    netloc = parts.netloc
    if "@" in netloc:
        shown = host or ""
        if ":" in shown:  # IPv6 literal
            shown = f"[{shown}]"
        if port is not None:
            shown += f":{port}"
        netloc = f"{MASK}@{shown}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, MASK if _SECRET_KEY.search(k) else v) for k, v in pairs], safe="*"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_QUERY_SECRET = re.compile(
    r"([?&][^=\s&?#]*(?:token|key|secret|pass|pwd|auth|sig|credential|session|code)"
    r"[^=\s&?#]*=)[^&\s'\"#]+",
    re.IGNORECASE,
)


_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{6,})")
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token|digest)?\s*)"
    r"([^\s\"',;}]{4,})"
)
# a credential-like key (not "tokens_in", "max_tokens") then ':' or '=' and its value
_PAIR = re.compile(
    r"(?i)([\"']?\b[\w-]*(?:token|api[_-]?key|secret|password|passwd|credential)(?!s)[\w-]*"
    r"[\"']?\s*[:=]\s*[\"']?)([^\s\"',;&}]{4,})"
)
_KEY_SHAPES = re.compile(
    r"\bsk-[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----|.*)",
    re.DOTALL,
)
_registered: set[str] = set()
_registered_lock = threading.Lock()
MIN_SECRET_LEN = 6  # shorter values would mask ordinary words


def register_secret(value: str | None) -> None:
    """Mask ``value`` wherever it appears in text :func:`redact_text` sees from now on (in this
    process): for a credential the project holds, whatever form an echo of it takes."""
    if value and len(value) >= MIN_SECRET_LEN:
        with _registered_lock:
            _registered.add(value)


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`, credential-like query
    values of bare paths (``/act?token=...``, as HTTP libraries quote them), bearer tokens,
    ``Authorization`` values, credential-like pairs, keys of well-known shapes and registered
    secrets masked."""
    with _registered_lock:
        secrets = sorted(_registered, key=len, reverse=True)
    for secret in secrets:  # first: the other rules might cut a registered secret in two
        text = text.replace(secret, MASK)
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = redact_worker_secrets(text)
    text = _QUERY_SECRET.sub(lambda m: m.group(1) + MASK, text)
    text = _KEY_SHAPES.sub(MASK, text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return _PAIR.sub(lambda m: m.group(1) + MASK, text)


_WORKER_SECRET = re.compile(r"\bcap-[0-9a-f]{40}\b")


def redact_worker_secrets(text: str) -> str:
    """``text`` with local workers' secrets masked: the first path segment of their URLs
    (``http://127.0.0.1:PORT/cap-<40 hex>/...``, see ``docs/local-worker.md``) is a capability,
    which error messages, records and tables must not show."""
    return _WORKER_SECRET.sub("cap-" + MASK, text)
