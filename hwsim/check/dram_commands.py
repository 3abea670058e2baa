"""The JEDEC timing of a trace's DRAM commands, checked from the trace alone (two validator rules).

A trace of a JEDEC DRAM keeps the commands the model issued (`DRAM_COMMAND_DTYPE`). These rules read them with
the timing the trace's hardware states (its config fields, not the simulator's copy) and nothing else:

- `jedec`: per bank, a column command finds its row open (an ACT since the bank's last PRE or REF) at least
  tRCD after that ACT; an ACT finds the bank closed, tRP after its PRE, tRFC after a REF and tRC after its
  previous ACT; a PRE comes tRAS after the ACT, tRTP after the last read and CWL + tBL + tWR after the last
  write to the row; a REF finds every bank of its rank closed, tRP after its PRE and tRC after its ACT. Per rank:
  ACTs tRRD_S apart (tRRD_L within a bank group) and at most four in any tFAW; column commands tCCD_S apart
  (tCCD_L within a bank group); a read tWTR_S after the last write's data (tWTR_L within its bank group); a
  write tRTW after the last read. Refresh: by a channel's last command at cycle L, each rank has had at least
  ⌊L / tREFI⌋ − 8 REFs and its k-th no later than (k + 8)·tREFI (JEDEC lets a controller postpone eight).
- `dram_commands`: the commands are the ones behind the trace: as many RDs and WRs as read and write burst
  records, each burst's data starting CL (reads) or CWL (writes) after its column command (on the core clock,
  within a cycle of rounding), and as many ACT, PRE, REF, RD and WR commands as the DRAM counters the trace
  keeps per layer (what energy is priced from).

Commands of one cycle are taken in the order PRE, REF, ACT, RD, WR (a bank closes before it opens again).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from hwsim.hardware.schema import Accelerator
from hwsim.vocab import DRAM_COMMAND_NAMES, DramCommand, Op

Add = Callable[[str, np.ndarray, Callable[[int], str]], None]  # a validator tally's `add`
POSTPONED_REFRESHES = 8  # REF commands a DDR4 controller may postpone (JESD79-4, 4.9)
_NONE = -1


@dataclass(frozen=True)
class _Jedec:
    """The device timing in command-clock cycles, read from the config's fields."""

    cl: int
    cwl: int
    bl: int
    rcd: int
    rp: int
    ras: int
    rc: int
    rtp: int
    wr: int
    ccd_s: int
    ccd_l: int
    rrd_s: int
    rrd_l: int
    faw: int
    wtr_s: int
    wtr_l: int
    rtw: int
    rfc: int
    refi: int

    @classmethod
    def of(cls, hw: Accelerator) -> _Jedec:
        t = hw.dram.timing
        assert t is not None
        return cls(cl=t.tcl_nck, cwl=t.tcwl_nck, bl=t.tbl_nck, rcd=t.trcd_nck, rp=t.trp_nck, ras=t.tras_nck,
                   rc=t.trc_nck, rtp=t.trtp_nck, wr=t.twr_nck, ccd_s=t.tccd_s_nck, ccd_l=t.tccd_l_nck,
                   rrd_s=t.trrd_s_nck, rrd_l=t.trrd_l_nck, faw=t.tfaw_nck, wtr_s=t.twtr_s_nck, wtr_l=t.twtr_l_nck,
                   rtw=t.trtw_nck, rfc=t.trfc_nck, refi=t.trefi_nck)


def _text(c: np.ndarray, i: int) -> str:
    """One command as text."""
    name = DRAM_COMMAND_NAMES[int(c["command"][i])]
    where = f"rank {int(c['rank'][i])}" if name == "REF" else f"bank {int(c['bank'][i])} row {int(c['row'][i])}"
    return f"{name} at DRAM cycle {int(c['cycle'][i])} (channel {int(c['channel'][i])}, {where})"


