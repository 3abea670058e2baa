"""Quantities with units, as written in hardware configs ("108 KiB", "200 MHz", "10.16 pJ").

Each config field declares a *dimension*; its value is a number followed by
one of that dimension's units and is stored in the dimension's base unit
(bytes, hertz, picojoules, ...). A unit of the wrong dimension is an error,
so "100 pJ" can never become a buffer size. KB, MB and GB are binary (1024ⁿ)
as in memory datasheets; kB is decimal. Rates per second (GB/s) and times
(ns) are converted to per-cycle values with the config's clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hwsim.errors import ConfigError


@dataclass(frozen=True)
class Dimension:
    """A physical dimension: its base unit and the unit spellings it accepts."""

    name: str
    base: str
    units: dict[str, float]  # spelling -> factor to base unit
    bare_ok: bool  # may the unit be omitted (plain counts)?
    example: str
    suffix: str  # ending of Python field names in this dimension ("_bytes")
    highest: float  # the largest value any field of the dimension takes, in the base unit (beyond: an error)
    lowest: float = 0.0  # the smallest non-zero value any field takes, in the base unit (below: an error)


# Physical ranges (base units): a value beyond them is a typo or an attack, never a design, and would overflow the
# simulator's 64-bit cycle, address and energy arithmetic.
MAX_BYTES = float(2**40)  # bytes (and words, bytes per cycle): 1 TiB, far above any on-chip or DRAM size here
MAX_COUNT = float(2**24)  # PEs per side, banks, ports, channels, rows per bank: 16.7 M
MAX_CYCLES = float(2**40)  # a latency or timing parameter in cycles (about 18 min at 1 GHz)

_BINARY = {"B": 1.0, "KB": 1024.0, "KiB": 1024.0, "kB": 1000.0, "MB": 1024.0**2, "MiB": 1024.0**2,
           "GB": 1024.0**3, "GiB": 1024.0**3}

BYTES = Dimension("size", "B", _BINARY, False, "108 KiB", "_bytes", MAX_BYTES)
BITS = Dimension("width", "bit", {"bit": 1.0, "bits": 1.0, "b": 1.0, "B": 8.0, "byte": 8.0, "bytes": 8.0},
                 False, "16 bit", "_bits", 4096.0)
WORDS = Dimension("word count", "words", {"words": 1.0, "word": 1.0}, True, "224 words", "_words", MAX_BYTES)
COUNT = Dimension("count", "", {}, True, "12", "", MAX_COUNT)
FREQUENCY = Dimension("frequency", "Hz", {"Hz": 1.0, "kHz": 1e3, "MHz": 1e6, "GHz": 1e9}, False, "200 MHz", "_hz",
                      100e9, 1e3)
ENERGY = Dimension("energy", "pJ", {"fJ": 1e-3, "pJ": 1.0, "nJ": 1e3, "uJ": 1e6}, False, "10.16 pJ", "_pj", 1e9)
ENERGY_PER_BIT = Dimension("energy per bit", "pJ/bit", {"pJ/bit": 1.0, "fJ/bit": 1e-3, "nJ/bit": 1e3}, False,
                           "21.2 pJ/bit", "_pj_per_bit", 1e6)
POWER = Dimension("power", "W", {"W": 1.0, "mW": 1e-3, "uW": 1e-6}, False, "106.3 mW", "_w", 1e4)
THROUGHPUT = Dimension("throughput", "GMAC/s", {"GMAC/s": 1.0, "TMAC/s": 1e3, "MMAC/s": 1e-3}, False,
                       "23.1 GMAC/s", "_gmacs", 1e9)
FRACTION = Dimension("fraction", "", {"%": 0.01}, True, "0.15", "", 1e3)
# Per-cycle dimensions: a per-second or per-time value is converted with the clock.
BANDWIDTH = Dimension("bandwidth", "B/cycle",
                      {"B/cycle": 1.0, "bytes/cycle": 1.0, "bit/cycle": 1 / 8,
                       "B/s": -1.0, "kB/s": -1e3, "MB/s": -1e6, "GB/s": -1e9},
                      False, "16 B/cycle or 12.8 GB/s", "_bytes_per_cycle", MAX_BYTES, 1e-6)
DRAM_CLOCKS = Dimension("DRAM clock cycles", "nCK", {"nCK": 1.0, "tCK": 1.0}, True, "22 nCK", "_nck", MAX_CYCLES)
VOLTAGE = Dimension("voltage", "V", {"V": 1.0, "mV": 1e-3}, False, "1.2 V", "_v", 1e3)
CURRENT = Dimension("current", "mA", {"mA": 1.0, "A": 1e3, "uA": 1e-3}, False, "57 mA", "_ma", 1e6)
CYCLES = Dimension("latency", "cycles", {"cycles": 1.0, "cycle": 1.0, "ns": -1e-9, "us": -1e-6}, True,
                   "100 cycles or 50 ns", "_cycles", MAX_CYCLES)

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-z%/]*)\s*$")


def parse_quantity(value: object, dim: Dimension, clock_hz: float | None, where: str) -> float:
    """`value` (a number or "number unit" string) in `dim`'s base unit.

    Negative factors in a dimension's table mark per-second or time units that
    need the clock: per-second rates are divided by it, times multiplied.
    `where` names the file and YAML path for the error message.
    """
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected a {dim.name} such as {dim.example!r}, got {value!r}")
    if isinstance(value, (int, float)):
        if not dim.bare_ok:
            raise ConfigError(f"{where}: {value!r} needs a unit; write it as e.g. {dim.example!r}")
        return float(value)
    match = _QUANTITY.match(str(value))
    if match is None:
        raise ConfigError(f"{where}: {value!r} is not a number with a unit; write it as e.g. {dim.example!r}")
    number, unit = float(match.group(1)), match.group(2)
    if unit == "":
        if not dim.bare_ok:
            raise ConfigError(f"{where}: {value!r} needs a unit; write it as e.g. {dim.example!r}")
        return number
    if unit not in dim.units:
        valid = ", ".join(dim.units) or "no unit"
        raise ConfigError(
            f"{where}: {value!r} has the wrong unit for a {dim.name}; use one of: {valid} (e.g. {dim.example!r})"
        )
    factor = dim.units[unit]
    if factor > 0:
        return number * factor
    if clock_hz is None:
        raise ConfigError(f"{where}: {value!r} needs the clock to convert; set 'clock' first or use {dim.base}")
    if dim is BANDWIDTH:
        return number * -factor / clock_hz
    return number * -factor * clock_hz


def format_bytes(n_bytes: float) -> str:
    """A byte count with a binary prefix, for reports."""
    for unit, size in (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0)):
        if abs(n_bytes) >= size:
            return f"{n_bytes / size:.4g} {unit}"
    return f"{n_bytes:.4g} B"


def format_count(n: float) -> str:
    """A large count with an SI suffix (M, G), for reports."""
    for suffix, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.4g} {suffix}"
    return f"{n:.4g}"


def format_quantity(value: float, base_unit: str) -> str:
    """A config value in a readable unit: sizes with binary prefixes, clocks in MHz/GHz."""
    if base_unit == "B":
        return format_bytes(value)
    if base_unit == "Hz":
        for unit, size in (("GHz", 1e9), ("MHz", 1e6), ("kHz", 1e3)):
            if value >= size:
                return f"{value / size:.6g} {unit}"
    if isinstance(value, float):
        return f"{value:.6g} {base_unit}".strip()
    return f"{value} {base_unit}".strip()
