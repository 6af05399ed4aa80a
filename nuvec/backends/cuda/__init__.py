"""The CUDA backend (CuPy + NVRTC)."""
