"""What a DRAM config implies beyond what it states: device presets, the jedec model's derived fields and the
energy of each DRAM command.

Presets (`dram.preset: ddr4-3200-x16`) are YAML files in `dram_presets/` holding a standard device's
`device`, `timing` and `power` sections, each with its `source`; the loader lays them under the config's
`dram` section, so any key the config gives overrides the preset's.

Under `dram.model: jedec` the fields the simple model takes as given follow from the device instead
(`with_device_fields`):

- burst = width × BL / 8 bytes;
- peak bandwidth = channels × burst / tBL bytes per DRAM cycle, in core cycles: × f_DRAM / f_core;
- latency = tRCD + CL + tBL DRAM cycles (a row miss on a closed bank), in core cycles rounded up;
- energy per bit = the energy of a sequential stream that reads and writes equally, one activate and
  precharge per row: ((E_RD + E_WR) / 2 + (E_ACT + E_PRE) / bursts per row) / burst bits. It prices
  words in the analytic estimate; a simulation prices the commands it issued (`CommandEnergy`).

Command energy (DRAMPower's method, Chandrasekar et al. DSD 2011; Micron TN-41-01), per rank, summed over the
devices of the rank and over the supply rails, each rail at voltage V with its IDD currents:

    E_ACT = V · (IDD0 − IDD3N) · tRAS          E_PRE = V · (IDD0 − IDD2N) · (tRC − tRAS)
    E_RD  = V · (IDD4R − IDD3N) · tBL          E_WR  = V · (IDD4W − IDD3N) · tBL
    E_REF = V · (IDD5B − IDD3N) · tRFC         P_active = V · IDD3N,  P_precharged = V · IDD2N

(times in ns = nCK · tCK, currents in mA, so V · mA · ns = pJ). IDD0 is measured cycling ACT and PRE at
tRC; DRAMPower splits its excess over the standby currents into the activate (while the row is open, over
active standby) and the precharge (the rest of tRC, over precharge standby). So a row hit costs E_RD and a
miss E_ACT + E_RD (+ E_PRE when another row was open): hits are cheaper than misses.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from hwsim.errors import ConfigError
from hwsim.hardware.kinds import DRAM_MODELS, ComponentKind
from hwsim.hardware.schema import Accelerator, Dram, DramPower, DramRail

PRESET_DIR = Path(__file__).resolve().parent / "dram_presets"


@functools.cache
def dram_presets() -> dict[str, Path]:
    """The shipped device presets by name (file stem)."""
    return {path.stem: path for path in sorted(PRESET_DIR.glob("*.yaml"))}


@dataclass(frozen=True)
class CommandEnergy:
    """Energy of each DRAM command of one rank (all its devices, every rail) and its standby power."""

    activate_pj: float
    precharge_pj: float
    read_pj: float  # one read burst
    write_pj: float  # one write burst
    refresh_pj: float  # one all-bank refresh
    active_standby_mw: float  # a bank open (IDD3N)
    precharge_standby_mw: float  # every bank closed (IDD2N)

    def standby_pj(self, active_ns: float, precharged_ns: float) -> float:
        """Background energy of one rank that spent these times in active and precharge standby."""
        return self.active_standby_mw * active_ns + self.precharge_standby_mw * precharged_ns


def _rails(power: DramPower) -> tuple[DramRail, ...]:
    return (power.vdd,) if power.aux is None else (power.vdd, power.aux)


def command_energy(dram: Dram) -> CommandEnergy:
    """The energies of `dram`'s commands (model jedec: device, timing and power are set)."""
    device, t, power = dram.device, dram.timing, dram.power
    assert device is not None and t is not None and power is not None, "a jedec DRAM has device, timing and power"
    tck_ns = 1e9 / device.command_clock_hz
    n = device.devices_per_rank

    def total(current_ma: str, minus_ma: str, nck: int) -> float:
        return n * sum(r.voltage_v * (float(getattr(r, current_ma)) - float(getattr(r, minus_ma))) * nck * tck_ns
                       for r in _rails(power))

    return CommandEnergy(
        activate_pj=total("idd0_ma", "idd3n_ma", t.tras_nck),
        precharge_pj=total("idd0_ma", "idd2n_ma", t.trc_nck - t.tras_nck),
        read_pj=total("idd4r_ma", "idd3n_ma", t.tbl_nck),
        write_pj=total("idd4w_ma", "idd3n_ma", t.tbl_nck),
        refresh_pj=total("idd5b_ma", "idd3n_ma", t.trfc_nck),
        active_standby_mw=n * sum(r.voltage_v * r.idd3n_ma for r in _rails(power)),
        precharge_standby_mw=n * sum(r.voltage_v * r.idd2n_ma for r in _rails(power)),
    )


