"""Plumbing both command lines share: errors' exit codes aside, safe files, redaction, durations,
signals, input checks, terminal tables and live displays. Imports nothing else of oa_vm."""
