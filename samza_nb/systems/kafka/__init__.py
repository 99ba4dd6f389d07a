"""Kafka as a stream system: KafkaSystem (confluent-kafka), its clients, offsets, reads,
transactions, deduplication and outage handling. Client settings shared with the Kafka metadata
store live in ``samza_nb.kafka_settings`` (the metadata layer sits below this one)."""

from samza_nb.systems.kafka.system import KafkaSystem

__all__ = ["KafkaSystem"]