DRAM_ENERGY_PARTS = ("activate", "precharge", "read", "write", "refresh", "background")


def dram_energy_pj(dram: Dram, clock_hz: float, counters: Mapping[str, float], cycles: float) -> dict[str, float]:
    """The energy (pJ, by `DRAM_ENERGY_PARTS`) of a stretch of `cycles` core cycles in which the jedec model's
    counters grew by `counters`: each command priced by `command_energy`, plus every rank's standby. Under the
    open-page policy a rank keeps rows open, so it stands by active (IDD3N); under the closed-page policy it
    stands by precharged (IDD2N) except while rows are open, taken as the sum over banks of the time their
    rows were open (capped at the stretch: banks open together count more than once, an upper bound)."""
    assert dram.device is not None
    e = command_energy(dram)
    rank_ns = dram.channels * dram.ranks * cycles / clock_hz * 1e9
    if dram.page_policy == "open":
        active_ns = rank_ns
    else:
        active_ns = min(rank_ns, counters.get("row_open_dram_cycles", 0.0) * 1e9 / dram.device.command_clock_hz)
    return {
        "activate": e.activate_pj * counters.get("activates", 0.0),
        "precharge": e.precharge_pj * counters.get("precharges", 0.0),
        "read": e.read_pj * counters.get("read_bursts", 0.0),
        "write": e.write_pj * counters.get("write_bursts", 0.0),
        "refresh": e.refresh_pj * counters.get("refreshes", 0.0),
        "background": e.standby_pj(active_ns, rank_ns - active_ns),
    }


def peak_bytes_per_dram_cycle(dram: Dram) -> float:
    """Peak bandwidth of all channels per DRAM clock cycle (model jedec)."""
    assert dram.device is not None and dram.timing is not None
    return dram.channels * dram.device.burst_bytes / dram.timing.tbl_nck


def with_device_fields(acc: Accelerator) -> Accelerator:
    """`acc` with its jedec DRAM's burst, peak bandwidth, latency and energy per bit filled in from its device."""
    dram = acc.dram
    if dram.device is None or dram.timing is None or dram.power is None:
        return acc
    device, t = dram.device, dram.timing
    core_per_dram = acc.clock_hz / device.command_clock_hz
    energy = command_energy(dram)
    bursts_per_row = device.row_bytes / device.burst_bytes
    burst_pj = (energy.read_pj + energy.write_pj) / 2 + (energy.activate_pj + energy.precharge_pj) / bursts_per_row
    return replace(acc, dram=replace(
        dram,
        burst_bytes=device.burst_bytes,
        bandwidth_bytes_per_cycle=peak_bytes_per_dram_cycle(dram) / core_per_dram,
        latency_cycles=math.ceil((t.trcd_nck + t.tcl_nck + t.tbl_nck) * core_per_dram - 1e-9),
        energy_pj_per_bit=burst_pj / (device.burst_bytes * 8),
    ))


