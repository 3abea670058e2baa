"""Run points and hand back their rows as they finish: in this process, a local process pool, or a
Dask cluster.

Each function starts the work (forks the pool's workers, or maps the points onto the cluster) before
it returns, then yields rows in completion order. Leaving the loop early (an interrupt) cancels the
points not yet started.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from hwsim.errors import SweepError
from hwsim.sweep.spec import Point

if TYPE_CHECKING:
    from dask.distributed import Client
    from dask.distributed import Future as DaskFuture

Row = dict[str, object]
Evaluate = Callable[[Point], Row]

EXECUTORS = ("local", "dask")


def local_rows(points: Sequence[Point], evaluate: Evaluate, jobs: int) -> Iterator[Row]:
    """Rows of `points` from `jobs` worker processes; with one job, one after another in this process."""
    if jobs == 1 or len(points) <= 1:
        return map(evaluate, points)
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(points)), initializer=worker_setup,
                               initargs=(os.getpid(),))
    futures = [pool.submit(evaluate, p) for p in points]  # the workers start here, before any output
    return _pool_rows(pool, futures)


PR_SET_PDEATHSIG = 1  # Linux prctl(2) option: the signal a process gets when its parent dies


def worker_setup(sweep_pid: int) -> None:
    """Run in each pool worker as it starts: the worker dies with the sweep's process however that ends (even
    SIGKILL: Linux sends the worker SIGKILL then, through prctl), and a SIGTERM ends it plainly rather than
    through the command line's handler it inherited at the fork."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown on exit is what remains
        return
    if os.getppid() != sweep_pid:  # the sweep's process died before prctl took effect
        os._exit(1)


def _pool_rows(pool: ProcessPoolExecutor, futures: list[Future[Row]]) -> Iterator[Row]:
    try:
        for future in as_completed(futures):
            try:
                yield future.result()
            except BrokenProcessPool as exc:
                raise SweepError(f"a worker process died ({exc}); rerun the sweep to finish the missing points") \
                    from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def dask_rows(points: Sequence[Point], evaluate: Evaluate, scheduler: str | None,
              workers: int | None = None) -> Iterator[Row]:
    """Rows of `points` evaluated on the Dask cluster whose scheduler listens at `scheduler`, or with no
    scheduler on a `LocalCluster` of `workers` single-threaded worker processes (default: one per CPU)."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise SweepError("--executor dask needs dask.distributed, which is not installed; "
                         "pip install 'hwsim[dask]'") from None
    if scheduler is None:
        return _local_cluster_rows(points, evaluate, workers or _cpus())
    try:
        client = Client(scheduler, timeout=10)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SweepError(f"--scheduler {scheduler}: cannot connect to a Dask scheduler ({exc}); "
                         "give its address, e.g. tcp://host:8786") from None
    futures = client.map(evaluate, list(points), pure=False)
    return _dask_rows(client, futures)


def _cpus() -> int:
    """The CPUs this process may run on (its affinity where the platform tells it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1


def _local_cluster_rows(points: Sequence[Point], evaluate: Evaluate, workers: int) -> Iterator[Row]:
    """Rows from a LocalCluster started at the first row asked for and closed when the loop ends, however it
    ends (all rows, a failed worker, an interrupt): no worker process outlives the sweep."""
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=min(workers, len(points)), threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR, preload=[__name__]) as cluster, \
            Client(cluster) as client:
        yield from _dask_rows(client, client.map(evaluate, list(points), pure=False))


def dask_setup(worker: object) -> None:
    """Dask's preload hook, run by each LocalCluster worker as it starts (`preload=[this module]`): Ctrl-C
    reaches the whole process group, and it is the sweep's own process that closes the cluster; the workers
    ignore it rather than each die with a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _dask_rows(client: Client, futures: list[DaskFuture[Row]]) -> Iterator[Row]:
    from dask.distributed import as_completed as dask_completed

    try:
        for future in dask_completed(futures):
            try:
                yield future.result()
            except Exception as exc:  # noqa: BLE001 - a worker lost: the point was not evaluated, so it is not recorded
                raise SweepError(f"a Dask worker failed ({type(exc).__name__}: {exc}); rerun the sweep to "
                                 "finish the missing points") from None
    finally:
        client.cancel(futures)
        client.close()


__all__ = ["EXECUTORS", "dask_rows", "local_rows"]
