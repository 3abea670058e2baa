"""The JEDEC device as a config describes it: its timing in command-clock cycles and the address maps that place
bursts on channels, ranks, bank groups, banks, rows and columns (`dram.address_map`).

Both are facts about the hardware, not about how it is simulated: the jedec simulator books commands with them,
and the DRAMPower export rebuilds the commands of a trace with them, without the simulator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hwsim.hardware import schema
from hwsim.hardware.kinds import DRAM_ADDRESS_MAPS


@dataclass(frozen=True)
class Timing:
    """The JEDEC timing of a device in DRAM clock cycles (`schema.DramTiming` without its source)."""

    cl: int
    cwl: int
    rcd: int
    rp: int
    ras: int
    rc: int
    ccd_s: int
    ccd_l: int
    rrd_s: int
    rrd_l: int
    faw: int
    wtr_s: int
    wtr_l: int
    rtw: int
    rtp: int
    wr: int
    bl: int
    rfc: int
    refi: int

    @classmethod
    def of(cls, t: schema.DramTiming) -> Timing:
        return cls(cl=t.tcl_nck, cwl=t.tcwl_nck, rcd=t.trcd_nck, rp=t.trp_nck, ras=t.tras_nck, rc=t.trc_nck,
                   ccd_s=t.tccd_s_nck, ccd_l=t.tccd_l_nck, rrd_s=t.trrd_s_nck, rrd_l=t.trrd_l_nck, faw=t.tfaw_nck,
                   wtr_s=t.twtr_s_nck, wtr_l=t.twtr_l_nck, rtw=t.trtw_nck, rtp=t.trtp_nck, wr=t.twr_nck,
                   bl=t.tbl_nck, rfc=t.trfc_nck, refi=t.trefi_nck)


@dataclass(frozen=True)
class Coordinates:
    """Where bursts live in a JEDEC memory: per burst its channel, rank, bank group and bank (both numbered
    within the channel: group = rank · groups per rank + group in rank, bank likewise), row and column."""

    channel: np.ndarray
    rank: np.ndarray
    group: np.ndarray
    bank: np.ndarray
    row: np.ndarray
    column: np.ndarray


FIELD_NAMES = ("Ro", "Co", "Ba", "Ra", "Ch")  # row, column (in bursts), bank (bank group fastest), rank, channel


class FieldOrderMap:
    """An address map named by its fields from the most significant to the least (`RoCoBaRaCh`): burst index k
    = ⌊byte address / burst⌋ is read as a mixed-radix number whose digits, least significant first, are the
    reversed fields, each taken modulo its size (channels, ranks, banks per rank, bursts per row, rows per
    bank) except a leading row field, which keeps counting. Within `Ba` the bank group is the faster digit, so
    consecutive bank numbers alternate bank groups (a stream spread over banks pays tCCD_S, not tCCD_L)."""

    order: str = ""

    def __init__(self, cfg: schema.Dram) -> None:
        device = cfg.device
        assert device is not None, "the jedec model has a device"
        self.groups = device.bank_groups
        self.banks_per_rank = device.banks
        self.sizes = {"Ch": cfg.channels, "Ra": cfg.ranks, "Ba": device.banks,
                      "Co": device.row_bytes // device.burst_bytes, "Ro": device.rows_per_bank}
        fields = [self.order[i:i + 2] for i in range(0, len(self.order), 2)]
        assert sorted(fields) == sorted(FIELD_NAMES), self.order
        self.fields_lsb_first = tuple(reversed(fields))
        self.row_leads = fields[0] == "Ro"
        # a shift of the burst index by this many keeps every field but the leading row (which moves by 1):
        # transfers that differ by it place alike
        self.period_bursts = math.prod(self.sizes[f] for f in fields[1:]) if self.row_leads else 0

    def locate(self, bursts: np.ndarray) -> Coordinates:
        """The coordinates of each burst index."""
        digits = {}
        rest = bursts
        for name in self.fields_lsb_first:
            if name == "Ro" and self.row_leads:
                digits[name] = rest
                break
            rest, digits[name] = np.divmod(rest, self.sizes[name])
        bank_in_rank, rank = digits["Ba"], digits["Ra"]
        group = bank_in_rank % self.groups
        return Coordinates(channel=digits["Ch"], rank=rank, group=rank * self.groups + group,
                           bank=rank * self.banks_per_rank + bank_in_rank, row=digits["Ro"], column=digits["Co"])


def _field_order(name: str, order: str, doc: str) -> None:
    """Register the map reading fields in `order` (most significant first) as `name`."""
    cls = type(f"Map{order}", (FieldOrderMap,), {"order": order, "__doc__": doc})
    DRAM_ADDRESS_MAPS.register(name)(cls)


_field_order("burst_interleave", "RoCoRaBaCh", "Burst k on channel k mod C, then bank by bank (bank groups "
             "alternating), rank, column and row: the simple model's burst interleave carried on to the banks.")
_field_order("RoBaRaCoCh", "RoBaRaCoCh", "Channel, then the columns of one row, rank, bank, row: a stream stays "
             "in one open row per channel (Ramulator's default order).")
_field_order("RoCoBaRaCh", "RoCoBaRaCh", "Channel, rank, bank (bank groups alternating), column, row: a stream "
             "spreads over every bank and rank, each keeping its row open.")
_field_order("ChRaBaRoCo", "ChRaBaRoCo", "Columns, rows, banks, ranks, channel: each channel holds one contiguous "
             "range of addresses (no interleaving).")



__all__ = ["FIELD_NAMES", "Coordinates", "FieldOrderMap", "Timing"]
