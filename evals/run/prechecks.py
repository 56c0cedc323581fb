"""Everything about a run that can be checked before anything is made for it.

A sweep creates a pool (on a cloud: minutes and money) and a run writes a folder; an input that
was always going to be refused must be refused first, in one line, with nothing created: the
folders that will be written, the run folder against ``--resume`` (every setting it recorded,
:mod:`evals.run.settings`), the agent (built once), an ``http`` agent's server (one probe),
the variations file and the tasks themselves where their catalog is known before the pool
exists (a local pool's; a cloud pool's when its prepared image recorded WAA's).
Only then do the plan, the question and the pool come.

What they built and asked (the agent, the answer of its server) is handed to the run
(:class:`evals.agents.AgentFactory`), which builds and asks nothing twice; a Python caller's run,
which has no command to check first, checks the same itself. These checks read, and try a write
only as an empty folder made and removed at once.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import oa_vm
from evals.errors import InvalidRunInputError
from oa_vm.errors import InvalidInputError
from oa_vm.kit.validate import writable_problem

if TYPE_CHECKING:
    from evals.agents import AgentFactory, BenchmarkAgent
    from evals.run.runner import Checked, RunConfig
    from oa_vm import PoolSpec


def check_before_run(
    config: RunConfig, *, agent_url_option: str = "--agent-url", needs_home: bool = False,
    plan: bool = False,
) -> Checked | None:
    """Refuse, before any pool, process or folder exists, what the run would refuse later.

    Args:
        config: The run's checked options (:meth:`RunConfig.validate` has run).
        agent_url_option: Where the http agent's URL came from, as refusals name it
            (``--agent-url`` or ``$OA_EVALS_AGENT_URL``).
        needs_home: The command is about to create a pool, so the oa-vm home must be
            writable too.
        plan: Only a plan is asked (``--plan``): the agent's name is checked, but no agent is
            built and no server asked, so a plan needs no secret (a model agent's API key).

    Returns:
        What the run is handed (:class:`evals.run.runner.Checked`: the agents built, the first
        one checked and an ``http`` agent's server probed, the variations read, a resumed
        run's settings checked); ``None`` for a plan.

    Raises:
        InvalidRunInputError: a folder cannot be written, ``--resume`` does not match the run,
            the agent cannot be built, the agent server does not answer, or the variations
            file is unusable (all exit code 2).
        RunExistsError, ResumeMismatchError: see :func:`evals.run.runner.check_run_folder`.
    """
    from evals.run.runner import Checked, build_agents, check_resume_settings, check_run_folder

    check_folders(config, needs_home=needs_home)
    resumed = None
    if config.run_name is not None:
        folder, unstarted, _ = check_run_folder(config)
        resumed = folder if config.resume and not unstarted else None
    agents = None
    if plan:
        from evals.agents import load_agent_class

        load_agent_class(config.agent)
    else:
        agents = build_agents(config, agent_url_option)
    # every recorded setting kept, or changed with --allow-change (evals.run.settings)
    changes = [] if resumed is None or agents is None else check_resume_settings(
        resumed, config, agents.first)
    from evals.tasks import is_cua_selection, is_openapps_selection

    if is_cua_selection(config.selection):
        from evals.tasks.cua_bench import check_selection

        # module files on this machine: refused now, before any pool is touched
        check_selection(config.selection, agent=config.agent)
    from evals.run.variations import expand_ids, read_variations

    variations = read_variations(config.variations) if config.variations else None
    if is_openapps_selection(config.selection):
        from evals.tasks.openapps import load_selection

        # a config file on this machine: every entry checked now, before any pool is touched
        entries = load_selection(config.selection)
        _check_openapps_agent(config, entries, agents)
        if variations is not None:
            expand_ids([e.name for e in entries], variations)
    return None if agents is None else Checked(agents, variations, changes)


def _check_openapps_agent(
    config: RunConfig, entries: list[Any], checked: AgentFactory | None
) -> None:
    """The agent can play the entries (the oracle needs each class's reference solution)."""
    from evals.agents.base import tasks_for_agent

    agent = _agent(config, checked)
    agent.check_tasks(tasks_for_agent(agent, {e.name: e.task_json() for e in entries}))


def check_folders(config: RunConfig, *, needs_home: bool = False) -> None:
    """The results folder (and, for a pool to be made, the oa-vm home) can be written.

    Raises:
        InvalidRunInputError: one of them is under a file, under ``/proc``, read-only...
    """
    from evals.results.records import RESULTS_ENV, results_root

    if config.results_dir is not None:
        option, fix = "--results-dir", "pass --results-dir a folder you can write"
    elif os.environ.get(RESULTS_ENV):
        option = RESULTS_ENV
        fix = f"point {RESULTS_ENV} (or --results-dir) at a folder you can write"
    else:
        option, fix = "the results folder", "pass --results-dir a folder you can write"
    # the folder of runs, not the run's own: a probe inside a live run's folder could be seen
    # by that run as a stranger's file
    problem = writable_problem(option, results_root(config.results_dir), fix)
    if problem is None and needs_home:
        try:
            problem = oa_vm.home_problem()
        except InvalidInputError as exc:
            problem = str(exc)
    if problem:
        raise InvalidRunInputError(problem)


def _agent(config: RunConfig, checked: AgentFactory | None) -> BenchmarkAgent:
    """The agent the checks built, or (for a plan, which builds none) one built now."""
    from evals.agents import create_agent

    if checked is not None and checked.makes(config.agent, config.agent_options):
        return checked.first
    return create_agent(config.agent, config.agent_options)


def check_pool_tasks(config: RunConfig, spec: PoolSpec, checked: Checked | None = None) -> None:
    """The task IDs of a pool about to be made, checked as far as they can be without it: a
    local pool's catalog is here (:func:`check_local_tasks`); a cloud worker's is WAA's, read
    on the worker, and known here when the prepared image the pool starts from recorded it
    (:func:`oa_vm.pool_catalog`): the selection is then resolved against it, as the workers'
    catalog would. Otherwise only what is known of it without it holds now (WAA's suite's
    size, domains and indexes; no synthetic IDs). Tasks that need the simulated desktop
    (:func:`evals.tasks.kinds.check_runs_on`) are refused on a pool of WAA workers.

    Raises:
        waa_client.errors.CatalogError: unknown or synthetic IDs (all listed; exit code 2), a
            count, domain or index that is not WAA's (or not the image's).
        InvalidRunInputError: see :func:`check_local_tasks`; tasks that need the simulated
            desktop on a pool of WAA workers.
    """
    from evals.tasks import is_cua_selection, is_openapps_selection
    from evals.tasks.kinds import check_runs_on
    from waa_client.catalog import check_not_synthetic, check_waa_selection, named_ids

    check_runs_on(spec.cloud, f"a pool of {spec.cloud} workers", config.selection)
    if oa_vm.cloud_facts(spec.cloud).simulated:
        check_local_tasks(config, spec.tasks_dir, checked)
    elif not (is_cua_selection(config.selection) or is_openapps_selection(config.selection)):
        catalog = oa_vm.pool_catalog(spec)
        if catalog is not None:
            catalog.resolve(config.selection, live=True)
            return
        check_waa_selection(config.selection)
        check_not_synthetic(named_ids(config.selection) or ())


def check_local_tasks(
    config: RunConfig, tasks_dir: str | None, checked: Checked | None = None
) -> None:
    """A local pool's tasks are known before it exists: refuse unknown task IDs, malformed task
    files, and tasks the agent cannot play (``replay`` without their bundles, ``oracle`` without
    a reference solution), as the run would once the pool was made.

    Args:
        config: The run's options.
        tasks_dir: The pool's task folder (``None``: the bundled local suite).
        checked: What :func:`check_before_run` built (its first agent is used; none: one is
            built).

    Raises:
        waa_client.errors.CatalogError: unknown IDs (all listed) or a malformed task file.
        InvalidRunInputError: tasks the agent cannot play (all listed).
    """
    from pathlib import Path

    from evals.agents.base import tasks_for_agent
    from evals.tasks import is_cua_selection, is_openapps_selection
    from oa_vm import local_tasks_dir
    from waa_client.catalog import Catalog

    if is_cua_selection(config.selection) or is_openapps_selection(config.selection):
        return  # checked with the run's other inputs (check_before_run)
    catalog = Catalog.from_folder(Path(tasks_dir) if tasks_dir else local_tasks_dir())
    refs = catalog.select(config.selection, live=False)
    tasks = {ref.task_id: catalog.load(ref.task_id) for ref in refs}
    agent = _agent(config, None if checked is None else checked.agents)
    agent.check_tasks(tasks_for_agent(agent, tasks))
    from evals.run.variations import add_variations, read_variations

    variations = (checked.variations if checked is not None
                  else read_variations(config.variations) if config.variations else None)
    if variations is not None:
        from evals.run.pools import Selected

        add_variations(Selected(list(refs), tasks), variations)  # as the run will
