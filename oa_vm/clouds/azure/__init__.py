"""Azure: the provider (Pulumi program in ``infra/azure.py``)."""
