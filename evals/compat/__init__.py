"""Everything that exists only to be the reference tool's (``openadapt-evals``) API; its import
paths (``evals.adapters``, ``evals.benchmarks``, ``evals.evaluation``) re-export from here."""
