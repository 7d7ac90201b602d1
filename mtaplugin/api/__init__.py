"""The REST API: GNU Mailman's 3.1 dialect on Falcon, served by gunicorn."""
