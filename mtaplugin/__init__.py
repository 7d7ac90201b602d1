"""mtaplugin: a mailing-list manager that runs inside the MTA."""

__version__ = "0.1.0"
