"""The driver's loop: a StreamProcessor runs its container's task epochs on an executor, commits
their checkpoints, keeps standbys warm, and compacts and trims what its tasks no longer need."""
