"""Linux network and mount namespaces for the simulated cluster: a bridge, one netns per host.

The root namespace gets a bridge (``snb-br0``, ``10.213.0.1/24``) that the project creates and
owns. Each simulated host is a network namespace ``snb-<host>`` joined to the bridge by a veth
pair (``snb-<host>`` on the root side, ``eth0`` inside) with its own address on the subnet.
A command runs on a host through ``ip netns exec`` (its network) and ``unshare --mount`` (a
private mount namespace) with the host's private folder bind-mounted over one shared path, so
every host sees its own contents at the same path. Everything here needs root and ``ip``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from samza_nb.errors import ServiceError

__all__ = [
    "BRIDGE",
    "BRIDGE_ADDRESS",
    "PREFIX",
    "SUBNET",
    "create_bridge",
    "create_host",
    "delete_bridge",
    "delete_host",
    "host_address",
    "host_command",
    "kill_netns",
    "netns_names",
    "netns_pids",
    "require_namespaces",
]

PREFIX = "snb-"
BRIDGE = "snb-br0"
SUBNET = "10.213.0.0/24"
BRIDGE_ADDRESS = "10.213.0.1"
_PREFIX_LENGTH = 24
# Host n gets 10.213.0.(10+n): .2-.9 stay free for anything the project may add to the bridge.
_FIRST_HOST_OCTET = 10
_IP_TIMEOUT = 20.0
_SERVICE = "cluster"


def host_address(index: int) -> str:
    """The address of host ``index`` (1-based) on the cluster subnet."""
    octet = _FIRST_HOST_OCTET + index
    if not 1 <= index or octet > 254:
        msg = f"cluster host index {index} is outside 1..{254 - _FIRST_HOST_OCTET}"
        raise ServiceError(msg, service=_SERVICE)
    return f"10.213.0.{octet}"


def _tool(name: str) -> str:
    path = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if path is None:
        msg = (
            f"cluster: `{name}` was not found; the simulated cluster needs iproute2 and "
            "util-linux (apt-get install iproute2 util-linux), or use `samza-nb services up "
            "spark` for a standalone cluster on 127.0.0.1 without namespaces"
        )
        raise ServiceError(msg, service=_SERVICE)
    return path


def require_namespaces() -> None:
    """Fail with a clear error where namespaces cannot be made (not root, no ``ip``/``unshare``)."""
    if os.geteuid() != 0:
        msg = (
            "cluster: creating network and mount namespaces needs root (it runs as root in CI); "
            "run `sudo samza-nb services up cluster`, or use `samza-nb services up spark` for a "
            "standalone cluster on 127.0.0.1 without namespaces"
        )
        raise ServiceError(msg, service=_SERVICE)
    for name in ("ip", "unshare", "mount"):
        _tool(name)


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = [_tool("ip"), *args]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=_IP_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as error:
        msg = f"cluster: `{' '.join(argv)}` did not finish within {_IP_TIMEOUT:g} s"
        raise ServiceError(msg, service=_SERVICE) from error
    if check and done.returncode != 0:
        msg = f"cluster: `{' '.join(argv)}` failed (exit {done.returncode}): {done.stderr.strip()}"
        raise ServiceError(msg, service=_SERVICE)
    return done


def _link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()


def netns_names() -> list[str]:
    """The network namespaces of this project (named ``snb-…``) that exist now; none where
    there is no ``ip`` (nothing can have been made there)."""
    if shutil.which("ip") is None and shutil.which("ip", path="/usr/sbin:/sbin") is None:
        return []
    done = _ip("netns", "list", check=False)
    names = (line.split()[0] for line in done.stdout.splitlines() if line.strip())
    return [name for name in names if name.startswith(PREFIX)]


def create_bridge() -> None:
    """The root-side bridge with the project's address; kept when it already exists."""
    if not _link_exists(BRIDGE):
        _ip("link", "add", BRIDGE, "type", "bridge")
    addresses = _ip("-o", "-4", "addr", "show", "dev", BRIDGE).stdout
    if f" {BRIDGE_ADDRESS}/" not in addresses:
        _ip("addr", "add", f"{BRIDGE_ADDRESS}/{_PREFIX_LENGTH}", "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")


def delete_bridge() -> None:
    if _link_exists(BRIDGE):
        _ip("link", "delete", BRIDGE, check=False)


def create_host(netns: str, address: str) -> None:
    """Network namespace ``netns`` with ``eth0`` at ``address`` on the bridge (fresh each time)."""
    delete_host(netns)
    _ip("netns", "add", netns)
    # The root-side end is named after the namespace so teardown finds it by name.
    _ip("link", "add", netns, "type", "veth", "peer", "name", "eth0", "netns", netns)
    _ip("link", "set", netns, "master", BRIDGE)
    _ip("link", "set", netns, "up")
    _ip("-n", netns, "link", "set", "lo", "up")
    _ip("-n", netns, "addr", "add", f"{address}/{_PREFIX_LENGTH}", "dev", "eth0")
    _ip("-n", netns, "link", "set", "eth0", "up")
    _ip("-n", netns, "route", "add", "default", "via", BRIDGE_ADDRESS)


def netns_pids(netns: str) -> list[int]:
    """Every process whose network namespace is ``netns``."""
    done = _ip("netns", "pids", netns, check=False)
    return [int(word) for word in done.stdout.split() if word.isdigit()]


def kill_netns(netns: str) -> list[int]:
    """SIGKILL every process in ``netns`` (all of them were started by the project)."""
    pids = netns_pids(netns)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    return pids


def delete_host(netns: str) -> None:
    """Kill the host's processes and remove its namespace and veth; nothing when absent."""
    if netns in netns_names():
        kill_netns(netns)
        _ip("netns", "delete", netns)
    # Deleting the namespace deletes its veth end and with it the peer; a leftover of a failed
    # create (veth made, namespace not) is removed by name.
    if _link_exists(netns):
        _ip("link", "delete", netns, check=False)


def host_command(netns: str, disk: Path, mount_point: Path, argv: Sequence[str]) -> list[str]:
    """``argv`` run inside ``netns`` in a private mount namespace where ``disk`` is mounted at
    ``mount_point``. Each layer execs the next, so the returned command's pid is argv's."""
    script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
    return [
        _tool("ip"), "netns", "exec", netns,
        _tool("unshare"), "--mount", "--propagation", "private",
        "sh", "-c", script, "sh", str(disk), str(mount_point), *argv,
    ]  # fmt: skip
