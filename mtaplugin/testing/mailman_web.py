"""A mailman-web style Django project for the tests (never a dependency of mtaplugin,
never imported by it): Postorius 1.3.13 and HyperKitty 1.3.12 in one project with one
SQLite database, django-allauth accounts (sign-up with a mailed confirmation link, as
mailman-web sets it up) and django-mailman3 keeping Mailman core's users in step.

No virtualenv of its own: it runs on the cached HyperKitty virtualenv
(:mod:`mtaplugin.testing.hyperkitty_venv`: Django 5.0, allauth, django-mailman3 and
mailmanclient at the same versions as Postorius's), with the cached Postorius
virtualenv's packages appended to ``sys.path`` (Postorius and its readme renderer), so
nothing new is installed.  URLs as mailman-web has them: Postorius under ``/mailman3/``,
HyperKitty under ``/archives/``, allauth under ``/accounts/``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mtaplugin.testing import free_port, wait_for_port
from mtaplugin.testing.hyperkitty_venv import hyperkitty_venv
from mtaplugin.testing.postorius_venv import postorius_venv
from mtaplugin.testing.venvs import clean_env

#: the key Mailman's archiver plugin sends HyperKitty
ARCHIVER_KEY = "suite-archiver-key"

SETTINGS = """\
import os, sys
sys.path.append({postorius_site!r})
BASE_DIR = {root!r}
SECRET_KEY = "mailman-web-test-key-0123456789abcdef"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
SITE_ID = 1
ROOT_URLCONF = "mailman_web_site.urls"
INSTALLED_APPS = [
    "hyperkitty", "postorius", "django_mailman3",
    "django.contrib.admin", "django.contrib.auth", "django.contrib.contenttypes",
    "django.contrib.sessions", "django.contrib.sites", "django.contrib.messages",
    "django.contrib.staticfiles", "django.contrib.humanize",
    "rest_framework", "django_gravatar", "compressor", "haystack", "django_extensions",
    "django_q", "allauth", "allauth.account", "allauth.socialaccount",
]
MIDDLEWARE = [
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
TEMPLATES = [{{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "DIRS": [],
    "APP_DIRS": True,
    "OPTIONS": {{"context_processors": [
        "django.template.context_processors.debug",
        "django.template.context_processors.i18n",
        "django.template.context_processors.media",
        "django.template.context_processors.static",
        "django.template.context_processors.tz",
        "django.template.context_processors.csrf",
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
        "django_mailman3.context_processors.common",
        "hyperkitty.context_processors.common",
        "postorius.context_processors.postorius",
    ]}},
}}]
DATABASES = {{"default": {{
    "ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(BASE_DIR, "mailman3web.db"),
}}}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "list_index"
LOGOUT_URL = "account_logout"
ACCOUNT_LOGIN_METHODS = {{"username", "email"}}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "http"
SOCIALACCOUNT_PROVIDERS = {{}}
MAILMAN_REST_API_URL = {core_url!r}
MAILMAN_REST_API_USER = "restadmin"
MAILMAN_REST_API_PASS = "restpass"
MAILMAN_ARCHIVER_KEY = {key!r}
MAILMAN_ARCHIVER_FROM = ("127.0.0.1", "::1")
POSTORIUS_TEMPLATE_BASE_URL = {url!r}
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
STATIC_ROOT = os.path.join(BASE_DIR, "static")
STATICFILES_FINDERS = (
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "compressor.finders.CompressorFinder",
)
COMPRESS_ENABLED = False
HAYSTACK_CONNECTIONS = {{"default": {{
    "ENGINE": "haystack.backends.whoosh_backend.WhooshEngine",
    "PATH": os.path.join(BASE_DIR, "fulltext_index"),
}}}}
Q_CLUSTER = {{"orm": "default", "timeout": 300, "retry": 600}}
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = os.path.join(BASE_DIR, "mail")
DEFAULT_FROM_EMAIL = "postorius@example.org"
SERVER_EMAIL = "postorius@example.org"
CACHES = {{"default": {{"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}}}
LOGGING = {{
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {{"console": {{"class": "logging.StreamHandler"}}}},
    "loggers": {{"django.request": {{"handlers": ["console"], "level": "ERROR"}}}},
}}
"""

URLS = """\
from django.contrib import admin
from django.urls import include, path, reverse_lazy
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(url=reverse_lazy("list_index"))),
    path("mailman3/", include("postorius.urls")),
    path("archives/", include("hyperkitty.urls")),
    path("", include("django_mailman3.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
]
"""


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


@dataclass
class MailmanWeb:
    """The project under ``root``: :meth:`make` writes and migrates it, its Django talking
    to the core's REST API at ``core_url``; ``with`` serves it on loopback."""

    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.venv = hyperkitty_venv()
        self.postorius = postorius_venv()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def archiver_url(self) -> str:
        """HyperKitty's base URL for Mailman's archiver plugin."""
        return f"{self.url}/archives/"

    @property
    def database(self) -> Path:
        return self.root / "mailman3web.db"

    @property
    def mail_dir(self) -> Path:
        """Where Django's mail goes (one file per message)."""
        return self.root / "mail"

    def env(self) -> dict[str, str]:
        return dict(
            clean_env(),
            DJANGO_SETTINGS_MODULE="mailman_web_site.settings",
            PYTHONPATH=str(self.root),
        )

    def make(self, core_url: str) -> MailmanWeb:
        package = self.root / "mailman_web_site"
        package.mkdir(parents=True, exist_ok=True)
        self.mail_dir.mkdir(exist_ok=True)
        (package / "__init__.py").write_text("")
        (package / "settings.py").write_text(
            SETTINGS.format(
                postorius_site=str(_site_packages(self.postorius)),
                root=str(self.root),
                core_url=core_url.removesuffix("/3.1"),
                key=ARCHIVER_KEY,
                url=self.url,
            )
        )
        (package / "urls.py").write_text(URLS)
        self.manage("migrate", "--noinput", "-v0")
        return self

    def manage(self, *argv: str, timeout: float = 600) -> str:
        done = subprocess.run(
            [str(self.venv / "bin/django-admin"), *argv],
            env=self.env(),
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise RuntimeError(f"django-admin {' '.join(argv)}: {done.stdout}{done.stderr}")
        return done.stdout

    def __enter__(self) -> MailmanWeb:
        with open(self.root / "runserver.log", "ab") as log:
            self.proc = subprocess.Popen(
                [str(self.venv / "bin/django-admin"), "runserver", "--noreload", "--insecure",
                 f"127.0.0.1:{self.port}"],
                env=self.env(), cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            wait_for_port(self.port, timeout=120)
        except TimeoutError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def log(self) -> str:
        path = self.root / "runserver.log"
        return path.read_text(errors="replace") if path.exists() else ""
