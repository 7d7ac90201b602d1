"""The pure posting core: the envelope, list addresses, the posting rules, the verdict.

Nothing here reaches SQL, SMTP or DNS; tests/unit/test_layering.py checks it."""
