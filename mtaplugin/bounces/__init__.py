"""Bounces: the envelope sender's VERP encoding, DSNs decided inline, bounce scores and
their consequences (warnings, disabled delivery, removal)."""
