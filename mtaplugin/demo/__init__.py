"""``make demo`` (``python -m mtaplugin.demo``): a working list on this machine, in a minute.

- :mod:`~mtaplugin.demo.site`: the settings file, the domain, list, members and log-ins;
- :mod:`~mtaplugin.demo.checks`: the held post, the post to every member, and what
  ``--check`` looks at;
- ``__main__``: the command (starts the private Postfix and ``mtaplugin serve``).
"""
