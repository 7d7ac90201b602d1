"""What the Django projects of the tests share (HyperKitty's, Postorius's and mailman-web's:
:mod:`~mtaplugin.testing.hyperkitty_venv`, :mod:`~mtaplugin.testing.postorius_venv`,
:mod:`~mtaplugin.testing.mailman_web`): the template engine with Django's and
django-mailman3's context processors, to which each project adds its app's own, and
Django's own apps among the project's."""

from __future__ import annotations

from collections.abc import Sequence

#: Django's own apps every project here installs
_DJANGO_APPS = (
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.sites",
    "django.contrib.messages",
    "django.contrib.staticfiles",
)

_TEMPLATES = """\
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
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
            ],
        },
    },
]
"""


def templates(*context_processors: str) -> str:
    """The ``TEMPLATES`` setting, with the apps' ``context_processors`` after the shared ones."""
    added = "".join(
        f'TEMPLATES[0]["OPTIONS"]["context_processors"].append({p!r})\n' for p in context_processors
    )
    return _TEMPLATES + added


def installed_apps(first: Sequence[str], then: Sequence[str] = ()) -> str:
    """The ``INSTALLED_APPS`` setting: ``first`` (the project's own apps, whose templates
    win over Django's), Django's own apps, then ``then``."""
    apps = "".join(f"    {app!r},\n" for app in (*first, *_DJANGO_APPS, *then))
    return f"INSTALLED_APPS = [\n{apps}]\n"
