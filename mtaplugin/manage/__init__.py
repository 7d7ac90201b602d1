"""Operations on domains, lists and members, shared by the CLI and the REST API.

Each function checks its input first and raises :class:`~mtaplugin.errors.InvalidInput`
(naming the field) before it changes anything.
"""
