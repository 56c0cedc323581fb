"""The worker's CPU flags, as dockur composes them, register no migration blocker under KVM.

A clean reset is QEMU's ``snapshot-save``, which refuses while any migration blocker exists
(``migration_is_blocked``). dockur's ``qemu/src/proc.sh`` composes the ``-cpu`` value from the
container's ``CPU_MODEL``, ``CPU_FLAGS`` and ``HV``; here it runs for real, for a cloud worker's
Intel and AMD hosts (each one's ``/proc/cpuinfo`` bound over this machine's in a private mount
namespace), with the values the worker passes (``lib.sh``'s ``dockur_cpu_env``, given to
``docker run`` by ``bootstrap.sh``), on a host whose KVM emulates Hyper-V and on one whose does
not.

QEMU's rules (QEMU 7.2 to 11.x, ``target/i386``), written out as :func:`blockers`:

1. ``kvm/kvm.c``, ``kvm_arch_init_vcpu``: an invariant TSC (CPUID 0x80000007 EDX bit 8,
   ``invtsc``) exposed to the guest without a user-set ``tsc-frequency`` registers
   "State blocked by non-migratable CPU device (invtsc flag)".
2. ``cpu.c``: ``invtsc`` is an *unmigratable* flag (``unmigratable_flags`` of
   ``FEAT_8000_0007_EDX``). The ``host`` (and ``max``) model hides unmigratable flags while its
   ``migratable`` property is on (the default) and passes them through from KVM with
   ``migratable=no``; any model exposes one asked for by name (``+invtsc``, ``invtsc=on``).
3. ``cpu.c``, ``x86_cpu_parse_featurestr``: the legacy ``-feat`` beats ``+feat``, which beats
   ``feat=on|off`` wherever each appears (minus features are applied last).
4. ``kvm/kvm.c``: nested virtualization (``vmx`` or ``svm`` exposed) registers a blocker where
   the kernel cannot save nested state (``KVM_CAP_NESTED_STATE``); a worker cannot know its
   cloud's kernel in advance, so any exposed ``vmx``/``svm`` counts here.
5. ``cpu.c``, ``x86_cpu_hyperv_realize``: ``hv-reenlightenment`` without ``hv-passthrough``
   and without ``tsc-frequency`` registers one.
6. ``kvm/kvm.c``, ``hyperv_init_vcpu`` (run where the host's KVM emulates Hyper-V):
   ``hv-passthrough`` registers "'hv-passthrough' CPU flag prevents migration, use explicit set
   of hv-* flags instead" (rule 5's exemption is QEMU's own "as 'hv-passthrough' mode is not
   migratable"), and ``hv-no-nonarch-coresharing=auto`` registers one too. dockur's Windows
   default (``HV=Y``) is ``hv_passthrough`` (QEMU reads ``_`` as ``-``).
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
WORKER = ROOT / "infra" / "worker"
DOCKUR_SRC = ROOT.parent / "shared" / "dockur" / "upstream" / "qemu" / "src"
BASH = shutil.which("bash") or "/bin/bash"

HOSTS = {
    # A Sapphire Rapids (m8i/c8i) host: invariant TSC, VMX with TSC scaling and APICv.
    "intel": ("GenuineIntel", "Intel(R) Xeon(R) Platinum 8488C",
              "fpu tsc msr constant_tsc nonstop_tsc vmx hypervisor",
              "vnmi preemption_timer posted_intr invvpid ept_x_only tsc_scaling apicv"),
    # An EPYC (Dasv5) host: invariant TSC, SVM with TSC scaling and AVIC.
    "amd": ("AuthenticAMD", "AMD EPYC 7763 64-Core Processor",
            "fpu tsc msr constant_tsc nonstop_tsc svm tsc_scale avic hypervisor", ""),
}
UNMIGRATABLE = ("invtsc",)
HIDDEN_UNLESS_ASKED = ("invtsc",)


def _cpuinfo(host: str) -> str:
    vendor, name, flags, vmx = HOSTS[host]
    lines = [f"vendor_id\t: {vendor}", f"model name\t: {name}", f"flags\t\t: {flags}"]
    if vmx:
        lines.append(f"vmx flags\t: {vmx}")
    return "\n".join(lines) + "\n"


def worker_env(hyperv: bool) -> dict[str, str]:
    """The CPU variables the worker gives dockur (``lib.sh``'s ``dockur_cpu_env``) on a host
    whose KVM does (``hyperv``) or does not emulate Hyper-V: the kernel's answer
    (``kvm_hyperv``) is the one thing given here."""
    answer = "return 0" if hyperv else "return 1"
    script = f'. "$0"; kvm_hyperv() {{ {answer}; }}; dockur_cpu_env'
    done = subprocess.run([BASH, "-c", script, str(WORKER / "lib.sh")], capture_output=True,
                          text=True, timeout=30, check=True, env={"PATH": "/usr/bin:/bin"})
    return dict(line.split("=", 1) for line in done.stdout.splitlines())


def dockur_cpu(host: str, tmp: Path, env: dict[str, str]) -> str:
    """The ``-cpu`` value dockur's real ``proc.sh`` composes on ``host`` under KVM, with the
    container's variables ``env`` (``CPU_MODEL``, ``CPU_FLAGS``, ``HV``)."""
    if not (DOCKUR_SRC / "proc.sh").is_file():
        pytest.skip("dockur's upstream code not found at ../shared/dockur/upstream")
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    fake = tmp / f"cpuinfo-{host}"
    fake.write_text(_cpuinfo(host))
    script = f"""set -Eeuo pipefail
mount --bind {fake} /proc/cpuinfo
cd {DOCKUR_SRC}
. ./utils.sh
BOOT_MODE=windows ARCH=amd64 DEBUG=N CPU="{HOSTS[host][1]}" ARGUMENTS=""
. ./proc.sh
printf %s "$CPU_FLAGS"
"""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **env}
    command = ["unshare", "--mount", "--propagation", "private", BASH, "-c", script]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    if done.returncode != 0 and "unshare" in done.stderr:
        command = ["unshare", "--user", "--map-root-user", *command[1:]]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _normal(name: str) -> str:
    return name.replace("_", "-")


