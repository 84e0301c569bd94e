"""MkDocs hook: the Reference pages, generated at every build from the code itself.

- ``reference/tools.md`` from the tool registry (every ``register(Tool(...))`` of the apps'
  ``tools.py``): name, what it may do, its description and input fields, the agent
  catalogue's name for it (``/mcp/agent``), and the internal tools; then the MCP prompts
  and resource templates (``orchestrator.web.mcp_content``).
- ``reference/settings.md`` from ``foundation.config.Settings`` (pydantic): every field's
  name, type and bounds and default, with its meaning from ``docs/_gen/settings.yml``. A
  field without an entry there, or an entry naming no field (and no other program that reads
  it), fails the build: the page cannot fall behind the code.
- ``reference/errors.md`` from the E16xx registry (``foundation.core.errors``).

The pages are not files in ``docs/``: MkDocs gets them from ``on_files``. Django is set up
(no server is contacted) because the tools register when the apps are ready.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
MEANINGS = Path(__file__).with_name("settings.yml")


def _django() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orchestrator.settings")
    # Without one, settings.py would write .data/secret_key: a docs build leaves nothing.
    os.environ.setdefault("DJANGO_SECRET_KEY", "docs-build-only")
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # no start-up lines in the build output
    import django

    django.setup()


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "anyOf" in schema or "oneOf" in schema:
        return " or ".join(_type(s) for s in schema.get("anyOf") or schema["oneOf"])
    kind = schema.get("type", "any")
    kind = " or ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and isinstance(schema.get("items"), dict):
        kind = f"array of {_type(schema['items'])}"
    bounds = []
    for key, word in (("minimum", ">="), ("maximum", "<="), ("minLength", "length >="),
                      ("maxLength", "length <="), ("maxItems", "items <=")):
        if key in schema:
            bounds.append(f"{word} {schema[key]}")
    return kind + (f" ({', '.join(bounds)})" if bounds else "")


def _first_sentence(text: str) -> str:
    """Up to the first full stop outside parentheses and braces."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "." and depth <= 0 and (i + 1 == len(text) or text[i + 1] == " "):
            return text[:i]
    return text


def tools_page() -> str:
    from foundation.core.tools.registry import internal_tools, tools
    from orchestrator.web.agent_tools import CATALOGUE

    agent_names = {entry.tool: entry.name for entry in CATALOGUE}
    public = tools()
    lines = [
        "# Tools",
        "",
        "Generated from the tool registry at every build of this site "
        "(`docs/_gen/reference.py`). Every tool is `POST /api/v1/tools/<name>/` over REST and "
        "`tools/call` over MCP at `/mcp`; the agent catalogue at `/mcp/agent` offers a few "
        "under shorter names (column *agent*). A `read` token may call only the read-only "
        "tools.",
        "",
        "| tool | kind | agent | what it does |",
        "|---|---|---|---|",
    ]
    for tool in public:
        first = _first_sentence(tool.description)
        kind = "read" if tool.read_only else "write"
        agent = f"`{agent_names[tool.name]}`" if tool.name in agent_names else ""
        lines.append(f"| [`{tool.name}`](#{tool.name}) | {kind} | {agent} | {_cell(first)} |")
    for tool in public:
        lines += ["", f"## `{tool.name}` {{#{tool.name}}}", "", tool.description.strip(), ""]
        facts = ["read-only" if tool.read_only else "writes",
                 f"invalid input: `{tool.validation_code}`"]
        if tool.database_code:
            facts.append(f"database failure: `{tool.database_code}`")
        if tool.name in agent_names:
            facts.append(f"on `/mcp/agent` as `{agent_names[tool.name]}`")
        lines += ["*" + "; ".join(facts) + "*", ""]
        properties = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        if properties:
            lines += ["| input | type | required | description |", "|---|---|---|---|"]
            for name, schema in properties.items():
                lines.append(f"| `{name}` | {_cell(_type(schema))} | "
                             f"{'yes' if name in required else ''} | "
                             f"{_cell(schema.get('description', ''))} |")
        else:
            lines.append("No input fields.")
    lines += ["", "## Internal tools", "",
              "Registered, validated, traced and metered like the others, but called only "
              "in-process (console actions, periodic jobs, management commands): not listed "
              "over MCP, REST or in the OpenAPI document, and a network client naming one "
              "gets `E1615`.", "", "| tool | what it does |", "|---|---|"]
    for tool in internal_tools():
        lines.append(f"| `{tool.name}` | {_cell(tool.description)} |")
    return "\n".join(lines + mcp_content_lines()) + "\n"


