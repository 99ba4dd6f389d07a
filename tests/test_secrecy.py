"""Secrets never show: not in a Config's repr, str or masked(), not in error messages, not in
the plan's JSON (``samza-nb plan --format json``), not in a job model's JSON; and the folders
the embedded metadata store and log create are the owner's alone."""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from samza_nb.api import StreamApplication
from samza_nb.cli import main
from samza_nb.config import KNOWN_KEYS, Config
from samza_nb.errors import ConfigError
from samza_nb.examples.page_views import app as page_views_app
from samza_nb.metadata import EmbeddedMetadataStore
from samza_nb.model import ContainerModel, JobModel, SystemStreamPartition, TaskModel
from samza_nb.secrecy import MASK, is_secret_key, private_dir, redact
from samza_nb.systems import EmbeddedSystem

QUICKSTART = "samza_nb.examples.page_views:app"

# Secrets as they come: base64 keys, hex, passwords with punctuation. No separators of the forms
# they are embedded in (";", "&", quotes, spaces), as no such form can carry them unquoted.
_SECRET = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_.!@#$%^()",
    min_size=8,
    max_size=40,
)

# (key, value with the secret at {s}): secrets found by the key, by the value, or by both.
_FORMS: list[tuple[str, str]] = [
    (
        "systems.kafka.consumer.sasl.jaas.config",
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="app" '
        'password="{s}";',
    ),
    (
        "systems.kafka.producer.extra",  # an innocent key: the JAAS value gives it away
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=u password={s};",
    ),
    (
        "systems.eventhubs.connection.string",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={s}",
    ),
    (
        "systems.eventhubs.streams.extra",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey={s};"
        "EntityPath=e",
    ),
    (
        "systems.azure.account",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net",
    ),
    (
        "systems.blob.endpoint",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={s};EndpointSuffix=core.windows.net",
    ),
    ("systems.blob.sas", "https://acct.blob.core.windows.net/c?sv=2022-11-02&sp=r&sig={s}"),
    ("systems.blob.url", "SharedAccessSignature={s}"),
    ("stores.profile.password", "{s}"),
    ("systems.kafka.consumer.ssl.key.password", "{s}"),
    ("systems.db.url", "postgresql://bob:{s}@db.example.com:5432/x"),
    ("systems.db.options", "user=bob;password={s};timeout=5"),
    ("systems.x.client.secret", "{s}"),
    ("systems.kafka.ssl.key.pem", "-----BEGIN PRIVATE KEY-----\n{s}\n-----END PRIVATE KEY-----"),
    ("systems.x.certificate", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA{s}\n-----END ENCRYPTED PRIVATE KEY-----"),
    ("systems.kafka.ssl.keystore.key", "{s}"),
    ("spark.executorEnv.DB_PASS", "{s}"),
    ("systems.kafka.sasl.oauthbearer.config", "principal=svc clientSecret={s} scope=x"),
    ("job.coordinator.zk.connect", "app:{s}/x,y@127.0.0.1:2181/jobs"),  # digest credentials
    ("systems.kafka.consumer.sasl.username", "{s}"),
]


def _entries(secret: str) -> dict[str, str]:
    return {key: form.format(s=secret) for key, form in _FORMS}


@functools.cache
def _app() -> StreamApplication:
    return page_views_app()


def _job_model(config: Config) -> JobModel:
    task = TaskModel("Partition 0", [SystemStreamPartition("kafka", "in", 0)], 0)
    return JobModel(config, [ContainerModel("0", [task])])


_SHOWN: dict[str, Callable[[Config], str]] = {
    "repr": repr,
    "str": str,
    "masked": lambda config: json.dumps(config.masked()),
    "plan json": lambda config: _app().plan(config).to_json(),
    "job model json": lambda config: _job_model(config).to_json(),
    "job model dict": lambda config: json.dumps(_job_model(config).to_dict()),
}


@pytest.mark.parametrize("shown", sorted(_SHOWN))
@settings(max_examples=40, deadline=None)
@given(secret=_SECRET)
def test_no_secret_is_ever_shown(shown: str, secret: str) -> None:
    # A secret that is part of the surrounding text ("connecti") proves nothing.
    assume(secret not in _SHOWN[shown](Config(_entries("Placeholder0"))))
    config = Config(_entries(secret))
    text = _SHOWN[shown](config)
    assert secret not in text
    assert MASK in text


@settings(max_examples=60, deadline=None)
@given(secret=_SECRET, key=st.sampled_from([key for key, _ in _FORMS]))
def test_every_form_is_masked_on_its_own(secret: str, key: str) -> None:
    form = dict(_FORMS)[key]
    assume(secret not in repr(Config({key: form.format(s="Placeholder0")})))
    config = Config({key: form.format(s=secret)})
    assert secret not in repr(config)
    assert secret not in json.dumps(config.masked())


def test_what_is_not_secret_stays_readable() -> None:
    config = Config(
        {
            "systems.blob.endpoint": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=k3y",
            "stores.counts.key.serde": "json",
            "systems.kafka.consumer.bootstrap.servers": "127.0.0.1:9092",
            "systems.kafka.producer.extra": 'x.PlainLoginModule required username="u" password="p";',
        }
    )
    masked = config.masked()
    assert masked["systems.blob.endpoint"] == (
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={MASK}"
    )
    assert masked["stores.counts.key.serde"] == "json"
    assert masked["systems.kafka.consumer.bootstrap.servers"] == "127.0.0.1:9092"
    assert masked["systems.kafka.producer.extra"] == f"x.PlainLoginModule required {MASK}"
    # A *key* key holding something key-like is masked whole; a short word is not.
    assert Config({"systems.x.api.key": "short"}).masked()["systems.x.api.key"] == MASK
    assert Config({"stores.x.key.id": "Zm9vYmFyYmF6cXV4MTIzNDU2"}).masked()["stores.x.key.id"] == MASK
    assert Config({"stores.x.key.id": "kv7"}).masked()["stores.x.key.id"] == "kv7"


def _messages(secret: str) -> list[str]:
    """The errors of configs that quote a secret value."""
    messages = []
    attempts: list[Callable[[], object]] = [
        # A secret put under a numeric key by mistake (swapped lines).
        lambda: Config({"task.max.epoch.messages": f"password={secret}"}),
        # A malformed properties line.
        lambda: Config.from_properties(f"=AccountKey={secret}\n"),
        lambda: Config({"systems.x.options": f"password={secret}"}, validate=False).get_int(
            "systems.x.options"
        ),
    ]
    for attempt in attempts:
        with pytest.raises(ConfigError) as raised:
            attempt()
        messages.append(str(raised.value))
    messages.append(redact(f"connect failed: Endpoint=sb://h/;SharedAccessKey={secret}"))
    return messages


@settings(max_examples=40, deadline=None)
@given(secret=_SECRET)
def test_error_messages_that_quote_values_mask_them(secret: str) -> None:
    assume(not any(secret in message for message in _messages("Placeholder0")))
    for message in _messages(secret):
        assert secret not in message


def test_plan_json_on_the_command_line_masks_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SAMZA_NB_HOME", str(tmp_path))
    secret = "c2VjcmV0LWtleS0xMjM0NTY="
    properties = tmp_path / "job.properties"
    properties.write_text(
        "systems.kafka.consumer.sasl.jaas.config=org.apache.kafka.common.security.plain."
        f'PlainLoginModule required username="u" password="{secret}";\n'
        f"systems.hub.connection.string=Endpoint=sb://h/;SharedAccessKey={secret}\n",
        encoding="utf-8",
    )
    args = ["plan", QUICKSTART, "--config", str(properties), "--format", "json"]
    args += ["--set", f"systems.other.settings=AccountName=a;AccountKey={secret}"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert secret not in out
    assert json.loads(out)["config"]["systems.hub.connection.string"] == MASK


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_embedded_metadata_store_creates_its_folders_owner_only(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    home = tmp_path / "jobs" / "app-1"
    with EmbeddedMetadataStore(home / "metadata.sqlite3") as store:
        store.put("k", b"v")
    assert _mode(home) == 0o700
    assert _mode(tmp_path / "jobs") == 0o700
    assert _mode(tmp_path) == 0o755  # it existed: left as it was


def test_the_embedded_databases_are_owner_only_even_in_an_open_folder(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    old = os.umask(0o022)
    try:
        with EmbeddedMetadataStore(tmp_path / "metadata.sqlite3") as store:
            store.put("k", b"v")
            files = [tmp_path / "metadata.sqlite3", tmp_path / "metadata.sqlite3-wal"]
            assert {_mode(file) for file in files} == {0o600}
        system = EmbeddedSystem("embedded", path=tmp_path / "log")
        system.create_stream("s", partitions=1)
        system.write("s", [{"a": 1}])
        assert _mode(tmp_path / "log" / "log.sqlite3") == 0o600
        assert _mode(tmp_path / "log" / "log.sqlite3-wal") == 0o600
        system.close()
    finally:
        os.umask(old)


def test_the_embedded_log_creates_its_folder_owner_only(tmp_path: Path) -> None:
    system = EmbeddedSystem("embedded", path=tmp_path / "data" / "embedded")
    system.create_stream("s", partitions=1)
    assert _mode(tmp_path / "data" / "embedded") == 0o700
    assert _mode(tmp_path / "data") == 0o700
    system.close()


def test_private_dir_leaves_existing_folders_alone(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    private_dir(tmp_path / "a" / "b")
    assert _mode(tmp_path) == 0o755
    assert _mode(tmp_path / "a") == 0o700 and _mode(tmp_path / "a" / "b") == 0o700
    old = os.umask(0o000)
    try:
        private_dir(tmp_path / "c")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "c") == 0o700


def test_the_key_table_and_the_secret_rules_agree() -> None:
    for key in KNOWN_KEYS.values():
        assert is_secret_key(key.name) == key.secret, key.name


def test_a_kafka_systems_repr_and_errors_mask_secret_parts_of_options() -> None:
    from samza_nb.systems import KafkaSystem

    config = Config(
        {
            "systems.kafka.bootstrap.servers": "SASL_SSL://app:Hunter2pw@127.0.0.1:9093",
            "systems.kafka.sasl.oauthbearer.config": "principal=svc clientSecret=Oauth2secret scope=x",
            "systems.kafka.ssl.key.pem": "-----BEGIN PRIVATE KEY-----\nMIIEvQPemBody\n-----END PRIVATE KEY-----",
        }
    )
    system = KafkaSystem.from_config("kafka", config)
    for shown in (repr(system), system.where, system.scrub("failed: clientSecret=Oauth2secret via SASL_SSL://app:Hunter2pw@127.0.0.1:9093")):
        for secret in ("Hunter2pw", "Oauth2secret", "MIIEvQPemBody"):
            assert secret not in shown, shown
    assert "principal=svc" in repr(system) and "127.0.0.1:9093" in system.where


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # An account key pasted onto a line of its own reads as a key ending in "=".
        (
            "azure.storage.connect=DefaultEndpointsProtocol=http;AccountName=a;AccountKey=\n"
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
            "Eby8vdM02xNOcqFlqUwJ",
        ),
        ("systems.kafka.consumer.sasl.password =\n   hunter2hunter2hunter2", "hunter2"),
        ("systems.kafka.consumer.sasl.password =\n   abc", "abc"),
        # The rest of a key after a short run: reads as a key whose value starts with "=".
        (
            "azure.storage.connect=DefaultEndpointsProtocol=https;AccountName=a;AccountKey=QUJD\n"
            "xYzQ5SEC==;EndpointSuffix=core.windows.net",
            "xYzQ5SEC",
        ),
    ],
)
def test_a_secret_value_continued_on_a_line_of_its_own_is_never_echoed(text: str, secret: str) -> None:
    from samza_nb.config import parse_properties, properties_config
    from samza_nb.errors import ConfigError

    for parse in (properties_config, parse_properties):
        with pytest.raises(ConfigError) as failure:
            parse(text, source="job.properties")
        message = str(failure.value)
        assert secret not in message
        assert "job.properties:2" in message and "end that line with a backslash" in message


def test_an_unknown_key_after_a_secret_s_line_is_not_echoed() -> None:
    from samza_nb.config import properties_config
    from samza_nb.errors import ConfigError

    with pytest.raises(ConfigError, match="job.properties:2: unknown config key \\(not shown") as failure:
        properties_config("systems.kafka.consumer.sasl.password=abc\nshortsecret=x", source="job.properties")
    assert "shortsecret" not in str(failure.value)


def test_a_key_that_looks_like_a_value_is_not_echoed() -> None:
    from samza_nb.config import Config
    from samza_nb.errors import ConfigError

    with pytest.raises(ConfigError, match="of 35 characters, not shown") as failure:
        Config({"Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUz": "=="})
    assert "Eby8" not in str(failure.value)
    with pytest.raises(ConfigError, match="'task.max.epoch.mesages'; did you mean"):
        Config({"task.max.epoch.mesages": "1"})  # a real key's typo is still shown


def test_the_kafka_client_settings_and_the_azure_account_show_no_secret() -> None:
    from samza_nb.kafka_settings import KafkaClientConfig
    from samza_nb.metadata.azure_storage import AzureAccount

    kafka = KafkaClientConfig.build(
        "127.0.0.1:9092", {"sasl_password": "hunter2", "sasl_username": "bob", "acks": "all"},
        consumer={"sasl.jaas.config": 'x.PlainLoginModule required password="pw2";'},
    )
    shown = repr(kafka)
    assert "hunter2" not in shown and "bob" not in shown and "pw2" not in shown
    assert "127.0.0.1:9092" in shown and "acks='all'" in shown
    account = AzureAccount(
        "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=Eby8vdM02xNOcqF==;"
        "BlobEndpoint=http://127.0.0.1:10000/acct;SharedAccessSignature=sv=1&sig=s1g"
    )
    assert account.fields == {
        "DefaultEndpointsProtocol": "http", "AccountName": "acct", "BlobEndpoint": "http://127.0.0.1:10000/acct"
    }
