"""Moving in: lists brought over from other list managers.

:mod:`mtaplugin.importers.mm2pickle` reads a Mailman 2.1 ``config.pck`` without running
anything from it; :mod:`mtaplugin.importers.mailman2` turns it into a :class:`Plan` (pure:
settings, rosters, bans, header matches, templates, and notes on what does not carry over);
:mod:`mtaplugin.importers.mm3rest` reads a running Mailman 3 site over REST (mailmanclient)
and :mod:`mtaplugin.importers.mailman3` turns each list into a :class:`Plan` and writes the
site's domains, users and addresses;
:mod:`mtaplugin.importers.apply` makes the database match a plan in one transaction and
says what it changed, so a second run changes nothing.
"""