def mcp_content_lines() -> list[str]:
    """The MCP prompts and resource templates (``orchestrator.web.mcp_content``), offered on
    ``/mcp`` and ``/mcp/agent`` alike."""
    from orchestrator.web.mcp_content import PROMPTS, TEMPLATES

    lines = ["", "## MCP prompts and resources {#mcp-prompts-and-resources}", "",
             "Offered on `/mcp` and `/mcp/agent` (and `mcp_stdio`) beside the tools, for "
             "agents that have only MCP: [MCP clients](../agents/mcp.md#prompts-resources-"
             "subscriptions-progress).", "",
             "| prompt | arguments | what it gives |", "|---|---|---|"]
    for prompt in PROMPTS:
        arguments = ", ".join(f"`{a.name}`" + ("" if a.required else " (optional)")
                              for a in prompt.arguments or ())
        lines.append(f"| `{prompt.name}` | {arguments} | {_cell(prompt.description or '')} |")
    lines += ["", "| resource template | type | what it is |", "|---|---|---|"]
    for template in TEMPLATES:
        lines.append(f"| `{template.uri_template}` | {template.mime_type} | "
                     f"{_cell(template.description or '')} |")
    return lines


def _bounds(field: Any) -> str:
    import typing

    annotation = field.annotation
    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + ", ".join(f"`{v}`" for v in typing.get_args(annotation))
    kind = {int: "integer", float: "number", bool: "boolean", str: "text"}.get(
        annotation, str(annotation))
    parts = []
    for meta in field.metadata:
        for attr, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("min_length", "length >=")):
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{word} {value}")
        if getattr(meta, "pattern", None):
            parts.append(f"matching `{meta.pattern}`")
    return kind + (f", {', '.join(parts)}" if parts else "")


def _default(field: Any) -> str:
    value = field.default
    if value == "" or value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def settings_page() -> str:
    from foundation.config import _YAML_PATHS, Settings

    fields = Settings.model_fields
    groups = yaml.safe_load(MEANINGS.read_text())
    named = [name for group in groups for name in group["names"]]
    missing = [name for name in fields if name not in named]
    twice = sorted({name for name in named if named.count(name) > 1})
    unknown = [name for group in groups if "read_by" not in group
               for name in group["names"] if name not in fields]
    if missing or twice or unknown:
        raise PluginError(f"docs/_gen/settings.yml is out of step with foundation/config.py: "
                          f"no entry for {missing}, listed twice {twice}, no such field {unknown}")
    lines = [
        "# Settings",
        "",
        "Generated at every build of this site from `foundation/config.py`'s `Settings` "
        "model (name, type and bounds, default) and `docs/_gen/settings.yml` (meaning). How "
        "values are read and checked: [Configuration](../operations/configuration.md).",
        "",
        "| variable | type and bounds | default | meaning |",
        "|---|---|---|---|",
    ]
    for group in groups:
        names = group["names"]
        if "default" in group:
            default = group["default"]
        else:
            default = ", ".join(_default(fields[name]) for name in names)
        if "read_by" in group:
            kind = f"read by {group['read_by']}"
        else:
            kinds = [_bounds(fields[name]) for name in names]
            kind = kinds[0] if len(set(kinds)) == 1 else "; ".join(kinds)
        lines.append(f"| {', '.join(f'`{n}`' for n in names)} | {_cell(kind)} | "
                     f"{_cell(default)} | {_cell(group['meaning'])} |")
    lines += ["", "## The `ORCHESTRATOR_CONFIG` file", "",
              "These settings may also come from the YAML file `ORCHESTRATOR_CONFIG` names "
              "(an environment variable wins over it; `${VAR:default}` is replaced by the "
              "variable's value or the default):", "",
              "| setting | place in the file |", "|---|---|"]
    for name, keys in _YAML_PATHS.items():
        lines.append(f"| `{name}` | `{'.'.join(keys)}` |")
    return "\n".join(lines) + "\n"


def errors_page() -> str:
    from foundation.core.errors import REGISTRY

    lines = ["# Errors", "",
             "Generated from the E16xx registry (`foundation/core/errors.py`). Every error "
             "answers `{\"success\": false, \"error\": {\"code\", \"message\", \"details\"}, "
             "\"timestamp\"}` with this HTTP status; over MCP it is the `tools/call` result "
             "with `isError: true`. See [Input rules and errors]"
             "(../user-guide/input-rules.md).", "",
             "| code | name | HTTP | message |", "|---|---|---|---|"]
    for code in sorted(REGISTRY):
        entry = REGISTRY[code]
        lines.append(f"| `{entry.code}` | `{entry.name}` | {entry.http_status} | "
                     f"{_cell(entry.message)} |")
    return "\n".join(lines) + "\n"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    _django()
    for uri, build in (("reference/tools.md", tools_page),
                       ("reference/settings.md", settings_page),
                       ("reference/errors.md", errors_page)):
        files.append(File.generated(config, uri, content=build()))
    return files
