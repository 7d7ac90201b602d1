"""How a settings field says what parses it: ``metadata=parse(PARSER)``, a parser of
:mod:`mtaplugin.config.values`; without one, the kind of the default decides."""

from __future__ import annotations

import dataclasses
from typing import Any

from mtaplugin.config import values as v

_BY_KIND: dict[type, v.Parser] = {bool: v.boolean, int: v.integer, float: v.number, str: v.text}


def parse(parser: v.Parser) -> dict[str, v.Parser]:
    """A field's metadata: ``parser`` turns its raw value into its type."""
    return {"parse": parser}


def parser_of(fld: dataclasses.Field[Any]) -> v.Parser:
    found = fld.metadata.get("parse")
    if found is not None:
        parse: v.Parser = found
        return parse
    return _BY_KIND[type(fld.default)]
