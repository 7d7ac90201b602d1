"""The web UI: HTML pages served by the same gunicorn as the REST API.

``/3.0/`` and ``/3.1/`` stay the REST API; everything else is here (:mod:`.mount`).
Pages: log in/out, the list index and list pages, subscribe/unsubscribe by mail
confirmation, RFC 8058 one-click unsubscribe, the moderation queue, list settings,
members, bans, header matches, list creation and domain owners.
"""
