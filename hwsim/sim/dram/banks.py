"""One channel of the jedec model: its banks' state and the arithmetic that books a batch of bursts on them.

No DRAM command is a simpy event. A transaction's bursts on a channel come as one batch (in the
scheduler's service order) and `ChannelBanks.serve` computes every command time from the state the
earlier batches left, all in DRAM clock cycles:

- *Admission*: a channel holds `in_flight` bursts; burst i of the batch enters when the burst `in_flight`
  places before it (on this channel) has delivered its data: A_i = max(request, done_{i−in_flight}).
- *Segments*: the batch is cut where a bank is asked for a second row, so within a segment each bank
  has one row. A bank's first burst in a segment is a row hit (its open row), a miss (closed: ACT) or
  a conflict (another row open: PRE, then ACT); its later bursts hit.
- *Activates* (a short loop, one per bank opening a row): PRE at p ≥ max(A, tRAS after its ACT, tRTP
  after its last read command, tWR after its last write data); ACT at a ≥ max(A, p + tRP or the bank's
  ready time, ACT + tRC, the rank's last ACT + tRRD_S, the bank group's + tRRD_L, the rank's fourth last
  ACT + tFAW).
- *Column commands* (vectorised): each burst is ready at r_i = max(A_i, its bank's ACT + tRCD, write data
  end + tWTR_S/_L for a read, last read command + tRTW for a write); consecutive column commands are
  g_i = tCCD_L apart in one bank group, tCCD_S otherwise, never less than the burst's tBL on the data bus.
  c_i = max(r_i, c_{i−1} + g_i) is solved for the whole segment at once: with G_i = g_0 + … + g_i,
  c_i = G_i + max(c_{−1}, max_{j≤i}(r_j − G_j)) (a running maximum). Read data occupies
  [c + CL, c + CL + tBL), write data [c + CWL, c + CWL + tBL).
- *Refresh*: every rank of the channel refreshes all banks once per tREFI, for tRFC. At k·tREFI (k ≥ 1)
  each open bank is precharged as soon as it may be (tRAS after its ACT, tRTP after its last read, tWR
  after its last write data); the REF follows when every bank is idle: tRP after the last precharge and
  tRC after the last activate. A segment is cut at its first command at or after k·tREFI; the refresh
  closes every row, and the rest of the batch is booked after it. A request arriving during a refresh
  waits for its end.
- *Page policy*: open keeps each bank's row open after the batch; closed precharges a bank as soon as
  its batch has no further burst to its row (an auto-precharge after the last column command).

What does not depend on the state (the cut into segments, each bank's first burst, the summed gaps, each
bank's and bank group's last burst) is a `Segment`, which the model caches per transfer shape. Batches are
booked in request order, and a batch's column commands follow the channel's last one: across
transactions column commands issue in request order (activates overlap freely within the timing).

Ranks share the data bus without a rank-switch gap, and the command bus is not modelled (at most one
command per clock is not enforced): both cost little next to the constraints above.

When the trace records DRAM commands, a channel keeps every command it issues (`CommandLog`): the trace
validator checks the JEDEC timing from them alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from hwsim.hardware.jedec import Timing
from hwsim.vocab import DRAM_COMMAND_DTYPE, NO_BANK, DramCommand

_PRE, _REF, _ACT = int(DramCommand.PRE), int(DramCommand.REF), int(DramCommand.ACT)  # plain ints: logged fast
NEVER = -(1 << 40)  # a command that never happened: every constraint from it is already met


class Tally(Protocol):
    """The counters a channel adds to (the jedec model's statistics)."""

    read_bursts: float
    write_bursts: float
    row_hit_bursts: float
    row_miss_bursts: float
    row_conflict_bursts: float
    activates: float
    precharges: float
    refreshes: float
    refresh_dram_cycles: float
    refresh_stall_dram_cycles: float
    data_bus_dram_cycles: float
    bank_busy_dram_cycles: float
    row_open_dram_cycles: float


@dataclass(frozen=True)
class Segment:
    """Consecutive bursts of a batch (service order) in which each bank has one row, with what booking them
    needs that does not depend on the channel's state: bank, bank group and row of each burst (rows relative
    to the batch's base row), the first burst of each bank, the column gaps after the first burst and the
    last burst of each bank and bank group."""

    n: int  # bursts
    bank: np.ndarray
    group: np.ndarray
    row: np.ndarray
    rank: np.ndarray
    firsts: tuple[tuple[int, int, int, int, int], ...]  # (position, bank, group, rank, row) of each bank's first
    gap_sums: np.ndarray  # Σ_{0<j≤i} g_j: the column gaps after the first burst, summed (0 for the first)
    bank_last: tuple[list[int], np.ndarray]  # each bank and the position of its last burst
    group_last: tuple[list[int], np.ndarray]  # each bank group and the position of its last burst

    @classmethod
    def of(cls, bank: np.ndarray, group: np.ndarray, rank: np.ndarray, row: np.ndarray, t: Timing) -> Segment:
        _, first = np.unique(bank, return_index=True)
        first.sort()
        firsts = tuple(zip(first.tolist(), bank[first].tolist(), group[first].tolist(), rank[first].tolist(),
                           row[first].tolist()))
        gaps = np.where(group[1:] == group[:-1], max(t.ccd_l, t.bl), max(t.ccd_s, t.bl))
        return cls(len(bank), bank, group, row, rank, firsts, np.r_[0, np.cumsum(gaps)], _last_per_key(bank),
                   _last_per_key(group))

    def head(self, k: int, t: Timing) -> Segment:
        """The segment's first k bursts."""
        return Segment.of(self.bank[:k], self.group[:k], self.rank[:k], self.row[:k], t)

    def tail(self, k: int, t: Timing) -> Segment:
        """The segment from its k-th burst on."""
        return Segment.of(self.bank[k:], self.group[k:], self.rank[k:], self.row[k:], t)


def segments(bank: np.ndarray, group: np.ndarray, rank: np.ndarray, row: np.ndarray, t: Timing,
             piece: int) -> tuple[Segment, ...]:
    """A batch (service order) cut where a bank is asked for a second row, and every `piece` bursts."""
    bounds = []
    start = 0
    for end in [*segment_starts(bank, row), len(bank)]:
        bounds += [(lo, min(lo + piece, end)) for lo in range(start, end, piece)]
        start = end
    return tuple(Segment.of(bank[lo:hi], group[lo:hi], rank[lo:hi], row[lo:hi], t) for lo, hi in bounds)


class _Activate(NamedTuple):
    """A bank opening a row in the segment being booked: its first burst, its ACT cycle and the PRE before it
    (None when the bank was closed)."""

    position: int
    bank: int
    group: int
    rank: int
    row: int
    act: int
    pre: int | None


class CommandLog:
    """The commands one channel issued since they were last taken: single commands (ACT, PRE, REF) one by one,
    column commands as a block per booked segment."""

    def __init__(self, channel: int) -> None:
        self.channel = channel
        self._singles: list[int] = []  # (cycle, command, rank, group, bank, row) of each, flat
        self._columns: list[tuple[np.ndarray, bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.single = self._singles.extend  # log.single((cycle, command, rank, group, bank, row)): one command

    def columns(self, cycle: np.ndarray, is_write: bool, rank: np.ndarray, group: np.ndarray, bank: np.ndarray,
                row: np.ndarray) -> None:
        self._columns.append((cycle, is_write, rank, group, bank, row))

    def take(self) -> np.ndarray:
        """Every command logged since the last take (`DRAM_COMMAND_DTYPE`, in the order they were booked)."""
        k = len(self._singles) // 6
        out = np.empty(k + sum(len(c[0]) for c in self._columns), dtype=DRAM_COMMAND_DTYPE)
        out["channel"] = self.channel
        if k:
            singles = np.array(self._singles, dtype=np.int64).reshape(k, 6)
            for j, name in enumerate(("cycle", "command", "rank", "group", "bank", "row")):
                out[name][:k] = singles[:, j]
        for cycle, is_write, rank, group, bank, row in self._columns:
            block = out[k:k + len(cycle)]
            block["cycle"], block["rank"], block["group"], block["bank"], block["row"] = cycle, rank, group, bank, row
            block["command"] = DramCommand.WR if is_write else DramCommand.RD
            k += len(cycle)
        self._singles.clear()
        self._columns = []
        return out


class ChannelBanks:
    """The banks, bank groups and ranks of one channel, and the data bus they share (see the module doc)."""

    def __init__(self, t: Timing, ranks: int, banks_per_rank: int, groups_per_rank: int, in_flight: int,
                 keeps_rows_open: bool) -> None:
        self.t = t
        banks, groups = ranks * banks_per_rank, ranks * groups_per_rank
        self.keeps_rows_open = keeps_rows_open
        self.in_flight = in_flight
        self.open_row = [-1] * banks
        self.act_at = [NEVER] * banks
        self.col_ready = np.zeros(banks, dtype=np.int64)  # earliest column command to the open row
        self.pre_ready = [0] * banks  # earliest precharge after the last column command
        self.act_ready = [0] * banks  # earliest activate (after a precharge or a refresh)
        self.rank_acts: list[list[int]] = [[] for _ in range(ranks)]  # each rank's last four activates
        self.group_act = [NEVER] * groups
        self.last_col, self.last_col_group, self.last_read_col = NEVER, -1, NEVER
        self.write_end, self.group_write_end = NEVER, [NEVER] * groups
        self.done = np.zeros(in_flight, dtype=np.int64)  # data end of the last in_flight bursts, oldest first
        self.next_refresh = t.refi
        self.banks_per_rank, self.groups_per_rank = banks_per_rank, groups_per_rank
        self.bank_group = [b // banks_per_rank * groups_per_rank for b in range(banks)]  # set by each activate
        self.log: CommandLog | None = None  # the commands issued, when the trace records them
        self.ccd_s, self.ccd_l = max(t.ccd_s, t.bl), max(t.ccd_l, t.bl)
        # within a batch the in-flight bound binds only if in_flight bursts take less than a conflict's latency
        self.piece = in_flight if in_flight * t.bl < t.rp + t.rcd + t.cl + t.bl else 1 << 62

    def serve(self, batch: tuple[Segment, ...], row_base: int, is_write: bool, request: int | np.ndarray,
              tally: Tally) -> np.ndarray:
        """Book the segments of a batch (rows relative to `row_base`) requested at DRAM cycle `request` (or each
        burst at its own, in service order); the column command cycle of each burst, in service order."""
        self._refresh_until(int(request.min()) if isinstance(request, np.ndarray) else request, tally)
        out = []
        pending = list(batch)
        done = 0
        while pending:
            segment = pending.pop(0)
            mine = request[done:done + segment.n] if isinstance(request, np.ndarray) else request
            c = self._book_segment(segment, row_base, is_write, mine, pending, tally)
            out.append(c)
            done += len(c)
            if len(c) < segment.n:
                self._refresh(tally)
                pending.insert(0, segment.tail(len(c), self.t))
        return np.concatenate(out) if len(out) > 1 else out[0]

    def activate_ready(self, bank: np.ndarray, row: np.ndarray) -> np.ndarray:
        """For each burst, the earliest cycle its bank could activate its row by the bank's own state (tRC after
        its last ACT, tRP after the precharge an open row needs); 0 for a burst to the open row (no activate). A
        first-ready scheduler serves the banks ready first."""
        t, out = self.t, np.zeros(len(bank), dtype=np.int64)
        for k, (b, r) in enumerate(zip(bank.tolist(), row.tolist())):
            if self.open_row[b] != r:
                ready = max(self.act_ready[b], self.act_at[b] + t.rc)
                out[k] = max(ready, self.pre_ready[b] + t.rp) if self.open_row[b] >= 0 else ready
        return out

    # ----- refresh --------------------------------------------------------------------------------------------

    def _refresh_until(self, request: int, tally: Tally) -> int:
        """Perform every refresh due by `request` (the request waits for one still running)."""
        while self.next_refresh <= request:
            ends = self._refresh(tally)
            if request < ends:
                tally.refresh_stall_dram_cycles += ends - request
            idle = (request - self.next_refresh) // self.t.refi  # refreshes due a whole tREFI before the request
            if idle > 0 and self.log is None:
                self._idle_refreshes(idle, tally)
        return request

    def _idle_refreshes(self, count: int, tally: Tally) -> None:
        """`count` refreshes of an idle channel at once (every bank closed by the one before, so each REF is at
        its due cycle): what `count` calls of `_refresh` would book, in constant time (a request far in the
        future must not cost a loop per tREFI)."""
        t = self.t
        last_end = self.next_refresh + (count - 1) * t.refi + t.rfc
        self.act_ready = [max(ready, last_end) for ready in self.act_ready]
        tally.refreshes += count * len(self.rank_acts)
        tally.refresh_dram_cycles += count * t.rfc
        self.next_refresh += count * t.refi

    def _refresh(self, tally: Tally) -> int:
        """The all-bank refresh due at `next_refresh`: every open row precharged as soon as it may be, the REF
        when every bank is idle, every bank blocked for tRFC after it; the cycle the refresh ends."""
        due, t, log = self.next_refresh, self.t, self.log
        ref = due
        for bank, row in enumerate(self.open_row):
            if row < 0:
                ref = max(ref, self.act_ready[bank])  # tRP after its precharge, tRC after its activate
                continue
            pre = max(due, self.pre_ready[bank])  # tRAS, tRTP and tWR are in pre_ready
            tally.precharges += 1
            tally.row_open_dram_cycles += pre - self.act_at[bank]
            self.open_row[bank] = -1
            ref = max(ref, pre + t.rp, self.act_at[bank] + t.rc)
            if log is not None:
                log.single((pre, _PRE, bank // self.banks_per_rank, self.bank_group[bank], bank, row))
        end = ref + t.rfc
        self.act_ready = [max(ready, end) for ready in self.act_ready]
        if log is not None:
            for rank in range(len(self.rank_acts)):
                log.single((ref, _REF, rank, NO_BANK, NO_BANK, -1))
        tally.refreshes += len(self.rank_acts)
        tally.refresh_dram_cycles += t.rfc
        self.next_refresh += t.refi
        return end

    # ----- one segment ----------------------------------------------------------------------------------------

    def _book_segment(self, segment: Segment, row_base: int, is_write: bool, request: int | np.ndarray,
                      later: list[Segment], tally: Tally) -> np.ndarray:
        """Book the bursts of `segment` (requested at `request`, or each at its own) unless a refresh comes first;
        the column cycles of those booked."""
        n, k = segment.n, min(segment.n, self.in_flight)
        done = self.done[:k].tolist()
        admit: np.ndarray | int
        if isinstance(request, np.ndarray):
            each = request.copy()
            np.maximum(each[:k], self.done[:k], out=each[:k])
            admit, ready, floor = each, each.tolist(), int(request.min())
        else:
            admit = request  # every burst admitted at the request unless the window is still full
            if max(done) > request:
                admit = np.full(n, request, dtype=np.int64)
                np.maximum(admit[:k], self.done[:k], out=admit[:k])
            ready = [max(request, d) for d in done]
            floor = request
        acts, cut = self._activates(segment, row_base, floor, ready)
        c = self._columns(segment, is_write, floor, admit, acts)
        if c[-1] >= self.next_refresh:
            cut = min(cut, int(np.searchsorted(c, self.next_refresh)))
        if cut < n:
            if cut:
                self._commit(segment.head(cut, self.t), row_base, is_write, c[:cut], acts,
                             [segment.tail(cut, self.t), *later], tally)
            return c[:cut]
        self._commit(segment, row_base, is_write, c, acts, later, tally)
        return c

    def _activates(self, segment: Segment, row_base: int, request: int,
                   admitted: list[int]) -> tuple[list[_Activate], int]:
        """The activates the segment needs, in service order, and the position of the first burst whose
        activate would fall in the next refresh (the segment's length if none). Burst i is admitted at
        admitted[i] (at `request` beyond the list)."""
        t, open_row, refresh = self.t, self.open_row, self.next_refresh
        rank_acts: dict[int, list[int]] = {}
        group_act: dict[int, int] = {}
        acts: list[_Activate] = []
        for i, bank, group, rank, rel_row in segment.firsts:
            row = rel_row + row_base
            was_open = open_row[bank]
            if was_open == row:
                continue
            ready = admitted[i] if i < len(admitted) else request
            act_at = self.act_at[bank]
            pre = None if was_open < 0 else max(ready, self.pre_ready[bank], act_at + t.ras)
            history = rank_acts.get(rank)
            if history is None:
                history = rank_acts[rank] = self.rank_acts[rank][-4:]
            act = max(ready, self.act_ready[bank] if pre is None else pre + t.rp, act_at + t.rc,
                      group_act.get(group, self.group_act[group]) + t.rrd_l)
            if history:
                act = max(act, history[-1] + t.rrd_s, history[-4] + t.faw if len(history) >= 4 else NEVER)
            if act >= refresh or (pre is not None and pre >= refresh):
                return acts, i
            history.append(act)
            group_act[group] = act
            acts.append(_Activate(i, bank, group, rank, row, act, pre))
        return acts, segment.n

    def _columns(self, segment: Segment, is_write: bool, request: int, admit: np.ndarray | int,
                 acts: list[_Activate]) -> np.ndarray:
        """The column command cycle of each burst of the segment (the running-maximum solution); constraints
        every burst already meets by its request (`request` ≤ admission) are skipped."""
        t = self.t
        bank_ready = self.col_ready
        if acts:
            bank_ready = bank_ready.copy()
            for a in acts:
                bank_ready[a.bank] = a.act + t.rcd
        ready = np.maximum(bank_ready[segment.bank], admit)
        if is_write:
            if self.last_read_col + t.rtw > request:
                np.maximum(ready, self.last_read_col + t.rtw, out=ready)
        else:
            if self.write_end + t.wtr_s > request:
                np.maximum(ready, self.write_end + t.wtr_s, out=ready)
            if max(self.group_write_end) + t.wtr_l > request:
                np.maximum(ready, np.array(self.group_write_end, dtype=np.int64)[segment.group] + t.wtr_l, out=ready)
        g = segment.gap_sums + (self.ccd_l if int(segment.group[0]) == self.last_col_group else self.ccd_s)
        return g + np.maximum(np.maximum.accumulate(ready - g), self.last_col)

    def _commit(self, segment: Segment, row_base: int, is_write: bool, c: np.ndarray, acts: list[_Activate],
                later: list[Segment], tally: Tally) -> None:
        """Update the banks, bank groups, ranks, data bus and in-flight window with the booked bursts."""
        t = self.t
        acts = [a for a in acts if a.position < segment.n]
        self._commit_activates(acts, tally)
        if self.log is not None:
            self.log.columns(c, is_write, segment.rank, segment.group, segment.bank, segment.row + row_base)
        banks, last = segment.bank_last
        after = t.cwl + t.bl + t.wr if is_write else t.rtp
        for b, col in zip(banks, c[last].tolist()):
            self.pre_ready[b] = max(self.pre_ready[b], col + after)
        n = segment.n
        misses = sum(1 for a in acts if a.pre is None)
        tally.row_hit_bursts += n - len(acts)
        tally.row_miss_bursts += misses
        tally.row_conflict_bursts += len(acts) - misses
        last_col = int(c[-1])
        if is_write:
            tally.write_bursts += n
            self.write_end = last_col + t.cwl + t.bl
            groups, last = segment.group_last
            for g, col in zip(groups, c[last].tolist()):
                self.group_write_end[g] = col + t.cwl + t.bl
        else:
            tally.read_bursts += n
            self.last_read_col = last_col
        tally.data_bus_dram_cycles += n * t.bl
        tally.bank_busy_dram_cycles += n * t.bl
        self.last_col, self.last_col_group = last_col, int(segment.group[-1])
        done = c + ((t.cwl if is_write else t.cl) + t.bl)
        self.done = done[-self.in_flight:] if n >= self.in_flight else np.concatenate((self.done[n:], done))
        if not self.keeps_rows_open:
            self._close_rows(segment, row_base, later, tally)

    def _commit_activates(self, acts: list[_Activate], tally: Tally) -> None:
        t = self.t
        open_row, act_at, col_ready, act_ready, pre_ready = (self.open_row, self.act_at, self.col_ready,
                                                             self.act_ready, self.pre_ready)
        precharges = open_cycles = 0
        log = self.log
        for a in acts:
            bank, act = a.bank, a.act
            if a.pre is not None:
                precharges += 1
                open_cycles += a.pre - act_at[bank]
                if log is not None:
                    log.single((a.pre, _PRE, a.rank, self.bank_group[bank], bank, open_row[bank]))
            if log is not None:
                log.single((act, _ACT, a.rank, a.group, bank, a.row))
            self.bank_group[bank] = a.group
            open_row[bank] = a.row
            act_at[bank] = act
            col_ready[bank] = act + t.rcd
            act_ready[bank] = act + t.rc
            pre_ready[bank] = act + t.ras
            history = self.rank_acts[a.rank]
            history.append(act)
            if len(history) > 4:
                del history[0]
            self.group_act[a.group] = act
        tally.activates += len(acts)
        tally.precharges += precharges
        tally.row_open_dram_cycles += open_cycles
        tally.bank_busy_dram_cycles += len(acts) * t.rcd + precharges * t.rp

    def _close_rows(self, segment: Segment, row_base: int, later: list[Segment], tally: Tally) -> None:
        """Closed page: precharge each bank of the segment whose row no later burst of the batch wants."""
        wanted = {(b, r + row_base) for s in later for b, r in zip(s.bank.tolist(), s.row.tolist())}
        t = self.t
        for b in segment.bank_last[0]:
            row = self.open_row[b]
            if row < 0 or (b, row) in wanted:
                continue
            pre = max(self.pre_ready[b], self.act_at[b] + t.ras)
            if self.log is not None:
                self.log.single((pre, _PRE, b // self.banks_per_rank, self.bank_group[b], b, row))
            tally.precharges += 1
            tally.row_open_dram_cycles += pre - self.act_at[b]
            tally.bank_busy_dram_cycles += t.rp
            self.open_row[b] = -1
            self.act_ready[b] = max(self.act_ready[b], pre + t.rp)


def _last_per_key(keys: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The distinct keys and the position of each one's last occurrence."""
    distinct, last_from_end = np.unique(keys[::-1], return_index=True)
    return distinct.tolist(), len(keys) - 1 - last_from_end


def segment_starts(bank: np.ndarray, row: np.ndarray) -> list[int]:
    """Where a batch must be cut so that each bank has one row within a segment: the position of each burst
    whose bank was asked for another row earlier in the same segment (greedy, left to right)."""
    if len(bank) < 2:
        return []
    by_bank = np.argsort(bank, kind="stable")
    b, r = bank[by_bank], row[by_bank]
    switch = (b[1:] == b[:-1]) & (r[1:] != r[:-1])
    if not switch.any():
        return []
    previous = np.full(len(bank), -1, dtype=np.int64)  # the previous burst of the same bank, where its row differs
    previous[by_bank[1:][switch]] = by_bank[:-1][switch]
    cuts, start = [], 0
    for i in np.flatnonzero(previous >= 0).tolist():
        if previous[i] >= start:
            cuts.append(i)
            start = i
    return cuts


__all__ = ["NEVER", "ChannelBanks", "CommandLog", "Segment", "Tally", "segment_starts", "segments"]
