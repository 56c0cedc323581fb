"""Reaching a pool's workers: connections and tunnels, a host's own status, spot drains and
replacements."""
