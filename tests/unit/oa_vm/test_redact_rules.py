"""Each masking rule of ``oa_vm.kit.redact`` on its own, and what must stay readable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oa_vm.kit import redact
from oa_vm.kit.redact import MASK, redact_text, redact_url


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    # the process's registered secrets are global: each test starts with none
    monkeypatch.setattr(redact, "_registered", set())


def test_a_registered_secret_inside_a_longer_one_never_leaves_a_piece() -> None:
    redact.register_secret("k3y-short")
    redact.register_secret("k3y-short-and-longer")
    assert redact_text("got k3y-short-and-longer back") == f"got {MASK} back"


def test_a_short_value_is_not_registered() -> None:
    redact.register_secret("cap")
    assert redact_text("capacity") == "capacity"


def test_sas_signatures_are_masked_in_urls_and_bare_paths() -> None:
    url = "https://acct.blob.core.windows.net/c/b.vhd?sv=2022&sig=AbCdEf%2B123"
    assert redact_url(url) == f"https://acct.blob.core.windows.net/c/b.vhd?sv=2022&sig={MASK}"
    assert "AbCdEf" not in redact_text("GET /c/b.vhd?sv=2022&sig=AbCdEf123 failed")


def test_credentials_in_urls_and_free_text_are_masked() -> None:
    assert redact_url("http://user:pw@h.example:8080/x") == f"http://{MASK}@h.example:8080/x"
    assert redact_url("http://user:pw@[::1") == MASK  # unparsable, and it holds credentials
    cap = "cap-" + "0123456789abcdef" * 2 + "01234567"
    assert cap not in redact_text(f"refused: http://127.0.0.1:5000/{cap}/execute")
    assert "s3cr3tvalue" not in redact_text("Authorization: Basic s3cr3tvalue")
    assert "abcdefgh123" not in redact_text("sent Bearer abcdefgh123 upstream")


def test_counts_named_like_credentials_stay_readable() -> None:
    assert redact_text("tokens_in: 1234, max_tokens=99") == "tokens_in: 1234, max_tokens=99"


def test_a_resource_type_named_like_a_header_stays_readable() -> None:
    # a plan once listed "1 x azure-native:authorization:***" for the pool's role assignment
    shown = "1 x azure-native:authorization:RoleAssignment  p1-expiry"
    assert redact_text(shown) == shown
    assert "s3cr3tvalue" not in redact_text('{"X-Authorization": "s3cr3tvalue"}')
    assert "s3cr3tvalue" not in redact_text("Proxy-Authorization: Bearer s3cr3tvalue")


def test_patterns_are_compiled_at_first_use_and_then_held_like_globals() -> None:
    # A fresh interpreter: nothing compiled at import (pool-status's start-up needs two of the
    # patterns); after a use, each pattern used is an attribute of redact._rx, so a later use
    # is one attribute lookup, neither re's cache nor a function cache in front of re.compile
    # (redaction runs on every string of every record the controller writes).
    code = (
        "import re\n"
        "from oa_vm.kit import redact\n"
        "def compiled():\n"
        "    return {k for k, v in vars(redact._rx).items() if isinstance(v, re.Pattern)}\n"
        "assert compiled() == set(), compiled()\n"
        "redact.redact_text('GET http://u:p@h.example/a?token=x Bearer abcdefgh1 sig=abcd')\n"
        "used = {'URL', 'SECRET_KEY', 'WORKER_SECRET', 'QUERY_SECRET', 'KEY_SHAPES',\n"
        "        'SIGNATURE', 'AUTH_HEADER', 'BEARER', 'PAIR'}\n"
        "assert compiled() == used, sorted(compiled())\n"
        "assert redact._rx.BEARER.pattern == redact._BEARER\n"
        "assert not hasattr(type(redact._rx), '__getattr__')\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
