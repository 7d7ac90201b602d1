"""``docs/reference/rest.md``: every REST path and method, from the API's route table,
with the form fields the OpenAPI description names."""

from __future__ import annotations

from typing import Any

from mtaplugin.docs.markdown import header, row


def rest_routes() -> list[tuple[str, list[str], dict[str, Any]]]:
    """(path, methods, the OpenAPI operations) of every route, in the table's order."""
    from mtaplugin.api.openapi import describe
    from mtaplugin.api.routes import routes
    from mtaplugin.config import Settings

    paths: dict[str, Any] = describe(routes(Settings()), "")["paths"]
    return [(path, [m.upper() for m in ops], ops) for path, ops in paths.items()]


def rest_page() -> str:
    out = [
        header("REST API routes", "the route table of `mtaplugin/api/routes.py`"),
        "Every path is served under `/3.1` and `/3.0`, with HTTP Basic credentials; "
        "`/3.1/openapi.json` describes the same table. What the API does, its dialect and "
        "its security: [../rest.md](../rest.md). Form fields in **bold** are required.\n",
        row("Path", "Methods", "Form fields"),
        "|---|---|---|",
    ]
    for path, methods, ops in rest_routes():
        fields = []
        for method, op in ops.items():
            body = op.get("requestBody")
            if body is None:
                continue
            schema = body["content"]["application/x-www-form-urlencoded"]["schema"]
            required = set(schema["required"])
            names = [f"**{n}**" if n in required else n for n in schema["properties"]]
            fields.append(f"{method.upper()}: " + ", ".join(names))
        out.append(row(f"`{path}`", ", ".join(methods), "; ".join(fields)))
    return "\n".join(out) + "\n"
