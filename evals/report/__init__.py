"""Reading runs: the run page, comparisons, the table across runs, live progress and exports
(Inspect AI logs, datasets)."""