def exposed(cpu: str, host_flags: set[str]) -> set[str]:
    """The features of interest the guest sees for ``-cpu cpu`` on a host with ``host_flags``
    (rules 2 and 3)."""
    model, *items = cpu.split(",")
    plus: set[str] = set()
    minus: set[str] = set()
    props: dict[str, str] = {}
    for item in items:
        if item.startswith("+"):
            plus.add(_normal(item[1:]))
        elif item.startswith("-"):
            minus.add(_normal(item[1:]))
        elif "=" in item:
            key, value = item.split("=", 1)
            props[_normal(key)] = value
        else:
            props[_normal(item)] = "on"
    migratable = props.get("migratable", "on") not in ("off", "no", "false")
    host_has = {f for f in ("vmx", "svm") if f in host_flags}
    if {"constant_tsc", "nonstop_tsc"} <= host_flags:
        host_has.add("invtsc")  # KVM reports an invariant TSC on such hosts
    if model in ("host", "max"):
        seen = {f for f in host_has if migratable is False or f not in UNMIGRATABLE}
    else:
        seen = set()  # named models: none of these unless asked for
    for key, value in props.items():
        if value in ("on", "yes", "true"):
            seen.add(key)
        elif value in ("off", "no", "false"):
            seen.discard(key)
    seen |= plus
    seen -= minus
    for name, value in props.items():
        if name in ("hv-passthrough", "tsc-frequency") and value not in ("off", "no", "false"):
            seen.add(name)
    return seen


HV_PASSTHROUGH = ("'hv-passthrough' CPU flag prevents migration, use explicit set of hv-* "
                  "flags instead")


def blockers(cpu: str, host_flags: set[str]) -> list[str]:
    """The migration blockers QEMU registers under KVM for ``-cpu cpu`` on a host whose KVM
    emulates Hyper-V (rules 1, 4, 5, 6)."""
    seen = exposed(cpu, host_flags)
    found = []
    if "invtsc" in seen and "tsc-frequency" not in seen:
        found.append("State blocked by non-migratable CPU device (invtsc flag)")
    if seen & {"vmx", "svm"}:
        found.append("nested virtualization (vmx/svm) without the kernel's nested state")
    if ("hv-reenlightenment" in seen and "hv-passthrough" not in seen
            and "tsc-frequency" not in seen):
        found.append("hv-reenlightenment without tsc-frequency")
    if "hv-passthrough" in seen:
        found.append(HV_PASSTHROUGH)
    if _props(cpu).get("hv-no-nonarch-coresharing") == "auto":
        found.append("'hv-no-nonarch-coresharing=auto' CPU flag prevents migration")
    return found


def _props(cpu: str) -> dict[str, str]:
    """``cpu``'s ``name=value`` items (the last one wins), names with ``-`` for ``_``."""
    items = (item.split("=", 1) for item in cpu.split(",")[1:] if "=" in item)
    return {_normal(name): value for name, value in items}


def _host_flags(host: str) -> set[str]:
    return set(HOSTS[host][2].split())


WINDOWS_ENLIGHTENMENTS = {"hv-relaxed", "hv-vapic", "hv-spinlocks", "hv-time", "hv-synic",
                          "hv-stimer", "hv-vpindex", "hv-tlbflush", "hv-ipi"}
"""What dockur's ``hv_passthrough`` gave Windows on a host whose KVM emulates Hyper-V (timers,
spinlocks, TLB flushes and IPIs through the hypervisor): the worker keeps them, named."""


