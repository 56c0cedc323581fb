"""Plans on your own hosts (``--cloud ssh``): real sshd servers on loopback, each host a private
root (``OA_VM_ROOT``, set by its sshd for every session: ``HostSshServer``) holding the files
the shipped probe reads (``dev/kvm``, ``proc/cpuinfo``, ``proc/meminfo``, ``proc/net/tcp``,
the pool marker). The real CLI runs as a subprocess. A plan names every host that cannot take
its workers in one line of its own, before anything is changed on any host or in the oa-vm
home."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cli import Result, run_cli
from tests.support.host_standins import HostSshServer
from tests.support.own_hosts import make_root, tree
from tests.support.plan_repeat import assert_same_plan, run_at_once
from tests.support.sshd import SshServer, free_port, generate_key, ipv6_loopback

pytestmark = pytest.mark.integration


@dataclass
class Host:
    """A rehearsal host: its sshd and its private root."""

    name: str
    root: Path
    server: SshServer | None

    @property
    def address(self) -> str:
        port = self.server.port if self.server else _UNREACHABLE_PORT[0]
        host = self.server.host if self.server else "127.0.0.1"
        shown = f"[{host}]" if ":" in host else host
        return f"{self.server.user if self.server else 'nobody'}@{shown}:{port}"

    def tree(self) -> dict[str, str]:
        """Every file under the root with its digest (to prove nothing changed)."""
        return tree(self.root)


_UNREACHABLE_PORT: list[int] = []


def _make_root(root: Path, **shape: object) -> None:
    make_root(root, **shape)  # type: ignore[arg-type]


HOSTS = {
    "good-a": {}, "good-b": {},
    "good-v6": {},  # reached over IPv6: its sshd listens on ::1 only
    "no-kvm": {"kvm": False},
    "small": {"mem_gib": 12},  # one 9 GiB worker and the host's 2 GiB, not two
    "taken": {"pool": "other-pool"},
    "busy-port": {"listening": (5100,)},  # worker w1's WAA port
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Host]]:
    base = tmp_path_factory.mktemp("lab")
    key = generate_key(base / "id_ed25519")
    hosts: dict[str, Host] = {}
    try:
        for name, shape in HOSTS.items():
            root = base / name / "root"
            _make_root(root, **shape)  # type: ignore[arg-type]
            # No stand-ins on the sessions' PATH: the probe reads with the real tools.
            (base / name / "bin").mkdir()
            if name == "good-v6" and ipv6_loopback() is not None:
                continue  # its test skips, saying why
            server = HostSshServer(base / name / "sshd", base / name / "bin",
                                   base / name / "fake", OA_VM_ROOT=str(root),
                                   listen="::1" if name == "good-v6" else "127.0.0.1")
            server.authorized_keys.write_text((base / "id_ed25519.pub").read_text())
            server.start()
            hosts[name] = Host(name, root, server)
        _UNREACHABLE_PORT.append(free_port())  # nothing listens there
        hosts["unreachable"] = Host("unreachable", base / "unreachable", None)
        (base / "unreachable").mkdir()
        hosts["_key"] = Host("_key", key, None)
        yield hosts
    finally:
        for host in hosts.values():
            if host.server is not None:
                host.server.stop()


def _plan(lab: dict[str, Host], home: Path, names: list[str], *extra: str) -> Result:
    args = ["pool-create", "--cloud", "ssh", "--pool", "lab", "--ssh-key", str(lab["_key"].root),
            *extra]
    for name in names:
        args += ["--host", lab[name].address]
    return run_cli("oa-vm", *args, home=home, timeout=180)


def test_the_plan_shows_each_host_and_places_two_workers_on_each(
    lab: dict[str, Host], tmp_path: Path
) -> None:
    done = _plan(lab, tmp_path, ["good-a", "good-b"], "--workers-per-host", "2", "--plan",
                 "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["cloud"] == "ssh" and plan["workers"] == 4
    assert plan["price_per_hour"] == 0.0  # your own hosts cost nothing unless you say so
    notes = "\n".join(plan["notes"])
    for name in ("good-a", "good-b"):
        assert f"host {lab[name].address}: KVM yes, 16 CPUs, 64 GiB memory" in notes
    assert "image cache" in notes and "timer on each host" in notes
    for name in ("good-a", "good-b"):  # no image cache yet: this pool builds it, once per host
        assert (f"host {lab[name].address}: this pool first builds its prepared image into "
                "/var/lib/oa-vm/image-cache from dockur's download of Windows (about 2 h") in notes
    workers = plan["resources"]
    assert len(workers) == 4
    for address in (lab["good-a"].address, lab["good-b"].address):
        mine = [w["inputs"] for w in workers if w["inputs"]["host"] == address]
        assert len(mine) == 2
        for field in ("container", "storage", "guest_ip"):
            assert len({w[field] for w in mine}) == 2, field
        ports = [p for w in mine for p in w["ports"]]
        assert len(set(ports)) == len(ports) == 6
    priced = _plan(lab, tmp_path, ["good-a", "good-b"], "--workers-per-host", "2",
                   "--price-per-hour", "0.25", "--plan", "--json")
    assert priced.returncode == 0, priced.stderr
    assert json.loads(priced.stdout)["price_per_hour"] == pytest.approx(1.0)


def test_every_host_that_cannot_take_its_workers_is_refused_in_one_line_before_any_change(
    lab: dict[str, Host], tmp_path: Path
) -> None:
    names = ["good-a", "no-kvm", "small", "unreachable", "taken", "busy-port"]
    before = {name: lab[name].tree() for name in names}
    for extra in (("--plan",), ("--yes",)):  # the plan alone, and a create
        done = _plan(lab, tmp_path, names, "--workers-per-host", "2", *extra)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        refused = {name: [line for line in lines if lab[name].address in line]
                   for name in names}
        assert refused["good-a"] == []
        for name in names[1:]:
            assert len(refused[name]) == 1, (name, lines)
        assert "no /dev/kvm" in refused["no-kvm"][0]
        assert "too little memory for 2 worker(s)" in refused["small"][0]
        assert "unreachable" in refused["unreachable"][0]
        assert "already serves pool 'other-pool'" in refused["taken"][0]
        assert "port(s) 5100 already in use" in refused["busy-port"][0]
        assert len(lines) == len(names) - 1, lines  # nothing else said
    assert {name: lab[name].tree() for name in names} == before
    assert not (tmp_path / "pools" / "lab").exists()


@pytest.mark.parametrize("shown", [(), ("--json",)], ids=["text", "json"])
def test_the_plan_and_its_refusals_are_the_same_on_every_run(
    lab: dict[str, Host], tmp_path: Path, shown: tuple[str, ...]
) -> None:
    def args(names: list[str]) -> list[str]:
        given = ["pool-create", "--cloud", "ssh", "--pool", "lab", "--ssh-key",
                 str(lab["_key"].root), "--workers-per-host", "2", "--plan", *shown]
        for name in names:
            given += ["--host", lab[name].address]
        return given

    # several at once, as the plans of a busy machine: the hosts are probed on threads
    assert_same_plan(run_at_once(tmp_path / "fits", "oa-vm", args(["good-a", "good-b"])))
    refused = run_at_once(tmp_path / "refused", "oa-vm",
                          args(["good-a", "no-kvm", "small", "unreachable", "taken"]))
    assert all(r.returncode != 0 and "Traceback" not in r.stderr for r in refused), refused
    assert len({r.stderr for r in refused}) == 1, [r.stderr for r in refused]


@pytest.mark.skipif(ipv6_loopback() is not None, reason=str(ipv6_loopback()))
def test_a_host_reached_over_ipv6_is_planned_as_any_other(
    lab: dict[str, Host], tmp_path: Path
) -> None:
    # --host user@[::1]:PORT: read, probed over SSH on IPv6, shown in brackets; its workers'
    # names carry no colon. Refused before ("IPv6 addresses are not supported").
    done = _plan(lab, tmp_path, ["good-a", "good-v6"], "--workers-per-host", "2", "--plan",
                 "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    address = lab["good-v6"].address
    assert address.startswith(f"{lab['good-v6'].server.user}@[::1]:")  # type: ignore[union-attr]
    assert f"host {address}: KVM yes, 16 CPUs, 64 GiB memory" in "\n".join(plan["notes"])
    mine = [w for w in plan["resources"] if w["inputs"]["host"] == address]
    assert len(mine) == 2 and all(":" not in w["name"] for w in mine), mine
    text = _plan(lab, tmp_path, ["good-v6"], "--plan")
    assert text.returncode == 0 and f"host {address}: " in text.stdout, text.stderr


def test_one_worker_fits_where_two_do_not(lab: dict[str, Host], tmp_path: Path) -> None:
    done = _plan(lab, tmp_path, ["small"], "--plan", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["workers"] == 1


def test_a_malformed_host_gets_one_line(lab: dict[str, Host], tmp_path: Path) -> None:
    done = run_cli("oa-vm", "pool-create", "--cloud", "ssh", "--ssh-key",
                   str(lab["_key"].root), "--plan", "--host", "lab-server", home=tmp_path)
    assert "use user@host or user@host:port" in done.assert_one_line_error()


def test_an_iso_the_hosts_cannot_build_from_gets_one_line_before_any_change(
    lab: dict[str, Host], tmp_path: Path
) -> None:
    before = lab["good-a"].tree()
    url = _plan(lab, tmp_path, ["good-a"], "--iso", "https://example.com/w.iso", "--yes")
    assert "your own hosts build from an ISO file here" in url.assert_one_line_error()
    missing = _plan(lab, tmp_path, ["good-a"], "--iso", str(tmp_path / "no.iso"), "--yes")
    assert "does not exist" in missing.assert_one_line_error()
    local = run_cli("oa-vm", "pool-create", "--cloud", "local", "--iso", str(tmp_path / "w.iso"),
                    "--plan", home=tmp_path)
    assert "--iso is for your own hosts" in local.assert_one_line_error()
    assert lab["good-a"].tree() == before
    assert not (tmp_path / "pools" / "lab").exists()


def test_the_plan_shows_the_egress_mode_and_a_bad_one_is_refused_before_any_change(
    lab: dict[str, Host], tmp_path: Path
) -> None:
    before = lab["good-a"].tree()
    for policy, shown in (("none", "egress none: the guest opens no connection at all"),
                          ("web", "egress web: the guest reaches public addresses on HTTP"),
                          ("allowlist:waa", "egress allowlist: the guest reaches only the")):
        done = _plan(lab, tmp_path, ["good-a"], "--egress", policy, "--plan", "--json")
        assert done.returncode == 0, done.stderr
        notes = [n for n in json.loads(done.stdout)["notes"] if n.startswith("egress ")]
        assert len(notes) == 1 and notes[0].startswith(shown), notes
        assert "your own containers on docker0 pass untouched" in notes[0]
        assert "nftables (for --egress)" in done.stdout
    unset = _plan(lab, tmp_path, ["good-a"], "--plan", "--json")
    assert "egress: not filtered" in "\n".join(json.loads(unset.stdout)["notes"])
    assert "nftables" not in unset.stdout  # installed only for --egress
    bad = _plan(lab, tmp_path, ["good-a"], "--egress", "sometimes", "--yes")
    assert "--egress sometimes: unknown egress mode" in bad.assert_one_line_error()
    assert lab["good-a"].tree() == before
    assert not (tmp_path / "pools" / "lab").exists()


def test_a_host_that_accepts_and_never_speaks_is_refused_in_its_one_line(
    lab: dict[str, Host], tmp_path: Path
) -> None:
    # A frozen host (rebooting, overloaded, a path dropping packets) takes the TCP connection
    # and never sends SSH's banner. Its line says so; before, paramiko's own thread also printed
    # "Exception (client): Error reading SSH protocol banner" and two tracebacks to the terminal
    # (as it did for pool-status --refresh, pool-cleanup and every command that asks a host).
    frozen = SshServer(tmp_path / "frozen")
    frozen.start()
    try:
        frozen.freeze()
        done = run_cli("oa-vm", "pool-create", "--cloud", "ssh", "--pool", "lab", "--ssh-key",
                       str(lab["_key"].root), "--plan", "--host", lab["good-a"].address,
                       "--host", f"{frozen.user}@127.0.0.1:{frozen.port}", home=tmp_path,
                       timeout=180)
    finally:
        frozen.thaw()
        frozen.stop()
    line = done.assert_one_line_error()
    assert f"127.0.0.1:{frozen.port} cannot take its workers: unreachable: " in line, line
    assert "no SSH handshake within 10s" in line, line
    assert not (tmp_path / "pools" / "lab").exists()


def test_a_workers_count_the_hosts_do_not_make_is_refused_and_one_they_make_is_taken(
    lab: dict[str, Host], tmp_path: Path
) -> None:
    # An own-host pool's count is its hosts x --workers-per-host; before, '--workers 5' was
    # ignored without a word and the plan made 2 (as --spot or --size there are refused).
    before = lab["good-a"].tree()
    for extra in (("--plan",), ("--yes",)):
        done = _plan(lab, tmp_path, ["good-a"], "--workers", "5", "--workers-per-host", "2",
                     *extra)
        line = done.assert_one_line_error()
        assert done.returncode == 2, done
        assert line.startswith("oa-vm: error: --workers 5 disagrees with your hosts: "), line
        assert "the count comes from the hosts and --workers-per-host" in line, line
        assert "(1 host(s) x 2 = 2 workers); leave --workers out" in line, line
    assert lab["good-a"].tree() == before
    assert not (tmp_path / "pools" / "lab").exists()
    for given in (("--workers", "4"), ()):  # a count that agrees, or none
        done = _plan(lab, tmp_path, ["good-a", "good-b"], *given, "--workers-per-host", "2",
                     "--plan", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["workers"] == 4


class _NologinServer(SshServer):
    """An sshd that lets ``nobody`` (whose shell is nologin, home /nonexistent) log in with the
    client key: its keys come from a command run as root, as the test folder is root's alone."""

    def _write_config(self) -> None:
        super()._write_config()
        with self.config.open("a") as config:
            config.write(f"AuthorizedKeysCommand /bin/cat {self.authorized_keys}\n"
                         "AuthorizedKeysCommandUser root\n")


