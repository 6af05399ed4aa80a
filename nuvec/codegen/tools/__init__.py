"""Developer tools for the code generator (not used at run time)."""
