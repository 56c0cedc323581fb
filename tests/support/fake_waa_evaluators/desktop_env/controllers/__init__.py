"""Stand-in for WAA's ``desktop_env.controllers`` (tests only)."""
