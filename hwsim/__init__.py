"""hwsim: a cycle-level simulator and analytic models of CNN accelerators."""

__version__ = "0.1.0"
