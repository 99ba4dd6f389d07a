"""The engine: processors run epochs of tasks on Spark (see DESIGN.md, "Execution model").

It is split along the process seam:

- :mod:`samza_nb.runtime.task`: what runs inside a Spark Python worker: a task epoch, its
  operators, windows, joins, control messages, stores and exactly-once commits;
- :mod:`samza_nb.runtime.executors`: the transport: the executor that ships task epochs to
  Spark (or runs them in process), resident workers, the Spark session;
- :mod:`samza_nb.runtime.processor`: the driver's loop: a processor runs its tasks' epochs,
  commits checkpoints, keeps standbys warm, compacts and trims.

The modules here are the contract between them: an epoch's input and result
(:mod:`~samza_nb.runtime.epoch`), checkpoints and the checkpoint topic, offsets, the streams'
systems and the named fault points. The Job that runs processors is :mod:`samza_nb.job`.
"""
