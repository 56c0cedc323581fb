"""What oa-vm records on disk: pools and workers (``pool.json``), leases, images, snapshots, the
pool's SSH keys and the user's settings."""
