"""Stand-in for WAA's ``desktop_env.evaluators`` (tests only)."""
