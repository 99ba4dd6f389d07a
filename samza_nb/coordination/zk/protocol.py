"""The protocol version node: the root's data (SAMZA.md §8.1, Samza's ZkUtils).

A root without data gets ``"1.0"``; any other value means processors of another coordinator
version share the tree, which must not be joined.
"""

from __future__ import annotations

from kazoo.exceptions import BadVersionError

from samza_nb.coordination.zk.keys import ZkKeyBuilder
from samza_nb.errors import CoordinationError
from samza_nb.metadata.zk_client import ZkClient

__all__ = ["ZK_PROTOCOL_VERSION", "validate_protocol_version"]

ZK_PROTOCOL_VERSION = "1.0"


def validate_protocol_version(zk: ZkClient, keys: ZkKeyBuilder) -> None:
    """Create the root with the protocol version, or check the version it has."""
    for _ in range(5):
        zk.ensure(keys.root, ZK_PROTOCOL_VERSION.encode())
        found = zk.get(keys.root)
        if found is None:
            continue
        data, stat = found
        text = data.decode("utf-8", "replace")
        if text == ZK_PROTOCOL_VERSION:
            return
        if text == "":
            try:
                zk.set(keys.root, ZK_PROTOCOL_VERSION.encode(), version=stat.version)
                return
            except BadVersionError:
                continue
        msg = (
            f"ZK protocol mismatch at {keys.root} on {zk.description}: the tree has version "
            f"{text!r}, this coordinator speaks {ZK_PROTOCOL_VERSION!r}"
        )
        raise CoordinationError(msg)
    msg = f"ZooKeeper {zk.description}: {keys.root} kept changing while checking its protocol version"
    raise CoordinationError(msg)
