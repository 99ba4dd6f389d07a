"""A kazoo session whose every call is bounded: a timeout per try and a retry policy.

The ZooKeeper metadata store and the ZooKeeper coordinator share this wrapper. Connection
losses and timeouts are retried (exponential backoff, ``max_tries`` tries); what remains is a
:class:`~samza_nb.errors.SamzaNbError` of the caller's choice naming the connect string, never
any secret in it. Answers that mean something (no node, node exists, bad version, not empty)
pass through as kazoo's own exceptions so callers can act on them.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError,
    ConnectionClosedError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import KazooState, KeeperState, ZnodeStat
from kazoo.retry import ForceRetryError, KazooRetry, RetryFailedError

from samza_nb.errors import MetadataStoreError, SamzaNbError
from samza_nb.metadata.zk_session_log import ConnectionStatus, session_logger, zookeeper_log

__all__ = ["ZkClient", "describe_connect", "split_connect"]

T = TypeVar("T")

#: Answers that carry meaning for the caller; they are never retried or wrapped.
_MEANINGFUL = (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError)
_RETRYABLE = (ConnectionLoss, OperationTimeoutError, KazooTimeoutError, SessionExpiredError)


#: How much longer than possible a try (or the pause between two) must take for ZkClient.call
#: to take it for a pause of this process rather than a slow service.
_FROZEN_SLACK_S = 2.0


def describe_connect(connect: str) -> str:
    """The connect string without any ``user:password@`` part (safe for messages and logs).

    >>> describe_connect("alice:s3cret@zk1:2181,zk2:2181/jobs")
    'zk1:2181,zk2:2181/jobs'
    >>> describe_connect("alice:p/a,s@s@zk1:2181")
    'zk1:2181'
    """
    return _split_auth(connect)[1]


def split_connect(connect: str) -> tuple[str, str]:
    """``(hosts, chroot)`` of a connect string; the chroot is ``""`` or starts with ``/``.

    >>> split_connect("127.0.0.1:2181/a/b/")
    ('127.0.0.1:2181', '/a/b')
    """
    hosts, slash, root = connect.partition("/")
    chroot = "/" + root.strip("/") if slash and root.strip("/") else ""
    return hosts, chroot


def _split_auth(connect: str) -> tuple[str | None, str]:
    """``("user:password", the rest)`` when the connect string starts with digest credentials,
    else (None, connect). The credentials end at the last "@": a password may hold any
    character ("/", ",", "@" …), so a chroot may not hold "@"."""
    if "@" not in connect:
        return None, connect
    auth, _, rest = connect.rpartition("@")
    return auth, rest


def _bad_hosts(hosts: str) -> str | None:
    """What is wrong with ``host:port[,host:port]``, or None.

    >>> _bad_hosts("zk1:2181,zk2")
    >>> _bad_hosts("foo:bar")
    "port 'bar' of 'foo:bar' is not a number from 1 to 65535"
    """
    for entry in hosts.split(","):
        host, colon, port = entry.strip().rpartition(":")
        if not colon:
            host, port = entry.strip(), "2181"
        if not host:
            return f"{entry.strip()!r} names no host"
        if not port.isdigit() or not 0 < int(port) < 65536:
            return f"port {port!r} of {entry.strip()!r} is not a number from 1 to 65535"
    return None


class ZkClient:
    """One ZooKeeper session (started on construction) with bounded, retried calls.

    ``connect`` is ``[user:password@]host:port[,host:port][/chroot]``; credentials become digest
    auth and never appear in messages.

    ``session_timeout`` and ``connection_timeout`` are seconds; ``max_tries`` bounds the tries
    of every call, each try waiting ``call_timeout`` seconds at most (default: the session
    timeout). ``error`` is the exception type raised when the service cannot be used.
    """

    def __init__(
        self,
        connect: str,
        *,
        session_timeout: float = 30.0,
        connection_timeout: float = 60.0,
        max_tries: int = 5,
        call_timeout: float | None = None,
        error: type[SamzaNbError] = MetadataStoreError,
    ) -> None:
        if not isinstance(connect, str) or not connect.strip():
            msg = f"a ZooKeeper connect string (host:port[/chroot]) is required, got {connect!r}"
            raise error(msg)
        self.connect = connect
        self.description = describe_connect(connect)
        self.error = error
        self.session_timeout = float(session_timeout)
        self.max_tries = max(1, int(max_tries))
        self.call_timeout = float(call_timeout or max(session_timeout, 1.0))
        auth, without_auth = _split_auth(connect)
        hosts, self.chroot = split_connect(without_auth)
        problem = _bad_hosts(hosts)
        if problem:
            msg = (
                f"ZooKeeper connect string {self.description!r} (job.coordinator.zk.connect): "
                f"{problem}; write host:port[,host:port][/chroot]"
            )
            raise error(msg)
        status = ConnectionStatus(self.description, self.session_timeout)
        self.kazoo = KazooClient(
            hosts=hosts + self.chroot,
            timeout=self.session_timeout,
            auth_data=[("digest", auth)] if auth else None,
            # The session reconnects until it expires; calls (recipes included) are bounded.
            connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
            command_retry={"max_tries": self.max_tries, "delay": 0.1, "backoff": 2, "max_delay": 2.0},
            logger=session_logger(status),
        )
        self.kazoo.add_listener(status.on_state)
        self._lifecycle = threading.Lock()
        self.kazoo.add_listener(self._on_state)
        try:
            with warnings.catch_warnings():
                # kazoo warns of a missing chroot on stderr; the error below says what to do.
                warnings.filterwarnings("ignore", message="No chroot path exists")
                self.kazoo.start(timeout=connection_timeout)
        except (KazooTimeoutError, KazooException) as exc:
            self._stop_quietly()
            msg = (
                f"ZooKeeper {self.description} is unreachable: no session within "
                f"{connection_timeout:g} s ({type(exc).__name__})"
            )
            raise error(msg) from exc
        if self.chroot and self.exists("/") is None:
            self._stop_quietly()
            msg = (
                f"ZooKeeper {self.description}: the chroot {self.chroot!r} does not exist on "
                f"{hosts}; create it first, for example with kazoo: python -c \"from "
                f"kazoo.client import KazooClient as K; k = K('{hosts}'); k.start(); "
                f"k.ensure_path('{self.chroot}'); k.stop()\""
            )
            raise error(msg)
        self._closed = False
        self._closed_because: BaseException | None = None

    def __repr__(self) -> str:
        return f"ZkClient({self.description!r})"

    # -- bounded calls -------------------------------------------------------------------------
    def call(self, what: str, attempt: Callable[[], T]) -> T:
        """Run ``attempt`` with the retry policy; ``what`` names the operation in errors. Its
        tries end after twice the call timeout in all (else a service gone away would hold a
        caller for ``max_tries`` full timeouts: minutes, past the session timeout).

        The deadline is wall-clock time, so a process frozen (SIGSTOP, a long pause) while a
        call was in flight would find it spent on resuming, before its session came back.
        When a try, or the pause between two, took far longer than it can in a running
        process, the call gets one more full round of tries."""
        max_delay = 2.0
        frozen = False
        last = time.monotonic()

        def once() -> T:
            nonlocal frozen, last
            began = time.monotonic()
            frozen = frozen or began - last > max_delay + _FROZEN_SLACK_S
            try:
                return attempt()
            except KazooTimeoutError as exc:
                raise ForceRetryError(str(exc)) from exc
            except ConnectionClosedError as exc:
                if self._stopped_on_purpose():
                    if self._closed_because is not None:
                        # The owner closed this client because of a failure: that failure is
                        # why this call cannot run, and the error says so.
                        msg = f"ZooKeeper {self.description}: {what} failed: the client was closed: {self._closed_because}"
                        raise self.error(msg) from self._closed_because
                    raise
                # kazoo's connection loop ended on its own and is being started again
                # (_on_state): a try like any other.
                raise ForceRetryError(str(exc)) from exc
            finally:
                last = time.monotonic()
                frozen = frozen or last - began > self.call_timeout + _FROZEN_SLACK_S

        rounds = 0
        while True:
            rounds += 1
            retry = KazooRetry(
                max_tries=self.max_tries,
                delay=0.1,
                backoff=2,
                max_delay=max_delay,
                ignore_expire=True,
                deadline=2 * self.call_timeout,
            )
            last = time.monotonic()
            try:
                return retry(once)
            except _MEANINGFUL:
                raise
            except RetryFailedError as exc:
                if frozen and rounds == 1:
                    zookeeper_log.info("ZooKeeper %s: %s: this process was paused mid-call; trying again", self.description, what)
                    frozen = False
                    continue
                msg = (
                    f"ZooKeeper {self.description}: {what} failed after at most {self.max_tries} "
                    f"tries in {2 * self.call_timeout:g} s (the service is unreachable or the "
                    f"session is lost)"
                )
                raise self.error(msg) from exc
            except (KazooException, *_RETRYABLE) as exc:
                msg = f"ZooKeeper {self.description}: {what} failed: {type(exc).__name__} {exc}"
                raise self.error(msg) from exc

    def _wait(self, result: Any) -> Any:
        return result.get(timeout=self.call_timeout)

    def get(self, path: str, watch: Callable[..., Any] | None = None) -> tuple[bytes, ZnodeStat] | None:
        """``(data, stat)`` of ``path``, or None when it does not exist."""
        try:
            data, stat = self.call(
                f"get {path}", lambda: self._wait(self.kazoo.get_async(path, watch))
            )
        except NoNodeError:
            return None
        return bytes(data or b""), stat

    def exists(self, path: str, watch: Callable[..., Any] | None = None) -> ZnodeStat | None:
        return self.call(f"exists {path}", lambda: self._wait(self.kazoo.exists_async(path, watch)))

    def children(self, path: str, watch: Callable[..., Any] | None = None) -> list[str] | None:
        """The child names of ``path``, or None when it does not exist."""
        try:
            return list(
                self.call(
                    f"list {path}",
                    lambda: self._wait(self.kazoo.get_children_async(path, watch)),
                )
            )
        except NoNodeError:
            return None

    def create(
        self,
        path: str,
        value: bytes = b"",
        *,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
    ) -> str:
        """Create ``path``; returns the created path (with its sequence number)."""
        return self.call(
            f"create {path}",
            lambda: self._wait(
                self.kazoo.create_async(
                    path, value, ephemeral=ephemeral, sequence=sequence, makepath=makepath
                )
            ),
        )

    def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        return self.call(
            f"set {path}", lambda: self._wait(self.kazoo.set_async(path, value, version))
        )

    def put(self, path: str, value: bytes) -> None:
        """Set ``path`` to ``value``, creating it (and its parents) when missing."""
        try:
            self.set(path, value)
        except NoNodeError:
            try:
                self.create(path, value, makepath=True)
            except NodeExistsError:
                self.set(path, value)

    def ensure(self, path: str, value: bytes = b"") -> None:
        """Create ``path`` (and its parents) unless it exists."""
        if self.exists(path) is None:
            try:
                self.create(path, value, makepath=True)
            except NodeExistsError:
                pass

    def delete(self, path: str, version: int = -1) -> bool:
        """Delete one node; False when it was already gone."""
        try:
            self.call(f"delete {path}", lambda: self._wait(self.kazoo.delete_async(path, version)))
        except NoNodeError:
            return False
        return True

    def delete_tree(self, path: str) -> None:
        """Delete ``path`` and everything under it (missing nodes are fine)."""
        for _ in range(10):
            for child in self.children(path) or []:
                self.delete_tree(f"{path.rstrip('/')}/{child}")
            try:
                self.delete(path)
                return
            except NotEmptyError:
                continue  # a child appeared meanwhile; delete it too
        msg = f"ZooKeeper {self.description}: {path} keeps getting new children; not deleted"
        raise self.error(msg)

    def commit(
        self, what: str, build: Callable[[Any], object], *, raise_first: bool = True
    ) -> list[Any]:
        """Run a transaction built by ``build(tx)``; raises the first failed operation's error
        (or, with ``raise_first=False``, returns every operation's result, errors included).

        The transaction is rebuilt on every try, so retries never reuse a committed one.
        """

        def attempt() -> list[Any]:
            tx = self.kazoo.transaction()
            build(tx)
            return list(self._wait(tx.commit_async()))

        results = self.call(what, attempt)
        if not raise_first:
            return results
        for result in results:
            if isinstance(result, Exception) and not type(result).__name__ == "RolledBackError":
                raise result
        return results

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def session_id(self) -> int | None:
        """The id of the live session, or None when not connected."""
        if not self.kazoo.connected:
            return None
        return int(self.kazoo.client_id[0]) if self.kazoo.client_id else None

    def _on_state(self, state: str) -> None:
        """kazoo's listener, on its connection thread. A session LOST with kazoo's client
        CLOSED while this client is open is kazoo's connection loop that ended on its own: an
        unexpected error inside it (kazoo issue #254, "xids do not match", after a server
        restart) ends the loop, and kazoo never connects again by itself; every call would
        fail with ConnectionClosedError. Start it again, from a thread of its own: a new
        session, as after an expiry (the coordinator's new-session path takes it from there).
        An expired session is LOST with the client still connecting: kazoo reconnects."""
        if state != KazooState.LOST or self.kazoo.client_state != KeeperState.CLOSED:
            return
        if not hasattr(self, "_closed") or self._stopped_on_purpose():  # still starting, or closed
            return
        threading.Thread(target=self._start_loop_again, name="zk-loop-restart", daemon=True).start()

    def _stopped_on_purpose(self) -> bool:
        """Whether this client was closed or kazoo's ``stop()`` was called (kazoo sets its
        ``_stopped`` event only then): a loop that ended so stays ended."""
        return bool(getattr(self, "_closed", False)) or self.kazoo._stopped.is_set()

    def _start_loop_again(self) -> None:
        with self._lifecycle:
            if self._stopped_on_purpose() or self.kazoo.client_state != KeeperState.CLOSED:
                return
            zookeeper_log.warning(
                "ZooKeeper %s: the client's connection loop ended on its own; connecting again "
                "with a new session", self.description,
            )
            try:
                self.kazoo.start_async()
            except Exception as exc:  # noqa: BLE001 - calls fail then with a clear error
                zookeeper_log.warning(
                    "ZooKeeper %s: could not connect again: %s %s", self.description, type(exc).__name__, exc
                )

    def _stop_quietly(self) -> None:
        try:
            self.kazoo.stop()
            self.kazoo.close()
        except Exception:  # noqa: BLE001 - closing a session that never opened is best effort
            pass

    def close(self, *, because: BaseException | None = None) -> None:
        """End the session at once (its ephemeral nodes disappear); idempotent.

        ``because``: the failure that made the owner close this client (a coordinator that
        lost ZooKeeper). Calls still in flight, or made afterwards, fail with an error that
        names it, not with a bare "connection closed" that would pass for the cause."""
        if getattr(self, "_closed", True):
            return
        with self._lifecycle:  # not while _start_loop_again starts the loop
            if self._closed:
                return
            self._closed_because = because
            self._closed = True
        self._stop_quietly()
