"""The JSON documents gradviz writes for users, their version stamp and their JSON Schemas.

Every top-level document (``gradviz check|sweep|memory|graph --json``, the error object, a
``report.json``, a ``.gradviz`` session) starts with ``schema_version`` and ``gradviz_version``,
so a script can tell which layout it reads. ``SCHEMA_VERSION`` goes up when a field changes
meaning or goes away (new fields may appear within a version). The schemas (JSON Schema draft
2020-12) ship in ``gradviz/schema/json/``; ``load("check")`` reads one. The worker protocol is
internal and unstamped (both of its ends are always the same gradviz); its requests' schema ships
beside the documents' for the typed requests of ``gradviz.schema.requests``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from gradviz._version import __version__

SCHEMA_VERSION = 1
SCHEMAS = ("check", "sweep", "memory", "graph", "error", "request")
ALIASES = {"report": "check"}  # report.json is the check document (plus where its arrays are)


def stamp(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with ``schema_version`` and ``gradviz_version`` first."""
    return {"schema_version": SCHEMA_VERSION, "gradviz_version": __version__, **document}


def load(name: str) -> dict[str, Any]:
    """The JSON Schema of one document: ``check`` (also ``report.json``), ``sweep``, ``memory``,
    ``graph``, ``error``, or ``request`` (a worker request: ``gradviz.schema.requests``)."""
    name = ALIASES.get(name, name)
    if name not in SCHEMAS:
        raise ValueError(f"No schema named {name!r}; the schemas are {', '.join(SCHEMAS)}.")
    text = resources.files("gradviz.schema").joinpath("json", f"{name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
