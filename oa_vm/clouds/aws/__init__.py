"""AWS: the provider (Pulumi program in ``infra/aws.py``)."""
