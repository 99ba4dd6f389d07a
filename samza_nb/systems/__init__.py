"""Stream systems: the embedded log (default) and Kafka; descriptors and partitioning."""

from samza_nb.systems.base import MessageKind, Record, StreamSystem
from samza_nb.systems.descriptors import InputDescriptor, OutputDescriptor, StreamDescriptor
from samza_nb.systems.embedded import EmbeddedSystem, default_data_dir
from samza_nb.systems.kafka import KafkaSystem
from samza_nb.systems.partitioning import java_string_hash, murmur2, partition_for_key

__all__ = [
    "EmbeddedSystem",
    "InputDescriptor",
    "KafkaSystem",
    "MessageKind",
    "OutputDescriptor",
    "Record",
    "StreamDescriptor",
    "StreamSystem",
    "default_data_dir",
    "java_string_hash",
    "murmur2",
    "partition_for_key",
]