def _pair(c: np.ndarray, order: np.ndarray, apart: int, what: str, i: int) -> str:
    """Commands order[i] and order[i + apart], the later one breaking `what`."""
    return f"{what}: " + _text(c, int(order[i + apart])) + " after " + _text(c, int(order[i]))


def _late_refresh(rank: int, issued: int, refi: int, i: int) -> str:
    return (f"refresh {i + 1} of rank {rank} (of {issued} issued) is missing or later than "
            f"{i + 1 + POSTPONED_REFRESHES} tREFI ({refi} cycles each)")


def _fixed(text: str, i: int) -> str:
    return text


def _misplaced(name: str, starts: np.ndarray, expected: np.ndarray, i: int) -> str:
    return f"a {name} burst's data starts at cycle {int(starts[i])}; its column command puts it at {int(expected[i])}"


def _previous(mask: np.ndarray, key: np.ndarray) -> np.ndarray:
    """For each position of a sequence sorted by `key`, the last earlier position with the same key where `mask`
    holds (−1: none)."""
    pos = np.arange(len(mask))
    last = np.maximum.accumulate(np.where(mask, pos, _NONE)) if len(mask) else pos
    before = np.r_[_NONE, last[:-1]] if len(mask) else last
    starts = np.r_[True, key[1:] != key[:-1]] if len(key) else np.zeros(0, bool)
    block = np.maximum.accumulate(np.where(starts, pos, 0)) if len(key) else pos
    return np.where(before >= block, before, _NONE)


