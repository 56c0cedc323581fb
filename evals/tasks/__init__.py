"""Tasks users bring: Cua-Bench task modules, OpenApps-style task configs, and the UI-change study
(restyled and renamed versions of ExtraDup's records app)."""
