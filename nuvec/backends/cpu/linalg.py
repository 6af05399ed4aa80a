"""Linear algebra on the CPU (filled in below)."""
