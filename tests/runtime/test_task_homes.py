"""Which resident worker takes which task epochs (runtime/executors/task_homes.py): a task whose stores a
worker keeps goes to that worker only; tasks no worker keeps spread over the workers up to
their share; a worker keeping more than its share releases the excess; a free worker takes a
chunk worth about a 1 / (2 x workers) of the work left."""

from __future__ import annotations

from samza_nb.runtime.executors.task_homes import TaskHomes, guided_chunk

FOLDERS = [f"/stores/here/Partition {task}" for task in range(4)]
ALL = [0, 1, 2, 3]


def test_tasks_no_worker_keeps_go_to_the_worker_keeping_fewest_up_to_its_share() -> None:
    homes: TaskHomes[str] = TaskHomes()
    assert homes.take(["a", "b"], ALL, FOLDERS, workers=2) == ("a", [0, 1])
    homes.noted(FOLDERS[0], "a", keeps=True)
    homes.noted(FOLDERS[1], "a", keeps=True)
    # a has its share (2 of 4 over 2 workers): b goes first for the others.
    assert homes.take(["a", "b"], [2, 3], FOLDERS, workers=2) == ("b", [2, 3])
    # a alone is free: it runs only its own; the others wait for b.
    assert homes.take(["a"], [0, 1, 2, 3], FOLDERS, workers=2) == ("a", [0, 1])
    homes.noted(FOLDERS[2], "b", keeps=True)
    homes.noted(FOLDERS[3], "b", keeps=True)
    assert homes.take(["a"], [2, 3], FOLDERS, workers=2) is None  # kept by b, busy


def test_a_free_worker_with_its_share_takes_unkept_tasks_rather_than_wait() -> None:
    homes: TaskHomes[str] = TaskHomes()
    for folder in FOLDERS[:2]:
        homes.noted(folder, "a", keeps=True)
    # Three workers counted, one of them gone or slow: nobody free has room, a takes them.
    assert homes.take(["a"], [2, 3], FOLDERS, workers=3) == ("a", [2, 3])


def test_its_own_tasks_come_first_and_a_failed_task_epoch_frees_its_task() -> None:
    homes: TaskHomes[str] = TaskHomes()
    homes.noted(FOLDERS[3], "a", keeps=True)
    assert homes.take(["a"], ALL, FOLDERS, workers=2) == ("a", [3, 0])
    homes.noted(FOLDERS[3], "b", keeps=False)  # not a's word: a still keeps it
    assert homes.keepers() == {FOLDERS[3]: "a"}
    homes.noted(FOLDERS[3], "a", keeps=False)  # a's task epoch failed and closed its stores
    assert len(homes) == 0


def test_a_worker_keeping_more_than_its_share_releases_the_excess() -> None:
    homes: TaskHomes[str] = TaskHomes()
    for folder in FOLDERS[:3]:
        homes.noted(folder, "a", keeps=True)
    homes.noted(FOLDERS[3], "b", keeps=True)
    assert homes.excess(["a", "b"], FOLDERS, workers=2) == [("a", [FOLDERS[2]])]
    assert homes.excess(["b"], FOLDERS, workers=2) == []  # a is busy: asked next epoch
    homes.released([FOLDERS[2]])
    assert homes.excess(["a", "b"], FOLDERS, workers=2) == []
    assert homes.take(["a", "b"], [2], FOLDERS, workers=2) == ("b", [2])


def test_a_worker_takes_task_epochs_up_to_a_share_of_the_work_left_and_at_least_one() -> None:
    # 64 task epochs that read nothing, 2 workers: 16 per hand-out, not 64 round trips.
    assert guided_chunk(list(range(64)), [1] * 64, left=64, workers=2) == list(range(16))
    # The share is 40 / 4 = 10: the first two of size 5, then the third would pass it.
    assert guided_chunk([0, 1, 2, 3], [5, 5, 5, 5], left=40, workers=2) == [0, 1]
    # A task epoch larger than the share still goes, alone.
    assert guided_chunk([0, 1, 2], [100, 1, 1], left=102, workers=2) == [0]
    # In the order given (the eligible ones), not by index.
    assert guided_chunk([3, 1], [9, 2, 9, 2], left=22, workers=1) == [3, 1]
