"""Credentials out of text before it is printed or written anywhere.

A URL such as ``https://user:secret@agent.example/act?token=abc`` would otherwise end up in error
messages, ``execution.json``, ``queue.sqlite`` and the run page. :func:`redact_url` keeps what a
reader needs (scheme, host, port, path, harmless query keys) and replaces the user, the password
and the values of credential-like query keys with ``***``; :func:`redact_text` does it for every
URL inside a message, and masks credentials in free text too: ``Bearer <token>``, an
``Authorization`` header, ``"api_key": "..."``-like pairs (JSON, headers, ``key=value``), keys of
well-known shapes (``sk-...``, ``AKIA...``, ``ghp_...``, PEM private keys), and every secret the
process registered with :func:`register_secret` (the agent server's token: a server that echoes
it back in an error body must not get it into a record; a worker's capability, see
:func:`register_url_secrets`).

This module is the one place text is cleaned before it leaves the controller: for an agent (the
observation's ``last_error`` and ``last_result``), for a file (records, the queue, pages,
``metadata.json``), for the terminal (error lines, ``--debug`` tracebacks, log lines) and for
events. :func:`redact_json` does it for every string of a JSON document;
:class:`oa_vm.kit.clikit.RedactingFormatter` for log records (there, so that ``pool-status``,
which records a worker's capability through this module, does not load ``logging``).
"""

from __future__ import annotations

import _thread  # threading.Lock itself, without loading threading (pool-status's start-up)
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

TYPE_CHECKING = False  # typing is not loaded at run time (start-up time)
if TYPE_CHECKING:
    from typing import Any

MASK = "***"
# The patterns are strings, each compiled at its first use (_rx, at the end of the module):
# compiling them all at import cost pool-status, which needs two of them, 2 ms of its start-up.
# a scheme starts where no scheme character stands before it and is at most 32 long: a long
# run of letters (400,000 typed characters in a record) is then scanned once, not once for
# each of its letters
_URL = r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'\"<>]+"
_SECRET_KEY = r"(?i)(token|key|secret|pass|pwd|auth|sig|signature|credential|session|code)"



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
            [(k, MASK if _rx.SECRET_KEY.search(k) else v) for k, v in pairs], safe="*"
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


_QUERY_SECRET = (
    r"(?i)([?&][^=\s&?#]{0,64}(?:token|key|secret|pass|pwd|auth|sig|credential|session|code)"
    r"[^=\s&?#]{0,64}=)[^&\s'\"#]+"
)


_BEARER = r"(?i)\b(bearer\s+)([A-Za-z0-9._~+/=-]{6,})"
# not after a ':' (as in a resource type, azure-native:authorization:RoleAssignment, which a
# plan and a pool's record name)
_AUTH_HEADER = (
    r"(?i)(?<![\w:])((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer|token|digest)?\s*)"
    r"([^\s\"',;}]{4,})"
)
# a credential-like key (not "tokens_in", "max_tokens") then ':' or '=' and its value; a key
# starts where no key character stands before it and is at most 64 long on each side of its
# word, so a long run of key characters (a typed text in a record) costs a single scan
_PAIR = (
    r"(?i)([\"']?(?<![\w-])[\w-]{0,64}(?:token|api[_-]?key|secret|password|passwd|credential)"
    r"(?!s)[\w-]{0,64}[\"']?\s*[:=]\s*[\"']?)([^\s\"',;&}]{4,})"
)
_KEY_SHAPES = (
    r"(?s)\bsk-[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{30,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----|.*)"
)
# a SAS token's signature (Azure), wherever it stands: a token given alone starts with it
_SIGNATURE = r"(?i)(\b(?:sig|signature)\s*=\s*)([^&\s'\"<>;,]{4,})"
_registered: set[str] = set()
_registered_lock = _thread.allocate_lock()
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
        # longest first: a secret that contains another is masked whole, not around it
        secrets = sorted(_registered, key=len, reverse=True)
    for secret in secrets:  # first: the other rules might cut a registered secret in two
        text = text.replace(secret, MASK)
    text = _rx.URL.sub(lambda m: redact_url(m.group(0)), text)
    text = redact_worker_secrets(text)
    text = _rx.QUERY_SECRET.sub(lambda m: m.group(1) + MASK, text)
    text = _rx.KEY_SHAPES.sub(MASK, text)
    text = _rx.SIGNATURE.sub(lambda m: m.group(1) + MASK, text)
    text = _rx.AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    text = _rx.BEARER.sub(lambda m: m.group(1) + MASK, text)
    return _rx.PAIR.sub(lambda m: m.group(1) + MASK, text)


