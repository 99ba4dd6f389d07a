"""What runs inside a Spark Python worker: one task's epoch over its inputs, through its fused
operators, windows and joins, with its stores, control messages and exactly-once commits.

Nothing here runs only on the driver; the driver reaches it through
:mod:`samza_nb.runtime.executors`.
"""
