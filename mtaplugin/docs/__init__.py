"""Documentation generated from the code's own tables (``python -m mtaplugin.docs.reference``)."""
