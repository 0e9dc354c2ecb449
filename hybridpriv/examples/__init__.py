"""Built-in examples of `hybridpriv select` (SPEC files and small data fixtures with their sources)."""