@dataclass(frozen=True)
class DramKind(ComponentKind):
    """A DRAM model. This base describes a model timed and priced by its section's own fields (bandwidth,
    latency, burst, energy per bit), as `simple` is; a model that derives them or prices its commands overrides
    the methods."""

    def errors(self, dram: Dram) -> Iterator[str]:
        """Cross-field rules of the section under this model: '<yaml path>: <problem>; <fix>'. This base needs the
        fields it is timed and priced by."""
        for field, key in (("bandwidth_bytes_per_cycle", "bandwidth"), ("burst_bytes", "burst"),
                           ("energy_pj_per_bit", "energy")):
            if not getattr(dram, field):
                yield (f"dram.{key}: missing; the {dram.model} model needs it (or set dram.model: jedec with a "
                       "dram.preset)")
        if not dram.source.strip():
            yield "dram.source: missing; say where the DRAM energy comes from"

    def with_derived_fields(self, acc: Accelerator) -> Accelerator:
        """`acc` with the fields this model derives (burst, bandwidth, latency, energy per bit) filled in."""
        return acc

    @property
    def prices_commands(self) -> bool:
        """Whether a simulation prices this DRAM by the commands it issued (else per bit, as the estimate)."""
        return False

    def energy_by_command_pj(self, dram: Dram, clock_hz: float, counters: Mapping[str, float],
                             cycles: float) -> dict[str, float]:
        """The energy of a stretch of `cycles` core cycles in which the model's counters grew by `counters`, by
        command (only for a model that `prices_commands`)."""
        raise ConfigError(f"dram.model {dram.model}: priced per bit, not by command")

    def first_data_cycles(self, acc: Accelerator) -> int:
        """The least time, in core cycles, from a request to its first data (the trace validator's floor)."""
        dram = acc.dram
        if dram.row_buffer is not None:
            return min(dram.row_buffer.hit_latency_cycles, dram.row_buffer.miss_latency_cycles)
        return dram.latency_cycles

    def command_clock_hz(self, acc: Accelerator) -> float:
        """The clock its request traces count cycles of (the device's command clock, or the core's)."""
        return acc.clock_hz

    def issue_latency_cycles(self, dram: Dram, is_write: bool) -> int:
        """An unloaded access in cycles of `command_clock_hz`: what a replayed request is issued ahead of its data."""
        return dram.latency_cycles


def dram_kind(model: str) -> DramKind:
    """What DRAM model `model` (a registered name) means: its kind."""
    kind: DramKind = DRAM_MODELS.get(model)
    return kind


DERIVED_FIELDS = (("bandwidth_bytes_per_cycle", "bandwidth"), ("latency_cycles", "latency"),
                  ("burst_bytes", "burst"), ("energy_pj_per_bit", "energy"))
SIMPLE_ONLY = (("row_buffer", "row_buffer"), ("turnaround_cycles", "turnaround"))
JEDEC_ONLY = (("device", "device"), ("timing", "timing"), ("power", "power"))


class SimpleKind(DramKind):
    """Channels moving whole bursts, timed and priced by the section's own fields."""

    def errors(self, dram: Dram) -> Iterator[str]:
        yield from super().errors(dram)
        for field, key in (*JEDEC_ONLY, ("preset", "preset")):
            if getattr(dram, field):
                yield f"dram.{key}: only the jedec model uses it; set dram.model: jedec or remove it"
        if dram.scheduler != "fcfs":
            yield f"dram.scheduler: {dram.scheduler} needs model jedec; the simple model serves fcfs"
        if dram.address_map != "burst_interleave":
            yield f"dram.address_map: {dram.address_map} needs model jedec; the simple model takes burst_interleave"
        if dram.ranks != 1 or dram.page_policy != "open":
            yield "dram.ranks / dram.page_policy: only the jedec model uses them; set dram.model: jedec or remove them"


SIMPLE = DRAM_MODELS.register("simple")(SimpleKind(
    "channels moving whole bursts with pipelined access latency, an optional row buffer and read/write turnaround",
    "hwsim.sim.dram.simple:SimpleDram"))


