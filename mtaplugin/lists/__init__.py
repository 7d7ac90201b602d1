"""List state for the SMTP path: which addresses are lists, snapshots, members due a copy."""
