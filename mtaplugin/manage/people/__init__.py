"""One person across the site: everything the site holds about them (:mod:`.export`),
forgetting them (:mod:`.forget`), and an address across every list a caller administers
(:mod:`.across`: find, remove, ban, moderate).  The CLI (``mtaplugin people``), REST
(``/3.1/people/...``) and the web (``/account/export``, ``/people``) call these."""
