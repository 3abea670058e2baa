"""Zeros in the workload and what the hardware makes of them.

- `codec`: how a tile is coded on a compressed link (run-length coding as
  Eyeriss does it, or none), exactly from a tile's values and in expectation
  from its zero fraction;
- `profile`: where each layer's zero fractions come from (a profile file,
  measured tensors, defaults by activation kind) per operand;
- `measured`: a network's measured tensors, counted into a profile;
- `tiles`: the exact per-tile and per-pass quantities the step generator
  needs from one layer's measured tensors;
- `onnx_run`: running an ONNX graph once with onnxruntime (an optional extra)
  to measure its tensors.

This package sits below the mappers and the analytic models (it imports the
vocabulary, the workload IR and the hardware schema only), so both sides
read the same zero fractions without importing each other.
"""
