"""Randomized long runs behind `make fuzz` (each module is one target, run as
`python -m fuzz.NAME`)."""
