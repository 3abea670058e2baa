"""What a trace means: counts, energy, latency, bandwidth and occupancy, derived from the records alone."""

from hwsim.metrics.derive import LayerMetrics, TraceMetrics, bandwidth, derive

__all__ = ["LayerMetrics", "TraceMetrics", "bandwidth", "derive"]