_WORKER_SECRET = r"\bcap-[0-9a-f]{40}\b"


def redact_worker_secrets(text: str) -> str:
    """``text`` with local workers' secrets masked: the first path segment of their URLs
    (``http://127.0.0.1:PORT/cap-<40 hex>/...``, see ``docs/local-worker.md``) is a capability,
    which error messages, records and tables must not show."""
    return _rx.WORKER_SECRET.sub("cap-" + MASK, text)


CAPABILITY_MIN_LEN = 16
"""A worker URL's first path segment this long or longer is a capability (a local worker's
secret is 16 to 128 characters, ``infra.local.access.SECRET_PATTERN``)."""
_CAPABILITY_SEGMENT = rf"[A-Za-z0-9_-]{{{CAPABILITY_MIN_LEN},128}}"


def register_url_secrets(url: str | None) -> None:
    """Register the secrets a worker URL carries: its capability (the first path segment of
    ``http://127.0.0.1:PORT/<secret>/...``, whatever its form) and a password in it.

    Called wherever the controller learns a worker's URL (its pool record, a client built on a
    URL given by the caller), so that any text quoting the URL, an error a worker sends back
    included, is masked by :func:`redact_text` before it reaches an agent, a file or the
    terminal.
    """
    if not url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    head = parts.path.lstrip("/").split("/", 1)[0]
    if _rx.CAPABILITY_SEGMENT.fullmatch(head):
        register_secret(head)
    register_secret(parts.password)


def redact_json(value: Any) -> Any:
    """A copy of a JSON value (dicts, lists, strings, numbers) with every string passed through
    :func:`redact_text`; keys are kept (they are field names)."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redact_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_json(item) for item in value)
    return value


class _FirstUse:
    """Stands in ``_rx`` for a pattern until its first use, which compiles the pattern and puts
    it in its place."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        compiled = re.compile(globals()[f"_{self.name}"])
        setattr(_rx, self.name, compiled)  # two threads racing here store equal patterns
        return getattr(compiled, attr)


class _Compiled:
    """``_rx.NAME`` is this module's pattern ``_NAME``, compiled at its first use and from then
    on held as a plain attribute.

    Redaction runs on every string of every record the controller writes, so a use must cost
    what a global's does: ``re.sub(pattern, ...)`` looked ``re``'s cache up at each call (5 % of
    a 100-worker run's controller CPU, ``bench/scale.py --profile``), a ``functools.cache`` in
    front of ``re.compile`` cost a call and a cache lookup per use and a ``__getattr__`` on this
    class five times a plain attribute's lookup (each 0.6 % of the dispatch's instructions,
    ``bench/instructions.py``).
    """

    URL: re.Pattern[str]
    SECRET_KEY: re.Pattern[str]
    QUERY_SECRET: re.Pattern[str]
    BEARER: re.Pattern[str]
    AUTH_HEADER: re.Pattern[str]
    PAIR: re.Pattern[str]
    KEY_SHAPES: re.Pattern[str]
    SIGNATURE: re.Pattern[str]
    WORKER_SECRET: re.Pattern[str]
    CAPABILITY_SEGMENT: re.Pattern[str]

    def __init__(self) -> None:
        for name in type(self).__annotations__:
            setattr(self, name, _FirstUse(name))


_rx = _Compiled()
