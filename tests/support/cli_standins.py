"""Stand-in ``aws``/``az`` executables that print recorded outputs of those CLIs.

The code under test runs its real command lines; only the cloud's answer is recorded (shapes as
the services return them). Each call's arguments are appended to ``<bin>/<name>.calls``.
"""

from __future__ import annotations

import json
from pathlib import Path


def standin(bin_dir: Path, name: str, outputs: dict[str, object]) -> Path:
    """``name`` printing the recorded output whose key is the first words of its arguments
    (anything else: exit 2 with ``unexpected``). Values are printed as JSON, strings as they
    are (``-o tsv`` answers)."""
    bin_dir.mkdir(exist_ok=True)
    cases = "\n".join(
        f"  '{key}'*) cat <<'JSON'\n"
        f"{value if isinstance(value, str) else json.dumps(value)}\nJSON\n  ;;"
        for key, value in outputs.items()
    )
    script = bin_dir / name
    script.write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> "{bin_dir}/{name}.calls"\n'
        f'case "$*" in\n{cases}\n  *) echo "unexpected: $*" >&2; exit 2 ;;\nesac\n'
    )
    script.chmod(0o755)
    return script
