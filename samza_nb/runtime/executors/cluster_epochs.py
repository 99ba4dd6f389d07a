"""An epoch on a Spark cluster: each task epoch runs on its host, where its stores are.

With a master whose executors may sit on other hosts (runtime/executors/masters.py), the executor asks
:class:`~samza_nb.runtime.executors.host_placement.HostPlacement` for each task's host and runs the epoch
as one Spark job with one partition per group of a host's tasks, each partition preferring its
host (Spark's locality: an RDD made with ``makeRDD`` and location preferences, waited for up to
``spark.locality.wait``). PySpark has no call for preferred locations, so the RDD is made in the
JVM: its elements are the partitions' slot numbers as strings, which Python reads as text, the
way ``textFile`` gives its lines. Each partition returns the host it ran on: when Spark ran it
elsewhere (its host was busy past the wait, or died and the partition ran again), the task's
stores are now there.
"""

from __future__ import annotations

import os
import socket
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["executor_hosts", "located_slots", "run_located", "this_host", "wait_for_executors"]

#: How long the first epoch waits for the cluster's executors to register, at most.
EXECUTOR_WAIT_S = 30.0


def executor_hosts(context: Any) -> list[str]:
    """The hosts with at least one live executor. Spark lists every block manager, the
    driver's too: one entry at ``spark.driver.host`` is the driver's."""
    jsc = context._jsc.sc()
    keys = jsc.getExecutorMemoryStatus().keys().toList()
    entries = Counter(str(keys.apply(i)).rpartition(":")[0] for i in range(keys.size()))
    entries[str(context.getConf().get("spark.driver.host"))] -= 1
    return sorted(host for host, count in entries.items() if count > 0)


def wait_for_executors(context: Any, timeout: float = EXECUTOR_WAIT_S) -> list[str]:
    """The executor hosts once Spark's scheduler says enough resources registered
    (``spark.scheduler.minRegisteredResourcesRatio`` of ``spark.cores.max``) and at least one
    executor is up, bounded by ``timeout``; whatever registered by then otherwise."""
    deadline = time.monotonic() + timeout
    backend = context._jsc.sc().schedulerBackend()
    while True:
        hosts = executor_hosts(context)
        if (hosts and backend.isReady()) or time.monotonic() >= deadline:
            return hosts
        time.sleep(0.1)


def located_slots(context: Any, hosts: Sequence[str]) -> Any:
    """An RDD of ``len(hosts)`` one-element partitions, partition ``i`` holding ``"i"`` and
    preferring to run on ``hosts[i]``."""
    from pyspark.rdd import RDD
    from pyspark.serializers import UTF8Deserializer

    jvm = context._jvm

    def seq(items: Sequence[Any]) -> Any:
        listed = jvm.java.util.ArrayList()
        for item in items:
            listed.add(item)
        return jvm.scala.jdk.javaapi.CollectionConverters.asScala(listed).toSeq()

    pairs = seq([jvm.scala.Tuple2(str(slot), seq([host])) for slot, host in enumerate(hosts)])
    text = jvm.scala.reflect.ClassTag.apply(jvm.java.lang.Class.forName("java.lang.String"))
    java_rdd = context._jsc.sc().makeRDD(pairs, text).toJavaRDD()
    return RDD(java_rdd, context, UTF8Deserializer())


def this_host() -> str:
    """The host name Spark gives this executor (``SPARK_LOCAL_HOSTNAME``, else
    ``SPARK_LOCAL_IP``, else the machine's name), as its block manager reports it."""
    return (
        os.environ.get("SPARK_LOCAL_HOSTNAME")
        or os.environ.get("SPARK_LOCAL_IP")
        or socket.gethostname()
    )


def run_located(
    context: Any,
    groups: Sequence[tuple[str, list[tuple[int, Any]]]],
    run_one: Callable[[Any], Any],
) -> list[tuple[int, Any, str]]:
    """Run each group's items on its host: ``(index, run_one(item), host it ran on)``."""
    slots = [items for _host, items in groups]

    def run_slot(_split: int, lines: Any) -> Any:
        host = this_host()
        for line in lines:
            for index, item in slots[int(line)]:
                yield index, run_one(item), host

    rdd = located_slots(context, [host for host, _items in groups])
    return list(rdd.mapPartitionsWithIndex(run_slot, True).collect())
