"""Files shipped onto a cloud worker host, and the pure functions that render its cloud-init.

``scoring_server.py`` and ``relay.py`` run on the host (inside the WAA container) as loose files
with the standard library only; ``cloud_init.py`` and ``units.py`` run here, at plan/create time.
"""