def test_a_host_whose_login_shell_refuses_is_refused_in_its_one_line(tmp_path: Path) -> None:
    # nologin prints "This account is currently not available." and sshd "Could not chdir to
    # home directory /nonexistent..."; before, the plan printed them on two lines.
    import pwd

    try:
        shell = pwd.getpwnam("nobody").pw_shell
    except KeyError:
        pytest.skip("no user 'nobody' on this machine")
    if not shell.endswith("nologin"):
        pytest.skip(f"user 'nobody' has the shell {shell}, not nologin")
    server = _NologinServer(tmp_path / "sshd")
    server.start()
    try:
        for extra in (("--plan",), ("--yes",)):
            done = run_cli("oa-vm", "pool-create", "--cloud", "ssh", "--pool", "lab",
                           "--ssh-key", str(server.client_key), "--host",
                           f"nobody@127.0.0.1:{server.port}", *extra, home=tmp_path / "home",
                           timeout=180)
            line = done.assert_one_line_error()
            assert done.returncode == 2, done
            assert (f"host nobody@127.0.0.1:{server.port} cannot take its workers: the probe "
                    "failed (exit 1): ") in line, line
            assert "This account is currently not available." in line, line
    finally:
        server.stop()
    assert not (tmp_path / "home" / "pools" / "lab").exists()
