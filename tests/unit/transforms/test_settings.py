"""site.secret_key is checked like every other setting."""

from __future__ import annotations

import pytest

from mtaplugin.config import load
from mtaplugin.errors import ConfigError


def test_a_short_secret_key_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError) as err:
        load(None, {"MTAPLUGIN_SITE_SECRET_KEY": "short"})
    assert "site.secret_key" in str(err.value)


def test_a_long_secret_key_is_taken() -> None:
    assert load(None, {"MTAPLUGIN_SITE_SECRET_KEY": "s" * 32}).site.secret_key == "s" * 32
    assert load(None, {}).site.secret_key == ""
