"""Files shipped onto a cloud worker host, and the pure functions that render its cloud-init.

What the host runs is shipped as it is: the shell scripts (``bootstrap.sh``, ``lib.sh``,
``scoring.sh``; checked by shellcheck and rehearsed under bash in the tests), the systemd units
in ``systemd/``, the worker image's ``waa-image/Dockerfile``, and ``scoring_server.py`` and
``relay.py`` (standard library only, run inside the WAA container). ``cloud_init.py`` and
``units.py`` run here, at plan/create time.
"""
