"""The real ``oa-vm`` CLI on a stand-in AWS: the tests' fake engine, and a rehearsal host.

Run as ``python -m tests.support.fake_cloud_cli ARGS...`` (the arguments of ``oa-vm``). Only
the cloud is stood in, everything else is the shipped code in this process:

- the Pulumi engine is :class:`tests.support.fake_pulumi_engine.FakePulumiEngine`: ``up`` runs
  the real pool program under Pulumi's mocks, ``destroy`` empties the stack; what the "cloud"
  still holds is what the cleanup's tag check (the lister) is told;
- the instance the program "creates" is the rehearsal host described by ``$FAKE_CLOUD`` (a JSON
  file): a real OpenSSH server on loopback (``ssh``: host, port, user, authorized_keys), whose
  sessions have the host stand-ins and the bootstrap's status file, with a real simulated
  worker behind it (``waa_port``, ``scoring_port``, reached through the SSH tunnels as on a
  cloud host). The pool's public key is put into ``authorized_keys`` as cloud-init would, and
  the record's address is the host's, as the cloud's public IP would be.

An image builder is the same host: ``images.follow_builder`` (which reaches the builder at its
public IP, port 22) is replaced by the real ``cloud_wait.follow_status`` on the rehearsal host,
reading the builder's status and image-info files from ``builder_state`` (a folder of the test),
after the builder's key is authorized as cloud-init would.

At exit the fake cloud's content is written to ``engine_state`` (``{stack: [types]}`` and the
engine's calls), so a test can assert what was left.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from pathlib import Path
from typing import Any

from oa_vm.clouds.aws.provider import AwsProvider
from oa_vm.clouds.base import PoolSpec, Progress
from oa_vm.model.state import PoolRecord, SshEndpoint
from tests.support.fake_pulumi_engine import FakePulumiEngine
from tests.support.pool_programs import AwsLookups


class RehearsalAws(AwsProvider):
    """The AWS provider whose instances are the rehearsal host (see the module docstring)."""

    def __init__(self, config: dict[str, Any], engine: FakePulumiEngine) -> None:
        super().__init__(engine=engine, lister=self._left)
        self.config = config
        self.fake = engine
        self.poll_interval_s = 0.5  # pool-wait's pause between passes; the host answers at once

    def _left(self, pool: str) -> list[str]:
        return [f"{t} (tagged oa-vm:pool={pool})" for t in self.fake.live_types(pool)]

    def create(self, spec: PoolSpec, progress: Progress) -> PoolRecord:
        """Create as AWS does, then point the workers at the rehearsal host."""
        from oa_vm.model import sshkeys

        record = super().create(spec, progress)
        ssh = self.config["ssh"]
        _path, public_key = sshkeys.ensure_pool_key(spec.name)
        with Path(ssh["authorized_keys"]).open("a", encoding="utf-8") as keys:
            keys.write(public_key + "\n")
        for worker in record.workers:
            assert worker.ssh is not None
            worker.host = ssh["host"]
            worker.ssh = SshEndpoint(host=ssh["host"], port=int(ssh["port"]), user=ssh["user"],
                                     key_path=worker.ssh.key_path)
            worker.remote_waa_port = int(self.config["waa_port"])
            worker.remote_scoring_port = int(self.config["scoring_port"])
        return record


def follow_builder_on(config: dict[str, Any]) -> Any:
    """``images.follow_builder`` for a builder that is the rehearsal host (see the docstring)."""
    from oa_vm.clouds.pulumi.wait import follow_status
    from oa_vm.model import sshkeys, state
    from oa_vm.reach.host_status import RemoteCommands

    def follow(record: Any, outputs: Any, progress: Progress) -> dict[str, str]:
        ssh = config["ssh"]
        _path, public_key = sshkeys.ensure_pool_key(record.id)
        with Path(ssh["authorized_keys"]).open("a", encoding="utf-8") as keys:
            keys.write(public_key + "\n")
        folder = Path(config["builder_state"])
        return follow_status(
            SshEndpoint(host=ssh["host"], port=int(ssh["port"]), user=ssh["user"],
                        key_path=str(sshkeys.key_path(record.id))),
            state.pool_dir(record.id) / "known_hosts", name=f"{record.id}-builder",
            timeout_s=120, progress=progress, poll_s=0.5,
            commands=RemoteCommands(status_file=str(folder / "status"),
                                    image_info_file=str(folder / "image-info")),
        )

    return follow


def _dump(engine: FakePulumiEngine, target: Path) -> None:
    target.write_text(json.dumps({
        "stacks": {name: engine.live_types(name) for name in engine.stacks},
        "calls": [list(c) for c in engine.calls],
    }), encoding="utf-8")


def main(argv: list[str]) -> None:
    """Install the stand-in cloud, then run ``oa-vm ARGV``."""
    import oa_vm.api
    import oa_vm.clouds

    config = json.loads(Path(os.environ["FAKE_CLOUD"]).read_text(encoding="utf-8"))
    engine = FakePulumiEngine(AwsLookups())
    provider = RehearsalAws(config, engine)
    real = oa_vm.clouds.get_provider

    def get_provider(cloud: str) -> Any:
        return provider if cloud == "aws" else real(cloud)

    oa_vm.clouds.get_provider = get_provider
    oa_vm.api.get_provider = get_provider  # type: ignore[assignment]
    if config.get("builder_state"):
        import oa_vm.images

        oa_vm.images.follow_builder = follow_builder_on(config)
    atexit.register(_dump, engine, Path(config["engine_state"]))
    from oa_vm.cli.app import main as cli_main

    sys.argv = ["oa-vm", *argv]
    cli_main()


if __name__ == "__main__":
    main(sys.argv[1:])
