"""A mailman-web style Django project for the tests (never a dependency of mtaplugin,
never imported by it): Postorius 1.3.13 and HyperKitty 1.3.12 in one project with one
SQLite database, django-allauth accounts as mailman-web sets them up (a sign-up is
confirmed by a mailed link), and django-mailman3 keeping Mailman core's users in step.

It is Postorius's test project (:mod:`mtaplugin.testing.postorius_venv`: its settings,
URLs, ``django-admin`` and server) with HyperKitty's settings
(:data:`mtaplugin.testing.hyperkitty_venv.HYPERKITTY`) and app added, HyperKitty under
``/archives/`` as mailman-web has it.  No virtualenv of its own: it runs on the cached
HyperKitty virtualenv (Django 5.0, allauth, django-mailman3 and mailmanclient at
Postorius's versions), with the cached Postorius virtualenv's packages appended to
``sys.path`` (Postorius and its readme renderer), so nothing new is installed.

``site = mailman_web(root)`` picks the port (Mailman's archiver plugin needs
``site.url`` before the core starts), :func:`make` writes and migrates it, and
:class:`~mtaplugin.testing.postorius_venv.PostoriusServer` serves it.
"""

from __future__ import annotations

from pathlib import Path

from mtaplugin.testing.hyperkitty_venv import HYPERKITTY, hyperkitty_venv
from mtaplugin.testing.postorius_venv import PostoriusSite, postorius_venv, write_project

#: the key Mailman's archiver plugin sends HyperKitty
ARCHIVER_KEY = "suite-archiver-key"
#: HyperKitty's place, as mailman-web has it
ARCHIVES = "/archives/"

#: what a mailman-web project adds to Postorius's
MAILMAN_WEB = """
import sys
sys.path.append({postorius_site!r})
INSTALLED_APPS = ["hyperkitty"] + INSTALLED_APPS + [
    "rest_framework", "compressor", "haystack", "django_extensions", "django_q",
]
TEMPLATES[0]["OPTIONS"]["context_processors"].append("hyperkitty.context_processors.common")
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_LOGIN_METHODS = {{"username", "email"}}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
"""

MAILMAN_WEB_URLS = f"""
urlpatterns.append(path({ARCHIVES.strip("/") + "/"!r}, include("hyperkitty.urls")))
"""


def mailman_web(root: Path) -> PostoriusSite:
    """The project's place and port (nothing written yet)."""
    return PostoriusSite(hyperkitty_venv(), root)


def database(site: PostoriusSite) -> Path:
    """The project's one database: Django's accounts, Postorius's and HyperKitty's."""
    return site.root / "mailman3web.db"


def make(site: PostoriusSite, core_url: str) -> PostoriusSite:
    """Write the project, talking to the core's REST API at ``core_url``, and migrate."""
    hyperkitty = HYPERKITTY.format(index=str(site.root / "fulltext_index"), key=ARCHIVER_KEY)
    site_packages = next((postorius_venv() / "lib").glob("python3*/site-packages"))
    web = MAILMAN_WEB.format(postorius_site=str(site_packages))
    api = (core_url.removesuffix("/3.1"), "restadmin", "restpass")
    write_project(site, api, database(site), hyperkitty + web, MAILMAN_WEB_URLS)
    site.manage("migrate", "--noinput", "-v0")
    return site
