"""Device backends: cpu (NumPy + generated C kernels), cuda (CuPy + NVRTC), metal (Swift shim)."""
