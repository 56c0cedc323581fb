"""The run engine: pools and the queue, the dispatcher and runner, the agent loop, resets, repairs,
the manifest and the summary."""
