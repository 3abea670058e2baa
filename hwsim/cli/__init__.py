"""The `hwsim` command line.

The command's numpy work is on small arrays, never large enough for BLAS to split across threads, yet
OpenBLAS starts a thread per core when numpy is first imported and they spin: ~0.1 CPU-s of every command on two
cores (`hwsim estimate resnet50`: 0.43 → 0.30 CPU-s). The command runs BLAS on one thread unless
OPENBLAS_NUM_THREADS says otherwise; set before anything imports numpy, and inherited by sweep workers.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
