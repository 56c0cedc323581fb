"""What the clouds declared as Pulumi stacks share: the engine driver, the provider base, fleet
operations, waits and clean resets over SSH."""
