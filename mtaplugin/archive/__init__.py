"""The list archive: storing posts, threads, search, mbox export (issue 17)."""
