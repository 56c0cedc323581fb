"""Benchmark adapters for the verifier audit: the protocol (:mod:`.base`) and the built-in toy
benchmark (:mod:`.toy`), written as a complete adapter to copy."""
