"""What the Django projects of the tests share (HyperKitty's, Postorius's and mailman-web's:
:mod:`~mtaplugin.testing.hyperkitty_venv`, :mod:`~mtaplugin.testing.postorius_venv`,
:mod:`~mtaplugin.testing.mailman_web`): the template engine with Django's and
django-mailman3's context processors, to which each project adds its app's own."""

from __future__ import annotations

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
