"""Credentials out of URLs before they are printed or written anywhere.

A URL such as ``https://user:secret@agent.example/act?token=abc`` would otherwise end up in error
messages, ``execution.json``, ``queue.sqlite`` and the run page. :func:`redact_url` keeps what a
reader needs (scheme, host, port, path, harmless query keys) and replaces the user, the password
and the values of credential-like query keys with ``***``; :func:`redact_text` does it for every
URL inside a message.
"""

from __future__ import annotations

import re
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


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`, and credential-like
    query values of bare paths (``/act?token=...``, as HTTP libraries quote them) masked."""
    text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    text = redact_worker_secrets(text)
    return _QUERY_SECRET.sub(lambda m: m.group(1) + MASK, text)


_WORKER_SECRET = re.compile(r"\bcap-[0-9a-f]{40}\b")


def redact_worker_secrets(text: str) -> str:
    """``text`` with local workers' secrets masked: the first path segment of their URLs
    (``http://127.0.0.1:PORT/cap-<40 hex>/...``, see ``docs/local-worker.md``) is a capability,
    which error messages, records and tables must not show."""
    return _WORKER_SECRET.sub("cap-" + MASK, text)