@pytest.mark.parametrize("hyperv", [True, False], ids=["kvm-hyperv", "no-kvm-hyperv"])
@pytest.mark.parametrize("host", sorted(HOSTS))
def test_the_workers_cpu_registers_no_migration_blocker(host: str, hyperv: bool,
                                                         tmp_path: Path) -> None:
    cpu = dockur_cpu(host, tmp_path, worker_env(hyperv))
    assert cpu.startswith("host,"), cpu  # still KVM's host model: no CPU feature is lost
    assert blockers(cpu, _host_flags(host)) == [], cpu
    named = {_normal(item.split("=", 1)[0]) for item in cpu.split(",")}
    if hyperv:
        assert named >= WINDOWS_ENLIGHTENMENTS, cpu  # Windows keeps its enlightenments
    else:
        # A kernel without KVM's Hyper-V: none at all (QEMU fails to start on some there)
        assert not {name for name in named if name.startswith("hv-")}, cpu


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_dockurs_default_cpu_is_blocked(host: str, tmp_path: Path) -> None:
    """The rules see what the issue saw: dockur's default flags block every snapshot."""
    cpu = dockur_cpu(host, tmp_path, {})
    assert "migratable=no" in cpu
    found = blockers(cpu, _host_flags(host))
    assert "State blocked by non-migratable CPU device (invtsc flag)" in found
    assert HV_PASSTHROUGH in found


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_dockurs_hyperv_default_blocks_beside_the_invtsc_fix(host: str, tmp_path: Path) -> None:
    """``CPU_MODEL``/``CPU_FLAGS`` alone (the invariant TSC's fix) leave dockur's ``HV=Y``:
    ``hv_passthrough`` still blocks every snapshot where KVM emulates Hyper-V."""
    env = worker_env(hyperv=True)
    del env["HV"]
    assert blockers(dockur_cpu(host, tmp_path, env), _host_flags(host)) == [HV_PASSTHROUGH]


def _kernel_config() -> str | None:
    """The running kernel's build configuration, where this machine has it."""
    release = os.uname().release
    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{release}")):
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode(errors="replace")
    return None


def _lib_kvm_hyperv(root: str) -> bool:
    done = subprocess.run([BASH, "-c", '. "$0"; kvm_hyperv', str(WORKER / "lib.sh")],
                          capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "OA_VM_ROOT": root})
    return done.returncode == 0


def test_kvm_hyperv_asks_the_hosts_kvm(tmp_path: Path) -> None:
    """``kvm_hyperv`` answers as this machine's kernel was built (``CONFIG_KVM_HYPERV``; kernels
    before 6.8 always emulate Hyper-V), and no for a ``/dev/kvm`` that is not KVM's."""
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "kvm").write_text("")
    assert not _lib_kvm_hyperv(str(tmp_path))
    config = _kernel_config()
    if not Path("/dev/kvm").exists() or config is None or "CONFIG_KVM=" not in config:
        pytest.skip("no KVM here, or its kernel's configuration is not readable")
    built = "CONFIG_KVM_HYPERV=y" in config or "CONFIG_KVM_HYPERV" not in config
    assert _lib_kvm_hyperv("") is built


def test_bootstrap_passes_the_cpu_flags_to_dockur() -> None:
    text = (WORKER / "bootstrap.sh").read_text(encoding="utf-8")
    assert 'cpu+=(-e "$line"); done < <(dockur_cpu_env)' in text
    assert '"${cpu[@]}" -e "DISK_CACHE=$OA_VM_DISK_CACHE"' in text  # docs/performance.md


@pytest.mark.parametrize(("cpu", "blocked"), [
    ("host,migratable=no", True),                     # rule 2: passed through from KVM
    ("host", False),                                  # rule 2: hidden while migratable
    ("host,+invtsc", True),                           # asked for by name
    ("host,+invtsc,-invtsc", False),                  # rule 3
    ("host,-invtsc,+invtsc", False),                  # rule 3: order does not matter
    ("host,invtsc=off,+invtsc", True),                # rule 3: + beats =off
    ("host,+invtsc,tsc-frequency=2900000000", False),  # rule 1
    ("Skylake-Client-v4,+vmx", True),                 # rule 4
    ("host,-vmx,-svm,hv-reenlightenment", True),      # rule 5
    ("host,-vmx,-svm,hv-reenlightenment,hv-passthrough", True),  # rule 6
    ("host,-vmx,-svm,hv_passthrough", True),          # rule 6, dockur's spelling
    ("host,-vmx,-svm,hv-no-nonarch-coresharing=auto", True),
    ("host,-vmx,-svm,hv-no-nonarch-coresharing=on", False),
    ("host,-invtsc,-vmx,-svm,hv-relaxed,hv-time,hv-stimer,hv-synic,hv-vpindex", False),
])
def test_qemus_rules(cpu: str, blocked: bool) -> None:
    host = {"constant_tsc", "nonstop_tsc"}
    assert bool(blockers(cpu, host)) is blocked