def _gap(cycle: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """cycle − cycle[prior] where there is a prior (else a gap no rule refuses)."""
    return np.where(prior >= 0, cycle - cycle[np.maximum(prior, 0)], 1 << 62)


def jedec_rule(add: Add, commands: np.ndarray, hw: Accelerator) -> None:
    """The `jedec` rule over every command of the trace (module doc)."""
    if not len(commands):
        return
    t = _Jedec.of(hw)
    device = hw.dram.device
    assert device is not None
    c = commands[np.lexsort((commands["command"], commands["cycle"]))]
    _bank_rules(add, c, t, hw.dram.ranks * device.banks, device.banks)
    ranks = hw.dram.ranks
    rank = c["channel"].astype(np.int64) * ranks + c["rank"]
    group = c["channel"].astype(np.int64) * ranks * device.bank_groups + c["group"]
    _rank_rules(add, c, t, rank, group)
    _refresh_rule(add, c, t, rank, ranks, hw.dram.channels)


def _bank_rules(add: Add, c: np.ndarray, t: _Jedec, banks: int, banks_per_rank: int) -> None:
    """What each bank's commands owe each other: a REF stands for every bank of its rank."""
    is_ref = c["command"] == DramCommand.REF
    refs = np.flatnonzero(is_ref)
    singles = np.flatnonzero(~is_ref)
    ref_rows = np.repeat(refs, banks_per_rank)  # one row per bank of the refreshed rank
    ref_bank = (c["rank"][ref_rows].astype(np.int64) * banks_per_rank
                + np.tile(np.arange(banks_per_rank), len(refs)))
    source = np.concatenate((singles, ref_rows))  # index into c of each per-bank row
    bank = (np.concatenate((c["bank"][singles].astype(np.int64), ref_bank))
            + c["channel"][source].astype(np.int64) * banks)
    order = np.lexsort((c["command"][source], c["cycle"][source], bank))
    source, bank = source[order], bank[order]
    cmd, cycle, row = c["command"][source], c["cycle"][source], c["row"][source]
    act = _previous(cmd == DramCommand.ACT, bank)
    close = _previous((cmd == DramCommand.PRE) | (cmd == DramCommand.REF), bank)
    read = _previous(cmd == DramCommand.RD, bank)
    write = _previous(cmd == DramCommand.WR, bank)
    is_open = (act >= 0) & (act > close)

    def text(what: str) -> Callable[[int], str]:
        return lambda i: f"{what}: " + _text(c, int(source[i]))

    column = (cmd == DramCommand.RD) | (cmd == DramCommand.WR)
    add("jedec", column & ~is_open, text("a column command to a closed bank"))
    add("jedec", column & is_open & (row != row[np.maximum(act, 0)]), text("a column command to a row not open"))
    add("jedec", column & is_open & (_gap(cycle, act) < t.rcd), text(f"tRCD {t.rcd} after its ACT not met"))
    is_act = cmd == DramCommand.ACT
    add("jedec", is_act & is_open, text("an ACT to a bank with a row open"))
    after_close = np.where(cmd[np.maximum(close, 0)] == DramCommand.REF, t.rfc, t.rp)
    add("jedec", is_act & (_gap(cycle, close) < after_close),
        text(f"tRP {t.rp} after its PRE (tRFC {t.rfc} after a REF) not met"))
    add("jedec", is_act & (_gap(cycle, act) < t.rc), text(f"tRC {t.rc} after the bank's last ACT not met"))
    is_pre = (cmd == DramCommand.PRE) & is_open
    add("jedec", is_pre & (_gap(cycle, act) < t.ras), text(f"tRAS {t.ras} after its ACT not met"))
    add("jedec", is_pre & (read > act) & (_gap(cycle, read) < t.rtp), text(f"tRTP {t.rtp} after the last RD not met"))
    add("jedec", is_pre & (write > act) & (_gap(cycle, write) < t.cwl + t.bl + t.wr),
        text(f"tWR {t.wr} after the last write's data not met"))
    is_ref = cmd == DramCommand.REF
    add("jedec", is_ref & is_open, text("a REF with a bank of its rank open"))
    add("jedec", is_ref & ~is_open & (_gap(cycle, close) < after_close),
        text(f"tRP {t.rp} after a PRE (tRFC after a REF) before a REF not met"))
    add("jedec", is_ref & (_gap(cycle, act) < t.rc), text(f"tRC {t.rc} after an ACT before a REF not met"))


def _rank_rules(add: Add, c: np.ndarray, t: _Jedec, rank: np.ndarray, group: np.ndarray) -> None:
    """Spacing within a rank and a bank group: activates (tRRD, tFAW), column commands (tCCD) and turnarounds."""
    cmd, cycle = c["command"], c["cycle"]
    for is_kind, apart_s, apart_l, name in (
            (cmd == DramCommand.ACT, t.rrd_s, t.rrd_l, "tRRD"),
            ((cmd == DramCommand.RD) | (cmd == DramCommand.WR), t.ccd_s, t.ccd_l, "tCCD")):
        picked = np.flatnonzero(is_kind)
        for key, apart, scope in ((rank, apart_s, "_S in its rank"), (group, apart_l, "_L in its bank group")):
            order = picked[np.argsort(key[picked], kind="stable")]  # by key, in time order within one
            same = key[order][1:] == key[order][:-1]
            short = same & (np.diff(cycle[order]) < apart)
            add("jedec", short, partial(_pair, c, order, 1, f"{name}{scope} ({apart}) not met"))
        if name == "tRRD":
            order = picked[np.argsort(rank[picked], kind="stable")]
            fifth = rank[order][4:] == rank[order][:-4]
            add("jedec", fifth & (cycle[order][4:] - cycle[order][:-4] < t.faw),
                partial(_pair, c, order, 4, f"a fifth ACT within tFAW {t.faw}"))
    by_rank = np.argsort(rank, kind="stable")  # time order within each rank
    r, g, k, cyc = rank[by_rank], group[by_rank], cmd[by_rank], cycle[by_rank]
    last_write = _previous(k == DramCommand.WR, r)
    last_read = _previous(k == DramCommand.RD, r)
    write_end = np.where(last_write >= 0, cyc[np.maximum(last_write, 0)] + t.cwl + t.bl, -(1 << 62))
    is_read = k == DramCommand.RD
    add("jedec", is_read & (cyc - write_end < t.wtr_s),
        lambda i: f"tWTR_S {t.wtr_s} after the last write's data not met: " + _text(c, int(by_rank[i])))
    by_group = np.lexsort((cyc, g))  # within each rank's order the group's commands keep their time order
    gk, gg, gc = k[by_group], g[by_group], cyc[by_group]
    group_write = _previous(gk == DramCommand.WR, gg)
    group_end = np.where(group_write >= 0, gc[np.maximum(group_write, 0)] + t.cwl + t.bl, -(1 << 62))
    add("jedec", (gk == DramCommand.RD) & (gc - group_end < t.wtr_l),
        lambda i: f"tWTR_L {t.wtr_l} after its bank group's last write data not met: "
                  + _text(c, int(by_rank[by_group[i]])))
    add("jedec", (k == DramCommand.WR) & (_gap(cyc, last_read) < t.rtw),
        lambda i: f"tRTW {t.rtw} after the last RD not met: " + _text(c, int(by_rank[i])))


def _refresh_rule(add: Add, c: np.ndarray, t: _Jedec, rank: np.ndarray, ranks: int, channels: int) -> None:
    """Every rank refreshed once per tREFI, at most eight postponed, up to its channel's last command."""
    last = np.zeros(channels, dtype=np.int64)
    np.maximum.at(last, c["channel"].astype(np.int64), c["cycle"])
    is_ref = c["command"] == DramCommand.REF
    for r in range(ranks * channels):  # rank key = channel · ranks + rank
        refs = c["cycle"][is_ref & (rank == r)]
        due = int(last[r // ranks]) // t.refi - POSTPONED_REFRESHES
        if due <= 0:
            continue
        k = np.arange(1, due + 1)
        late = np.ones(due, dtype=bool)
        have = min(due, len(refs))
        late[:have] = refs[:have] > (k[:have] + POSTPONED_REFRESHES) * t.refi
        add("jedec", late, partial(_late_refresh, r, len(refs), t.refi))


def commands_rule(add: Add, commands: np.ndarray, hw: Accelerator, dram_records: dict[str, np.ndarray] | None,
                  counters: dict[str, float]) -> None:
    """The `dram_commands` rule: the commands match the burst records and the trace's DRAM counters."""
    t = _Jedec.of(hw)
    device = hw.dram.device
    assert device is not None
    count = np.bincount(commands["command"], minlength=len(DRAM_COMMAND_NAMES))
    for name, counter in (("ACT", "activates"), ("PRE", "precharges"), ("REF", "refreshes"), ("RD", "read_bursts"),
                          ("WR", "write_bursts")):
        n_issued, counted = int(count[DRAM_COMMAND_NAMES.index(name)]), counters.get(counter, 0.0)
        text = f"{n_issued} {name} commands issued, the trace's {counter} counter says {counted:g}"
        add("dram_commands", np.array([n_issued != counted]), partial(_fixed, text))
    if dram_records is None:
        return
    core_per_dram = hw.clock_hz / device.command_clock_hz
    for command, latency, is_write in ((DramCommand.RD, t.cl, False), (DramCommand.WR, t.cwl, True)):
        issued = np.sort(commands["cycle"][commands["command"] == command])
        mine = (dram_records["op"] != Op.READ) == is_write
        starts = np.sort(dram_records["start_cycle"][mine])
        name = DRAM_COMMAND_NAMES[command]
        if len(issued) != len(starts):
            text = f"{len(issued)} {name} commands but {len(starts)} {'write' if is_write else 'read'} burst records"
            add("dram_commands", np.array([True]), partial(_fixed, text))
            continue
        expected = np.floor((issued + latency) * core_per_dram)
        add("dram_commands", np.abs(starts - expected) > 1, partial(_misplaced, name, starts, expected))
