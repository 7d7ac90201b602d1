"""HyperKitty (Mailman 3's web archive) in a throw-away virtualenv, for the test of the
``hyperkitty`` archiver against the real thing (never a dependency of mtaplugin, never
imported by it): installed once from PyPI under :data:`mtaplugin.testing.debpkg.CACHE`
and reused; each test run makes a Django project of its own (SQLite, the archiver key)
and serves it with Django's development server on loopback."""

from __future__ import annotations

from pathlib import Path

from mtaplugin.testing.django_project import installed_apps, templates
from mtaplugin.testing.venvs import throwaway_venv

VERSION = "1.3.12"
#: HyperKitty 1.3.12 supports Django 4.2 and 5.x; pinned with the rest so that the cached
#: virtualenv stays what its name says
PINS = ("django>=4.2,<5.2",)
_VARIANT = "dj42"

#: the apps of a private HyperKitty before Django's own, and after them
APPS = (
    ("hyperkitty", "django_mailman3"),
    (
        "rest_framework",
        "django_gravatar",
        "compressor",
        "haystack",
        "django_extensions",
        "django_q",
        "allauth",
        "allauth.account",
        "allauth.socialaccount",
    ),
)
#: the Django settings of a private HyperKitty (with :data:`HYPERKITTY`): SQLite under
#: VAR, no Mailman REST
SETTINGS = """\
import os
BASE_DIR = {var!r}
SECRET_KEY = "throw-away-test-key"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
SITE_ID = 1
{installed_apps}MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django_mailman3.middleware.TimezoneMiddleware",
]
ROOT_URLCONF = "hkurls"
DATABASES = {{
    "default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(BASE_DIR, "hk.db")}}
}}
STATIC_URL = "/static/"
STATIC_ROOT = os.path.join(BASE_DIR, "static")
USE_TZ = True
MAILMAN_REST_API_URL = "http://127.0.0.1:9/"
MAILMAN_REST_API_USER = "restadmin"
MAILMAN_REST_API_PASS = "restpass"
LOGIN_URL = "account_login"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
"""

#: what HyperKitty needs in any Django project (also mailman-web's:
#: :mod:`mtaplugin.testing.mailman_web`): its static files, a Whoosh search index under
#: VAR, django-q on the database (no cluster runs: its tasks only wait), the key and the
#: addresses Mailman's archiver plugin posts with
HYPERKITTY = """STATICFILES_FINDERS = (
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "compressor.finders.CompressorFinder",
)
COMPRESS_ENABLED = False
HAYSTACK_CONNECTIONS = {{
    "default": {{
        "ENGINE": "haystack.backends.whoosh_backend.WhooshEngine",
        "PATH": {index!r},
    }}
}}
Q_CLUSTER = {{"orm": "default", "timeout": 300, "retry": 600}}
MAILMAN_ARCHIVER_KEY = {key!r}
MAILMAN_ARCHIVER_FROM = ("127.0.0.1", "::1")
"""

URLS = """\
from django.urls import include, path

urlpatterns = [
    path("hyperkitty/", include("hyperkitty.urls")),
    path("", include("django_mailman3.urls")),
    path("accounts/", include("allauth.urls")),
]
"""


def hyperkitty_venv() -> Path:
    """The virtualenv's root, with HyperKitty and Django; installed on first use."""
    return throwaway_venv(
        f"hyperkitty-{VERSION}-{_VARIANT}", [f"HyperKitty=={VERSION}", "whoosh", *PINS]
    )


def configure(var: Path, key: str) -> Path:
    """A Django project for a private HyperKitty under ``var`` (settings ``hksettings``,
    URLs ``hkurls``): its directory, to put first on PYTHONPATH."""
    var.mkdir(parents=True, exist_ok=True)
    (var / "hksettings.py").write_text(
        SETTINGS.format(var=str(var), installed_apps=installed_apps(*APPS))
        + templates("hyperkitty.context_processors.common")
        + HYPERKITTY.format(index=str(var / "fulltext_index"), key=key)
    )
    (var / "hkurls.py").write_text(URLS)
    return var
