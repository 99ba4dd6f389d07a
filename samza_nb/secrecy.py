"""Keeping secrets: what counts as one, how it is masked wherever text is shown, and folders
that only their owner can enter.

A value is secret when its *key* says so (``*.password``, ``*.secret``, ``sasl.jaas.config``,
``*.connection.string``, ``azure.storage.connect`` …, or a ``*key*`` whose value looks like a
key), and parts of any text are secret when the *value* says so, whatever the key: a PEM
private key, ``password=``,
``AccountKey=``, ``SharedAccessKey=``, ``SharedAccessSignature=``/``sig=``, the options of a JAAS
``LoginModule``, the password of a ``scheme://user:password@host`` URL; and the credentials of
a ZooKeeper connect string (``job.coordinator.zk.connect=user:password@host:port``). Both rules apply
everywhere text about a config is shown: ``repr(Config)``, ``Config.masked()``, error messages,
the plan's JSON and a job model's JSON.

Files beside secrets (RocksDB's files) follow the umask, so the folder is the guard:
:func:`private_dir` creates job homes, metadata and log folders with mode 0700. SQLite gives its
``-wal`` and ``-shm`` files the mode of the database file, which :func:`private_file` creates
0600, so a database stays private even in a folder that was already open to others.

Like :mod:`samza_nb.errors` this module imports nothing of samza_nb, so every layer may use it.

>>> mask_value("systems.kafka.sasl.jaas.config", "anything")
'********'
>>> mask_value("job.coordinator.zk.connect", "alice:pa/ss@zk1:2181/jobs")
'********@zk1:2181/jobs'
>>> mask_value("systems.eh.consumer.extra", "Endpoint=sb://x/;SharedAccessKey=abc123;EntityPath=e")
'Endpoint=sb://x/;SharedAccessKey=********;EntityPath=e'
>>> redact('bad line "url=https://bob:hunter2@host/x"')
'bad line "url=https://bob:********@host/x"'
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "MASK",
    "is_secret_key",
    "looks_like_a_value",
    "secret_exposed",
    "mask_config",
    "mask_value",
    "private_dir",
    "private_file",
    "redact",
]

MASK = "********"

# Words that make a key secret wherever they appear in it.
_SECRET_KEY_WORDS = (
    "password",
    "passwd",
    "secret",
    "credential",
    "jaas",
    "account.key",
    "accountkey",
    "access.key",
    "sas.token",
    "sas.key",
    "connect.string",
    "connection.string",
    "connectionstring",
    "private",
    "key.pem",
    "keystore.key",
    "passphrase",
    "api.key",
    "apikey",
    "token",
    "sasl.username",
)
_SECRET_KEYS = frozenset({"azure.storage.connect"})
# Keys whose value is ``[user:password@]host:port[,host:port][/chroot]``: the credentials (up
# to the last "@") are masked, the hosts shown.
_HOSTS_WITH_CREDENTIALS_KEYS = ("zk.connect", "zookeeper.connect")
# Parts of a key (between ".", "_" and "-") that make it secret: ``DB_PASS``, ``db.pwd``.
_SECRET_KEY_PARTS = frozenset({"pass", "pwd", "pw"})
_KEY_PARTS = re.compile(r"[._-]")
# A value that looks like a key: one run of base64/hex-like characters, long enough to be one.
_KEY_LIKE = re.compile(r"[A-Za-z0-9+/_=-]{16,}")

_QUOTED_OR_BARE = r"(\"[^\"]*\"?|'[^']*'?|[^;&,\s\"']*)"
_VALUE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys (``ssl.key.pem``, a key pasted anywhere), from BEGIN to END.
    (
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL),
        MASK,
    ),
    # JAAS: everything after the control flag is options (usernames, passwords, key tabs).
    (
        re.compile(
            r"(LoginModule\s+(?:required|requisite|sufficient|optional))\b.*", re.IGNORECASE | re.DOTALL
        ),
        rf"\1 {MASK}",
    ),
    # key=value pairs of connection strings, SAS tokens, URLs and property lines.
    (
        re.compile(
            r"((?<![A-Za-z0-9_])(?:password|passwd|pwd|AccountKey|SharedAccessKey|"
            r"SharedAccessSignature|sig|AccessKey|ClientSecret|secret|api[_.-]?key|token)"
            rf"\s*[=:]\s*){_QUOTED_OR_BARE}",
            re.IGNORECASE,
        ),
        rf"\1{MASK}",
    ),
    # scheme://user:password@host (up to the last "@": a password may hold "/" or "@").
    (re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):(\S+)@"), rf"\1:{MASK}@"),
)


def secret_exposed(key: str, value: str, where: str) -> str | None:
    """The warning to print when a setting given where others can read it (``where``: "on a
    command line any user of this machine can read (ps)", "in this notebook's text") holds a
    secret; None when it holds none. The value itself is never in it."""
    if mask_value(key, value) == value:
        return None
    return (
        f"warning: {key} holds a secret, {where}: keep it in the environment "
        "($SAMZA_NB_AZURE_CONNECTION_STRING, $SAMZA_NB_KAFKA_CONFIG_FILE) or a config file only "
        "you can read"
    )


def looks_like_a_value(word: str) -> bool:
    """Whether a word read as a config key may be a secret value instead: one that wrapped
    onto a line of its own (a pasted account key) reads as a key. 16 or more base64- or
    hex-like characters and no ``.``, which every real key has."""
    return "." not in word and _KEY_LIKE.fullmatch(word) is not None


def is_secret_key(key: str) -> bool:
    """Whether every value of ``key`` is secret, from its name alone."""
    lowered = key.lower()
    return (
        lowered in _SECRET_KEYS
        or any(word in lowered for word in _SECRET_KEY_WORDS)
        or not _SECRET_KEY_PARTS.isdisjoint(_KEY_PARTS.split(lowered))
    )


def _looks_like_key(value: str) -> bool:
    text = value.strip()
    return (
        _KEY_LIKE.fullmatch(text) is not None
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
    )


def redact(text: str) -> str:
    """``text`` with every secret-looking part (by the value rules above) masked."""
    for pattern, replacement in _VALUE_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def mask_value(key: str, value: str) -> str:
    """The value of ``key`` as it may be shown: masked whole when the key is secret (or a
    ``*key*`` holding something key-like), else with its secret-looking parts masked."""
    if is_secret_key(key) or ("key" in key.lower() and _looks_like_key(value)):
        return MASK
    if "@" in value and key.lower().endswith(_HOSTS_WITH_CREDENTIALS_KEYS):
        return f"{MASK}@{redact(value.rpartition('@')[2])}"
    return redact(value)


def mask_config(entries: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``entries`` that is safe to print, log or store where others can read it."""
    return {key: mask_value(key, value) for key, value in entries.items()}


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and its missing parents with mode 0700 (owner only); folders that
    already exist keep their mode. Returns the path. OSError propagates to the caller, which
    names what the folder is for."""
    folder = Path(path)
    missing = []
    current = folder
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for each in reversed(missing):
        try:
            each.mkdir(mode=0o700)
        except FileExistsError:
            continue  # Another process created it first; its mode is its own.
        # mkdir's mode is filtered by the umask; chmod makes it exactly owner-only.
        os.chmod(each, 0o700)
    return folder


def private_file(path: str | os.PathLike[str]) -> Path:
    """Create the empty file ``path`` with mode 0600 unless it exists (then it is left alone),
    in a folder made by :func:`private_dir`. Returns the path."""
    file = Path(path)
    private_dir(file.parent)
    try:
        os.close(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        pass
    return file
