"""The outbox: copies waiting in SQL for the MTA's re-injection listener, with retry."""
