"""The kernels that apply a token bitmask to logits, one module per array library.

- ``_bits``: what they share: the integer view of each float dtype (with -inf's bit pattern in
  it) and the core's pass over integer-viewed rows;
- ``numpy``: allocating, unpacking and applying bitmasks for numpy arrays;
- ``torch``: torch tensors (CPU tensors through the numpy kernel, device tensors with torch ops),
  and ``PinnedBitmask``; imported only when torch is used;
- ``triton``: the Triton kernel for CUDA logits, imported only for the first CUDA logits.

The public entry points are in :mod:`stencil.bitmask` (and ``stencil``), which picks the kernel
for the logits it is given. Nothing is imported here, so that ``import stencil`` never loads torch.
"""
