"""Design-space sweeps: many configs × networks × settings, evaluated locally in parallel or on Dask.

`spec` reads a sweep file into points, `run` evaluates one point into a row of metrics, `executors`
runs many, `results` keeps the append-only log and writes the table, `pareto` finds the front.
"""

from hwsim.sweep.pareto import pareto_front
from hwsim.sweep.run import evaluate, table_columns
from hwsim.sweep.spec import Point, Sweep, load_sweep

__all__ = ["Point", "Sweep", "evaluate", "load_sweep", "pareto_front", "table_columns"]
