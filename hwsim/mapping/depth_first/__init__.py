"""The depth-first mapper: stacks of layers executed line by line through line buffers, optionally tiled.

Mapping decisions (shared with the closed-form model in
`hwsim.analytic.depth_first`, which prices them without walking steps):

- *Stacks*: the compute layers split after each cut (`split_stacks`); a
  merge input that spans more than `max_short_skip_layers` layers is a long
  skip and goes through DRAM (`long_skips`).
- *Orientation*: lines run along the shorter side of a stack's first input
  (Goetschalckx & Verhelst, sec. 3.2); the other axis is scanned.
- *Tiles* (`plan_stack`): every FM of a stack is split along its lines into
  TF tiles that are run one after another, each through all scan lines. The
  stack's output FMs are split evenly (⌈L/TF⌉ columns); going upstream,
  tile i of an FM ends where its consumers' tile i needs it to end, so no
  tile ever waits for a later one. A tile therefore also needs a few
  columns computed by the tile before it (k − S for a window): those are
  offloaded to DRAM when computed and fetched back (Eq. 3), never
  recomputed. A ring row is as wide as the FM's widest tile.

The schedule (`depth_first_schedule`): one `Work` per stack whose
steps walk its tiles. Within a tile, each *event* is one layer computing one
output line (depth-to-space: its f lines at once), in depth-first order: the
deepest layer that can proceed goes first, and a new line of a stack input
is loaded from DRAM only when none can. An event is one step group: it
allocates line-buffer rows for the lines it writes, reads its input windows
from the line buffers into the array (weights from the GLB), computes, writes
its line to a line buffer (or to DRAM if the FM leaves the stack), offloads
the boundary columns the next tile needs and frees the input lines no
consumer needs any more.

Line-buffer occupancy is what a pixel-level ring buffer holds, lifted to
lines: events that stream in lock-step (a loaded line and everything it
triggers downstream, a *slot*) overwrite released lines in place, so a line
written and a line released in the same slot swap; while the slot streams,
each such ring also holds its window's lead into the new line (k − 1
pixels of a k-wide window, one pixel for a 1×1 layer, the column delay of a
short skip). Lines written without a release (filling, depth-to-space's
waiting lines, an upsampler's replayed line) are allocated whole. Line-buffer
ALLOC/FREE steps carry the ring's id (its index in `StackPlan.consumers`) as
their address, so the simulator can trace each ring's occupancy.

Modules, by concern: `stacks` (cuts, skips, the mapping's choices),
`geometry` (axis maps, tile bounds, ring leads), `events` (a tile's
depth-first order, slots and swaps), `steps` (events to STEP_DTYPE steps
and the `Schedule`).
"""

from hwsim.mapping.depth_first.geometry import axis_maps, depth_first_layout, plan_stack
from hwsim.mapping.depth_first.plan import (
    GLOBAL_KINDS,
    WINDOW_KINDS,
    Cut,
    DepthFirstError,
    DepthFirstLayout,
    DepthFirstMapping,
    StackPlan,
    WeightPolicy,
)
from hwsim.mapping.depth_first.stacks import long_skips, split_stacks
from hwsim.mapping.depth_first.steps import depth_first_schedule

__all__ = [
    "GLOBAL_KINDS",
    "WINDOW_KINDS",
    "Cut",
    "DepthFirstError",
    "DepthFirstLayout",
    "DepthFirstMapping",
    "StackPlan",
    "WeightPolicy",
    "axis_maps",
    "depth_first_layout",
    "depth_first_schedule",
    "long_skips",
    "plan_stack",
    "split_stacks",
]
