"""What the members get: the transforms of an accepted post, one-click tokens, the
choice between the in-place copy and the outbox."""
