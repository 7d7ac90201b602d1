"""Mail authentication: the DNS resolver, DMARC, DKIM/SPF/ARC checks, identity, signing."""
