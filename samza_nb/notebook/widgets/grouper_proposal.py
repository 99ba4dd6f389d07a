"""What applying a GrouperExplorer's draft would give: the proposal, computed with the public
grouping API exactly the way Apply changes the job (one regroup of the draft's processors with
the current model as history), its standbys, the moves, the balance and the checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from samza_nb.grouping import (
    Balance,
    GrouperMetadata,
    HostAffinityGrouper,
    Move,
    add_standby_containers,
    assign_with_standbys,
    balance,
    check_standby_invariants,
    min_moves,
    moved_tasks,
)
from samza_nb.model import JobModel, TaskMode
from samza_nb.notebook.widgets.grouper_inputs import group

if TYPE_CHECKING:
    from samza_nb.job.handle import Job

__all__ = ["Proposal", "propose"]


class Proposal(NamedTuple):
    """``active``: the grouper's model of the active tasks; ``model``: with standbys when the
    replication factor is above 1; ``moves``: active tasks changing processor; ``balance`` of
    active tasks (idle live processors count, with zero); ``lower_bound``: the fewest moves any
    balanced assignment needs; ``violations``: broken standby invariants (empty when fine)."""

    active: JobModel
    model: JobModel
    moves: list[Move]
    balance: Balance
    lower_bound: int
    violations: list[str]


def propose(
    current: JobModel,
    draft: Mapping[str, str],
    grouper: str,
    *,
    replication_factor: int,
    check_location: bool,
    job: Job | None,
    options: Mapping[str, Any],
) -> Proposal:
    """The proposal for the draft's processors (id → location) grouped with ``grouper``.

    With a job, the job's coordinator computes it, standbys included, so Apply runs exactly
    this model. Without one, standbys are a preview: placed the SEP's standalone way with
    ``host-affinity``, else Samza's YARN way (one container per replica)."""
    config = current.config
    tasks = list(current.active_tasks().values())
    # Apply moves the job to the draft in one regroup, so the proposal is one grouping.
    live = dict(draft)
    if job is not None:
        model = job.propose(live, grouper, replication_factor=replication_factor, **options)
    else:
        model = group(grouper, tasks, current, live, config, options)
    if replication_factor == 1 or job is not None:
        proposal = model
    elif grouper == HostAffinityGrouper.name:
        containers = assign_with_standbys(
            tasks,
            GrouperMetadata.from_job_model(model, live),
            replication_factor,
            check_location=check_location,
        )
        proposal = JobModel(config, containers)
    else:
        proposal = JobModel(config, add_standby_containers(model.containers.values(), replication_factor))
    counts = dict(balance(model).counts)
    return Proposal(
        active=model,
        model=proposal,
        moves=moved_tasks(current, proposal),
        balance=Balance({**dict.fromkeys(live, 0), **counts}),
        lower_bound=min_moves(
            current.task_to_processor(mode=TaskMode.ACTIVE), live, [t.name for t in tasks]
        ),
        violations=check_standby_invariants(
            proposal, live, replication_factor=replication_factor, check_location=check_location
        ),
    )
