"""The local pool: simulated workers as processes on this machine, the default for the quick start
and the tests."""
