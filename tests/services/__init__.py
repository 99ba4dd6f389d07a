"""Tests of the engine-room services (a package, so names like test_zookeeper.py stay unique)."""
