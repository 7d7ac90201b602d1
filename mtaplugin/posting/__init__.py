"""The pure posting core: the posting rules, the pipeline, the content filter's decision,
the verdict (the post, its envelope and its addresses are :mod:`mtaplugin.vocabulary`).

Nothing here reaches SQL, SMTP or DNS; tests/unit/test_layering.py checks it."""
