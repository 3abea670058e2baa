"""Mappers: (graph, hardware) → `Schedule`, the step stream simulators and analytic models read."""
