"""Pure NumPy kernels: side-effect free functions the actors call."""