class JedecKind(DramKind):
    """Ranks, bank groups and banks under JEDEC timing: burst, bandwidth, latency and energy per bit follow from the
    device, and a simulation prices the commands it issued."""

    def errors(self, dram: Dram) -> Iterator[str]:
        for field, key in DERIVED_FIELDS:
            if getattr(dram, field):
                yield f"dram.{key}: the jedec model derives it from dram.device and dram.timing; remove it"
        for field, key in SIMPLE_ONLY:
            if getattr(dram, field):
                yield (f"dram.{key}: only the simple model uses it; remove it (the jedec model times rows and "
                       "turnaround)")
        for field, key in JEDEC_ONLY:
            if getattr(dram, field) is None:
                names = ", ".join(dram_presets())
                yield f"dram.{key}: missing; give dram.preset ({names}) or the {key} section"
        if dram.device is not None:
            burst = dram.device.burst_bytes
            if burst & (burst - 1) or dram.device.width_bits % 8:
                yield f"dram.device: a burst of width × BL = {burst} B must be a power of two bytes"
            elif dram.device.row_bytes % burst:
                yield f"dram.device.row: {dram.device.row_bytes} B is not a whole number of {burst}-byte bursts"
        if dram.timing is not None:
            yield from _timing_errors(dram)
        if dram.power is not None:
            yield from _power_errors(dram.power)
        if dram.write_low_watermark > dram.write_high_watermark:
            yield (f"dram.write_low_watermark: {dram.write_low_watermark:g} is above write_high_watermark "
                   f"({dram.write_high_watermark:g}); a drain stops below where it starts, give a smaller share")

    def with_derived_fields(self, acc: Accelerator) -> Accelerator:
        return with_device_fields(acc)

    @property
    def prices_commands(self) -> bool:
        return True

    def energy_by_command_pj(self, dram: Dram, clock_hz: float, counters: Mapping[str, float],
                             cycles: float) -> dict[str, float]:
        return dram_energy_pj(dram, clock_hz, counters, cycles)

    def first_data_cycles(self, acc: Accelerator) -> int:
        """A row hit's CAS latency (read CL, write CWL, the shorter), in core cycles rounded down."""
        dram = acc.dram
        assert dram.timing is not None and dram.device is not None, "a jedec DRAM has timing and a device"
        fastest = min(dram.timing.tcl_nck, dram.timing.tcwl_nck)
        return int(Fraction(fastest) * Fraction(acc.clock_hz).limit_denominator(1_000_000)
                   / Fraction(dram.device.command_clock_hz).limit_denominator(1_000_000))

    def command_clock_hz(self, acc: Accelerator) -> float:
        assert acc.dram.device is not None
        return acc.dram.device.command_clock_hz

    def issue_latency_cycles(self, dram: Dram, is_write: bool) -> int:
        t = dram.timing
        assert t is not None
        return t.trcd_nck + (t.tcwl_nck if is_write else t.tcl_nck)


JEDEC = DRAM_MODELS.register("jedec")(JedecKind(
    "ranks, bank groups and banks under JEDEC timing, refresh, a scheduler and a page policy",
    "hwsim.sim.dram.jedec:JedecDram"))


def _timing_errors(dram: Dram) -> Iterator[str]:
    t = dram.timing
    assert t is not None
    pairs = (("tras", t.tras_nck, "trcd", t.trcd_nck), ("trc", t.trc_nck, "tras", t.tras_nck),
             ("tccd_l", t.tccd_l_nck, "tccd_s", t.tccd_s_nck),
             ("trrd_l", t.trrd_l_nck, "trrd_s", t.trrd_s_nck), ("twtr_l", t.twtr_l_nck, "twtr_s", t.twtr_s_nck),
             ("trefi", t.trefi_nck, "trfc", t.trfc_nck))
    for big, big_value, small, small_value in pairs:
        if big_value < small_value:
            yield f"dram.timing.{big}: {big_value} nCK is below {small} ({small_value} nCK); check the datasheet"
    if t.trc_nck < t.tras_nck + t.trp_nck:
        yield (f"dram.timing.trc: {t.trc_nck} nCK is below tRAS + tRP ({t.tras_nck + t.trp_nck} nCK): a bank cannot "
               "activate, hold the row and precharge in it; check the datasheet")
    if t.tfaw_nck < t.trrd_s_nck:
        yield (f"dram.timing.tfaw: {t.tfaw_nck} nCK is below trrd_s ({t.trrd_s_nck} nCK): the four-activate window "
               "holds at least one activate-to-activate gap; check the datasheet")
    if t.trefi_nck == t.trfc_nck:
        yield "dram.timing.trefi: a refresh interval equal to tRFC leaves no time for accesses; check the datasheet"


def _power_errors(power: DramPower) -> Iterator[str]:
    for name, rail in (("vdd", power.vdd), ("aux", power.aux)):
        if rail is None:
            continue
        for current in ("idd0", "idd4r", "idd4w", "idd5b"):
            if getattr(rail, f"{current}_ma") < rail.idd3n_ma:
                yield (f"dram.power.{name}.{current}: below idd3n, so the command would have negative energy; "
                       "check the datasheet")
        if rail.idd0_ma < rail.idd2n_ma:
            yield f"dram.power.{name}.idd0: below idd2n, so a precharge would have negative energy; check it"


__all__ = [
    "DRAM_ENERGY_PARTS",
    "JEDEC",
    "SIMPLE",
    "CommandEnergy",
    "DramKind",
    "JedecKind",
    "SimpleKind",
    "command_energy",
    "dram_energy_pj",
    "dram_kind",
    "dram_presets",
    "peak_bytes_per_dram_cycle",
    "with_device_fields",
]
