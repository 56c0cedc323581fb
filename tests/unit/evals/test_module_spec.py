"""``module:Name`` on the command line is found the same way for agents and benchmark adapters:
the current folder first."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ADAPTER = '''
from evals.verifier_audit.adapters.toy import ToyAdapter


class MyAdapter(ToyAdapter):
    pass
'''
AGENT = '''
from evals.agents import BenchmarkAction, BenchmarkAgent


class MyAgent(BenchmarkAgent):
    def act(self, observation, task, history=None):
        return BenchmarkAction(type="done")
'''


@pytest.mark.parametrize(("module", "source", "load"), [
    ("here_adapter_mod", ADAPTER, "adapter"),
    ("here_agent_mod", AGENT, "agent"),
])
def test_module_class_is_looked_up_in_the_current_folder_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str, load: str,
) -> None:
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, module, raising=False)
    if load == "adapter":
        from evals.cli.commands.audit import _load_adapter

        assert type(_load_adapter(f"{module}:MyAdapter")).__name__ == "MyAdapter"
    else:
        from evals.agents import load_agent_class

        assert load_agent_class(f"{module}:MyAgent").__name__ == "MyAgent"
    assert str(tmp_path) not in sys.path  # added for the import only
    sys.modules.pop(module, None)
