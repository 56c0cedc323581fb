"""The rules of what one of your own hosts can take (``oa_vm.clouds.hosts.facts``) and the
checks of the host options, without SSH (the probe over real sshd:
tests/integration/test_own_hosts_plan.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.worker import slots
from oa_vm import api
from oa_vm.clouds.hosts.facts import HostAddress, HostFacts, fit
from oa_vm.clouds.hosts.provider import SshHostsProvider, host_addresses, hosts_failed
from oa_vm.errors import InvalidInputError
from oa_vm.model.state import PoolRecord
from tests.support.sshd import generate_key

GIB = 1024 * 1024


def facts(**changes: object) -> HostFacts:
    values: dict[str, object] = {
        "kvm": True, "cpus": 32, "mem_kib": 128 * GIB, "avail_kib": 120 * GIB,
        "disk_free_kib": 900 * GIB, "engine": "docker", "listening": frozenset({22}),
        "pool": "", "privilege": "sudo", "image_cache": False,
    }
    values.update(changes)
    return HostFacts(**values)  # type: ignore[arg-type]


def test_a_32_core_128_gib_host_holds_four_8_gib_workers() -> None:
    assert fit(facts(), 4, pool="p").fits == 4
    assert fit(facts(), 4, pool="p").problems == []


@pytest.mark.parametrize(("changes", "wanted", "words"), [
    ({"kvm": False}, 1, "no /dev/kvm"),
    ({"avail_kib": 19 * GIB}, 2, "too little memory for 2 worker(s)"),
    ({"cpus": 6}, 2, "too few CPUs for 2 worker(s)"),
    ({"pool": "other"}, 1, "already serves pool 'other'"),
    ({"privilege": "none"}, 1, "cannot become root"),
    ({"listening": frozenset({22, 5151})}, 2, "port(s) 5151 already in use"),
])
def test_each_reason_a_host_is_refused(changes: dict[str, object], wanted: int,
                                       words: str) -> None:
    result = fit(facts(**changes), wanted, pool="p")
    assert any(words in problem for problem in result.problems), result.problems


def test_a_host_already_in_this_pool_is_not_refused_for_it() -> None:
    assert fit(facts(pool="p"), 1, pool="p").problems == []


def test_the_probe_output_is_read_whatever_order_and_gaps() -> None:
    parsed = HostFacts.parse("pool=\nkvm=yes\ncpus=8\nmem_kib=100\nlistening=22,5000\n")
    assert parsed.kvm and parsed.cpus == 8 and parsed.avail_kib == 100
    assert parsed.listening == frozenset({22, 5000})
    with pytest.raises(ValueError, match="no result"):
        HostFacts.parse("bash: command not found")


@pytest.mark.parametrize(("text", "words"), [
    ("lab-server", "use user@host or user@host:port"),
    ("u@h:70000", "is not a TCP port"),
    ("u@h:ssh", "use user@host"),
    ("@h", "use user@host"),
    ("u@h:", "use user@host"),
    # nothing ssh would read as an option, nor more than one host
    ("u@-oProxyCommand=touch", "use user@host"),
    ("-oProxyCommand=x@h", "use user@host"),
    ("u@h/x", "use user@host"),
    ("u@h.", "use user@host"),
    # an IPv6 address's colons would run into the port's: in brackets only
    ("u@fe80::1", "write an IPv6 address in brackets"),
    ("u@2001:db8::1:22", "write an IPv6 address in brackets"),
    # two ports: it said "IPv6 addresses are not supported"
    ("u@h:22:33", "a host takes one port"),
    ("u@[lab]:22", "in brackets goes an IPv6 address"),
    ("u@[::1", "in brackets goes an IPv6 address"),
    ("u@[::1]22", "in brackets goes an IPv6 address"),
    ("u@[::1]:", "use user@host"),
    ("u@[::1]:99999", "is not a TCP port"),
])
def test_malformed_hosts_are_refused(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        HostAddress.parse(text)
    assert HostAddress.parse("ubuntu@10.0.0.5") == HostAddress("ubuntu", "10.0.0.5", 22)
    assert HostAddress.parse(" ec2-user@lab_1.example.org:2222 ") == HostAddress(
        "ec2-user", "lab_1.example.org", 2222)


@pytest.mark.parametrize(("text", "host", "port", "shown"), [
    ("ubuntu@[2001:db8::1]:2222", "2001:db8::1", 2222, "ubuntu@[2001:db8::1]:2222"),
    ("ubuntu@[::1]", "::1", 22, "ubuntu@[::1]:22"),
    ("ubuntu@[fe80::1%eth0]:22", "fe80::1%eth0", 22, "ubuntu@[fe80::1%eth0]:22"),
    ("ubuntu@lab:22", "lab", 22, "ubuntu@lab:22"),
])
def test_an_ipv6_host_goes_in_brackets_and_is_written_back_so(
    text: str, host: str, port: int, shown: str,
) -> None:
    address = HostAddress.parse(text)
    assert (address.host, address.port, str(address)) == (host, port, shown)
    assert HostAddress.parse(str(address)) == address  # a record's hosts read back
    assert ":" not in address.label and "%" not in address.label


@pytest.fixture
def key(tmp_path: Path) -> str:
    return str(generate_key(tmp_path / "id_ed25519"))


@pytest.mark.parametrize(("kwargs", "words"), [
    ({"hosts": []}, "needs --host"),
    ({"ssh_key": None}, "needs --ssh-key"),
    ({"workers_per_host": slots.MAX_SLOTS + 1}, "--workers-per-host must be"),
    ({"workers_per_host": 0}, "--workers-per-host must be"),
])
def test_host_options_are_checked_before_anything(key: str, kwargs: dict[str, object],
                                                 words: str) -> None:
    given: dict[str, object] = {"name": "lab", "cloud": "ssh", "hosts": ["u@h"], "ssh_key": key}
    given.update(kwargs)
    with pytest.raises(InvalidInputError, match=words):
        api.build_spec(**given)  # type: ignore[arg-type]


def test_host_options_belong_to_their_clouds(key: str) -> None:
    with pytest.raises(InvalidInputError, match="--host is for your own hosts"):
        api.build_spec(name="p", cloud="aws", hosts=["u@h"])
    # a local pool's simulated host is a process: N workers per host is N per process
    local = api.build_spec(name="p", cloud="local", workers=4, workers_per_host=2)
    assert (local.per_process, local.workers_per_host, local.workers) == (2, 1, 4)
    with pytest.raises(InvalidInputError, match="disagree"):
        api.build_spec(name="p", cloud="local", workers_per_host=2, per_process=3)
    spec = api.build_spec(name="lab", cloud="ssh", hosts=["u@a", "u@b:2222"], ssh_key=key,
                          workers_per_host=3, price_per_hour=0.5)
    assert spec.workers == 6 and spec.price_per_hour == 0.5
    # one host however it is written: the port's default, a name's case, an address's form
    for twice in (["u@h:22", "v@h"], ["u@lab", "U@LAB"], ["u@[::1]", "u@[0:0::1]:22"]):
        with pytest.raises(InvalidInputError, match="given twice"):
            host_addresses(api.build_spec(name="lab", cloud="ssh", hosts=twice, ssh_key=key))


def test_ssh_via_is_refused_for_own_hosts(key: str, oa_home: Path) -> None:
    from typer.testing import CliRunner

    from oa_vm.cli.app import app

    result = CliRunner().invoke(app, ["pool-create", "--cloud", "ssh", "--host", "u@127.0.0.1:9",
                                      "--ssh-key", key, "--ssh-via", "u@h:22", "--plan"])
    assert result.exit_code != 0
    assert "--ssh-via is for local pools" in str(result.exception or result.output)


def test_a_create_that_failed_on_several_hosts_names_each_on_a_line_of_its_own() -> None:
    a, b = HostAddress("root", "a"), HostAddress("root", "b", 2222)
    one = str(hosts_failed("lab", 3, [(a, "image build failed at pull: no")]))
    assert one == "host root@a:22: image build failed at pull: no; nothing of pool lab is left " \
        "on the other hosts"
    several = str(hosts_failed("lab", 3, [(a, "image build failed at pull: no"),
                                          (b, "its workers did not start: Job failed.\n\n"
                                              "  Job failed again.\n")]))
    assert several.splitlines() == [
        "pool lab failed on 2 of 3 hosts; nothing of it is left on any host:",
        "host root@a:22: image build failed at pull: no",
        "host root@b:2222: its workers did not start: Job failed.; Job failed again.",
    ]


class _TwoLineRunner:
    """A host whose every command fails, printing two lines (a login shell's refusal)."""

    def run(self, ssh: object, command: str, timeout: float) -> object:
        from waa_client.ssh import CommandResult

        return CommandResult(1, "Could not chdir to home directory /nonexistent\n"
                                "This account is currently not available.\n")


class _TwoLineHosts(SshHostsProvider):
    def runner(self, record: PoolRecord) -> _TwoLineRunner:  # type: ignore[override]
        return _TwoLineRunner()


def test_every_line_quoting_a_host_joins_its_output_into_one(oa_home: Path) -> None:
    # a release (pool-cleanup's "left"), a pause and an expiry move of a
    # host that prints two lines: each says them on one line, as the plan and the create do
    from datetime import timedelta

    from oa_vm.model.state import PoolState, SshEndpoint, WorkerRecord, WorkerState, utcnow

    ssh = SshEndpoint(host="127.0.0.1", port=2222, user="nobody", key_path="/k")
    record = PoolRecord(name="lab", cloud="ssh", state=PoolState.READY, created_at=utcnow(),
                        expires_at=utcnow() + timedelta(hours=1), workers=[
                            WorkerRecord(name="lab-w0", state=WorkerState.READY,
                                         host="nobody@127.0.0.1:2222", ssh=ssh,
                                         provider_id="w0")])
    provider = _TwoLineHosts()
    said: list[str] = []
    report = provider.destroy(record, said.append)
    provider.move_expiry(record, said.append)
    provider.fleet_ops().pause(record, said.append)
    said += report.left
    assert len(said) == 3, said
    for line in said:
        assert "\n" not in line, line
        assert ("Could not chdir to home directory /nonexistent; This account is currently "
                "not available.") in line, line
