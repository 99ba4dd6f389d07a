"""The embedded log: EmbeddedSystem, a SQLite file per stream under one folder, with its
appends, retention and compaction, and notebook helpers."""

from samza_nb.systems.embedded.system import EmbeddedSystem, default_data_dir

__all__ = ["EmbeddedSystem", "default_data_dir"]
