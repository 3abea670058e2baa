"""Run points and hand back their rows as they finish: in this process, a local process pool, or a
Dask cluster.

Each function starts the work (forks the pool's workers, or maps the points onto the cluster) before
it returns, then yields rows in completion order. Leaving the loop early (an interrupt) cancels the
points not yet started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from hwsim.errors import SweepError
from hwsim.sweep.spec import Point

Row = dict[str, object]
Evaluate = Callable[[Point], Row]

EXECUTORS = ("local", "dask")


def local_rows(points: Sequence[Point], evaluate: Evaluate, jobs: int) -> Iterator[Row]:
    """Rows of `points` from `jobs` worker processes; with one job, one after another in this process."""
    if jobs == 1 or len(points) <= 1:
        return map(evaluate, points)
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(points)))
    futures = [pool.submit(evaluate, p) for p in points]  # the workers start here, before any output
    return _pool_rows(pool, futures)


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


def dask_rows(points: Sequence[Point], evaluate: Evaluate, scheduler: str) -> Iterator[Row]:
    """Rows of `points` evaluated on the Dask cluster whose scheduler listens at `scheduler`."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise SweepError("--executor dask needs dask.distributed, which is not installed; "
                         "pip install 'hwsim[dask]'") from None
    try:
        client = Client(scheduler, timeout=10)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SweepError(f"--scheduler {scheduler}: cannot connect to a Dask scheduler ({exc}); "
                         "give its address, e.g. tcp://host:8786") from None
    futures = client.map(evaluate, list(points), pure=False)
    return _dask_rows(client, futures)


def _dask_rows(client: object, futures: list[object]) -> Iterator[Row]:
    from dask.distributed import as_completed as dask_completed

    try:
        for future in dask_completed(futures):
            try:
                yield future.result()
            except Exception as exc:  # a worker lost: the point was not evaluated, so it is not recorded
                raise SweepError(f"a Dask worker failed ({type(exc).__name__}: {exc}); rerun the sweep to "
                                 "finish the missing points") from None
    finally:
        client.cancel(futures)  # type: ignore[attr-defined]
        client.close()  # type: ignore[attr-defined]


__all__ = ["local_rows", "dask_rows", "EXECUTORS"]
