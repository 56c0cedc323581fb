"""Stand-in for WAA's ``desktop_env`` package (tests only; see the folder's README.md)."""
