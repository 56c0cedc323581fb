"""What pools cost: the price catalog (shipped and refreshed), time figures, a pool's cost so far
and a plan's price."""
