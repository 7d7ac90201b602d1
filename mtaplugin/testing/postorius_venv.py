"""Postorius 1.3.13 (Mailman 3's Django web UI) in a throw-away virtualenv, for the tests
that point it at ``mtaplugin api`` (never a dependency of mtaplugin, never imported by it):
installed once under :data:`mtaplugin.testing.debpkg.CACHE` and reused.

:func:`make_site` writes a minimal Django project (SQLite, no HyperKitty, mail to files,
``DEBUG`` off so a server error is a real 500), migrates it and creates a superuser;
:class:`PostoriusServer` serves it on loopback with Django's own server.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.django_project import installed_apps, templates
from mtaplugin.testing.venvs import throwaway_venv

VERSION = "1.3.13"
#: the versions the tests run with (Postorius 1.3.13 wants Django < 5.1 and
#: django-mailman3 >= 1.3.13; allauth is pinned so its settings below keep their meaning).
#: The pins are part of the cached virtualenv's name.
PINS = (
    f"postorius=={VERSION}",
    "django-mailman3==1.3.15",
    "Django==5.0.14",
    "django-allauth==65.22.1",
    "mailmanclient==3.3.5",
)
_VARIANT = "dj50"

#: the superuser :func:`make_site` creates
ADMIN_USER = "siteadmin"
ADMIN_EMAIL = "siteadmin@example.org"
ADMIN_PASSWORD = "postorius-admin-pass"

#: the apps of the Postorius site before Django's own, and after them
APPS = (
    (
        "postorius",
        "django_mailman3",
        "django_gravatar",
        "allauth",
        "allauth.account",
        "allauth.socialaccount",
    ),
    ("django.contrib.humanize",),
)
SETTINGS = """\
SECRET_KEY = "postorius-on-mtaplugin-test-key-0123456789"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
SITE_ID = 1
ROOT_URLCONF = "postorius_site.urls"
MAILMAN_REST_API_URL = {api_url!r}
MAILMAN_REST_API_USER = {api_user!r}
MAILMAN_REST_API_PASS = {api_pass!r}
MAILMAN_ARCHIVER_KEY = "unused"
POSTORIUS_TEMPLATE_BASE_URL = {base_url!r}
{installed_apps}MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django_mailman3.middleware.TimezoneMiddleware",
    "postorius.middleware.PostoriusMiddleware",
]
DATABASES = {{
    "default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": {db!r}}},
}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "list_index"
LOGOUT_URL = "account_logout"
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "http"
SOCIALACCOUNT_PROVIDERS = {{}}
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
STATIC_ROOT = {static!r}
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = {mail!r}
DEFAULT_FROM_EMAIL = "postorius@example.org"
SERVER_EMAIL = "postorius@example.org"
CACHES = {{"default": {{"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}}}
LOGGING = {{
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {{"console": {{"class": "logging.StreamHandler"}}}},
    "loggers": {{
        "django.request": {{"handlers": ["console"], "level": "ERROR"}},
        "postorius": {{"handlers": ["console"], "level": "WARNING"}},
    }},
}}
"""

URLS = """\
from django.contrib import admin
from django.urls import include, path, reverse_lazy
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(url=reverse_lazy("list_index"))),
    path("postorius/", include("postorius.urls")),
    path("", include("django_mailman3.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
]
"""


def postorius_venv() -> Path:
    """The virtualenv's root, with Postorius and Django; installed on first use."""
    return throwaway_venv(f"postorius-{VERSION}-{_VARIANT}", PINS)


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@dataclass
class PostoriusSite:
    """A Django project for Postorius under ``root``, pointed at one REST API."""

    venv: Path
    root: Path
    port: int = field(default_factory=free_port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mail_dir(self) -> Path:
        return self.root / "mail"

    def env(self) -> dict[str, str]:
        return dict(
            _env(),
            DJANGO_SETTINGS_MODULE="postorius_site.settings",
            PYTHONPATH=str(self.root),
        )

    def manage(self, *argv: str, timeout: float = 300) -> str:
        proc = subprocess.run(
            [str(self.venv / "bin/django-admin"), *argv],
            env=self.env(),
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"django-admin {' '.join(argv)}: {proc.stdout}{proc.stderr}")
        return proc.stdout


def write_project(
    site: PostoriusSite, api: tuple[str, str, str], db: Path, settings: str = "", urls: str = ""
) -> None:
    """Postorius's Django project (package ``postorius_site``) under ``site.root``, talking
    to the REST API ``api`` (its 3.1 root, user, password) with its database ``db``; a
    project made on it (mailman-web) adds its ``settings`` and ``urls``."""
    package = site.root / "postorius_site"
    package.mkdir(parents=True, exist_ok=True)
    site.mail_dir.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    api_url, api_user, api_pass = api
    ours = SETTINGS.format(
        api_url=api_url,
        api_user=api_user,
        api_pass=api_pass,
        base_url=site.url,
        db=str(db),
        static=str(site.root / "static"),
        mail=str(site.mail_dir),
        installed_apps=installed_apps(*APPS),
    )
    (package / "settings.py").write_text(
        ours + templates("postorius.context_processors.postorius") + settings
    )
    (package / "urls.py").write_text(URLS + urls)


def make_site(root: Path, api_url: str, api_user: str, api_pass: str) -> PostoriusSite:
    """A migrated Postorius project under ``root`` talking to the REST API at ``api_url``
    (the 3.1 root, e.g. ``http://127.0.0.1:8001``), with the superuser :data:`ADMIN_USER`."""
    site = PostoriusSite(postorius_venv(), root)
    write_project(site, (api_url, api_user, api_pass), root / "postorius.sqlite3")
    site.manage("migrate", "--noinput")
    site.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; "
        f"User.objects.create_superuser({ADMIN_USER!r}, {ADMIN_EMAIL!r}, {ADMIN_PASSWORD!r})",
    )
    return site


class PostoriusServer:
    """``django-admin runserver`` (no reloader, static files served) for ``site``."""

    def __init__(self, site: PostoriusSite) -> None:
        self.site = site
        self.log = site.root / "runserver.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PostoriusServer:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [
                    str(self.site.venv / "bin/django-admin"),
                    "runserver",
                    "--noreload",
                    "--insecure",
                    f"127.0.0.1:{self.site.port}",
                ],
                env=self.site.env(),
                cwd=self.site.root,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for_port(self.site.port, timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
