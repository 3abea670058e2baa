"""The example CNN of the DSD'20 phases paper (Table II), for buffer-sizing tests.

Layers keep the paper's node names n1…n5. [H, W, C] in the paper:
[32,32,1] → conv 17×17, 4 filters → [16,16,4] → conv 5×5 stride 3 with
padding −1 (a one-pixel crop) on every side, 3 filters → [4,4,3] → dense → [1,1,2].
"""

from __future__ import annotations

from hwsim.workload.builder import GraphBuilder
from hwsim.workload.ir import Graph
from hwsim.workload.zoo._blocks import finish


def phases_example(height: int, width: int) -> Graph:
    """The five-node example network; 32×32 by default."""
    b = GraphBuilder("phases_example")
    x = b.input("n1", 1, height, width)
    x = b.conv("n2", x, 4, 17)
    x = b.conv("n3", x, 3, 5, stride=3, padding=-1)
    x = b.fc("n4", x, 2)
    return finish(b, x, name="n5")
