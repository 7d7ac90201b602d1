"""The resources of the REST API, one module per family (Mailman's names)."""
