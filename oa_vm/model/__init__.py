"""What oa-vm records on disk: pools and workers (``pool.json``), leases, images, snapshots, the
pool's SSH keys, the user's settings, and which stacks oa-vm's Pulumi state holds."""
