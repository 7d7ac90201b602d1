"""The pure posting core: the posting rules, the pipeline, the content filter's decision,
the verdict, and the two value types that carry a list's row: the list's snapshot
(:mod:`.snapshot`) and what the transforms read (:mod:`.transform_context`).  (The post, its
envelope and its addresses are :mod:`mtaplugin.vocabulary`.)

Nothing here reaches SQL, SMTP or DNS; tests/unit/test_layering.py checks it."""
