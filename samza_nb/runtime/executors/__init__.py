"""The transport between the driver and the workers: the executor that runs task epochs on
Spark (resident workers, one Spark job per epoch on a cluster) or in process, and the Spark
session itself."""
