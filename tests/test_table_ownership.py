"""Tables owned like modules: every table has one owning app, only the owner writes it, and a
read of another app's table goes through the owner's read function. Checked over the code and
the migrations of every server package (foundation, orchestrator, the apps, console):

- raw SQL, found in string literals and f-strings, whose table names are resolved the way the
  code builds them (``qualified("x")``, ``Model._meta.db_table``, ``connection.ops.quote_name``,
  module constants, table-returning helpers, names imported from other modules);
  writes are INSERT INTO / UPDATE / DELETE FROM / TRUNCATE / COPY ... FROM, reads FROM / JOIN,
  and a trigger a migration puts ON a table reads it;
- ORM writes: ``Model.objects....create/update/delete/bulk_create/...`` and ``.save()`` /
  ``.delete()`` on a name bound to an instance of the model in the same function.

What crosses an owner's line anyway is in ``EXCEPTIONS`` with its reason; an entry nothing
needs any more fails too, so the list stays honest. The architecture page's table owners
table and this map are the same (checked below)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("foundation", "orchestrator", "console", "claims", "conflicts", "contexts", "graph",
            "locks", "sessions")

# Tables created by raw SQL in a migration with no model, and their owning app's package.
RAW_TABLES = {"storage_usage": "contexts"}

WRITE_METHODS = {"create", "update", "delete", "bulk_create", "bulk_update", "get_or_create",
                 "update_or_create", "save"}

# (file, table, "read" | "write") -> why the owner's line is crossed. A read is listed when
# one statement across tables is the point (a hot path keeps its round trip, a join the
# database plans at once) and the speed twins of docs/architecture/index.md name it.
EXCEPTIONS: dict[tuple[str, str, str], str] = {
    ("contexts/migrations/0004_project_scope.py", "projects", "write"):
        "a data migration already applied (a project row for each project id in use when projects "
        "arrived); migrations are frozen history",
    ("graph/migrations/0003_graph_outbox.py", "task_contexts", "read"):
        "graph's outbox triggers sit ON the tables the mirror shows: a change queues its outbox "
        "row in the writer's transaction, whoever writes; the triggers write only graph_outbox",
    ("graph/migrations/0003_graph_outbox.py", "active_sessions", "read"):
        "graph's outbox trigger ON the sessions table (as for task_contexts)",
    ("claims/services/claimants.py", "active_sessions", "read"):
        "the claimant row (session, detail, the project's edit policy) in one statement, one "
        "round trip on a hot path (claims check)",
    ("claims/services/claimants.py", "agent_sessions_sessiondetail", "read"):
        "as active_sessions: the claimant's agent and pause state in the same statement",
    ("claims/services/claimants.py", "global_context", "read"):
        "as active_sessions: the project's edit policy in the same statement",
    ("claims/services/claiming.py", "active_sessions", "read"):
        "the claim at once (claims check): one statement, one round trip on a hot path; a twin of "
        "the long way (docs/architecture twins list)",
    ("claims/services/claiming.py", "agent_sessions_sessiondetail", "read"):
        "as active_sessions, in the claim at once",
    ("claims/services/claiming.py", "agent_sessions_sessionnotice", "read"):
        "as active_sessions, in the claim at once: notices waiting are returned with the claim",
    ("claims/services/claiming.py", "global_context", "read"):
        "as active_sessions, in the claim at once: the edit policy still the one cached",
    ("claims/services/holders.py", "active_sessions", "read"):
        "who else holds a path: live holders joined with their session, detail and task in one "
        "query per claim check",
    ("claims/services/holders.py", "agent_sessions_sessiondetail", "read"):
        "as active_sessions in the holders query",
    ("claims/services/holders.py", "task_contexts", "read"):
        "as active_sessions in the holders query (the holder's task name)",
    ("claims/services/overlaps.py", "agent_sessions_sessiondetail", "read"):
        "an overlap is recorded with the holders' agents in the statement that takes the pending "
        "overlaps",
    ("claims/services/retention.py", "active_sessions", "read"):
        "a spent claim is one whose session is over or gone: the DELETE re-checks it row by row",
    ("conflicts/services/detection.py", "task_contexts", "read"):
        "file-overlap detection is one aggregate over every task's key files (~100k rows): per- "
        "task reads through contexts would be thousands of round trips",
    ("conflicts/services/detection.py", "context_versions", "read"):
        "as task_contexts: the versions compared in the same detection query",
    ("console/services/overview.py", "active_sessions", "read"):
        "the console overview is one read-only statement over the apps' tables per panel",
    ("console/services/overview.py", "agent_sessions_sessionevent", "read"):
        "as active_sessions (the overview)",
    ("console/services/overview.py", "agent_sessions_toolinvocation", "read"):
        "as active_sessions (the overview)",
    ("console/services/overview.py", "context_versions", "read"):
        "as active_sessions (the overview)",
    ("orchestrator/web/metrics.py", "active_sessions", "read"):
        "a Prometheus scrape: read-only gauges, one aggregate statement each, from above every "
        "app",
    ("orchestrator/web/metrics.py", "context_conflicts", "read"):
        "as active_sessions (the scrape)",
    ("orchestrator/web/metrics.py", "context_versions", "read"):
        "as active_sessions (the scrape)",
    ("orchestrator/web/metrics.py", "file_claims", "read"):
        "as active_sessions (the scrape)",
    ("orchestrator/web/metrics.py", "task_contexts", "read"):
        "as active_sessions (the scrape)",
    ("contexts/services/checkpoint_list.py", "active_sessions", "read"):
        "does a named session exist (a checkpoint's filter); contexts sits below sessions and "
        "cannot call its reader",
    ("contexts/services/projects.py", "active_sessions", "read"):
        "list_projects: each project with its task count, live sessions and active task in one "
        "statement; contexts sits below sessions",
    ("contexts/services/projects.py", "projects", "read"):
        "as active_sessions: the project rows in the same listing statement",
    ("contexts/services/tasks.py", "projects", "read"):
        "create_task is one statement: the task is inserted only if its project exists, the "
        "check and the insert in one round trip (a creating start_session's hot path)",
    ("contexts/services/retention.py", "context_conflicts", "read"):
        "an open conflict protects its tasks' versions: each pruning DELETE re-applies the rule "
        "in the same statement, so a conflict opened during a run still protects them",
    ("contexts/services/unified.py", "context_conflicts", "read"):
        "the hot context read (get_context, the bundle) is one statement, one round trip on a hot "
        "path; contexts sits below conflicts",
    ("contexts/services/unified.py", "task_relationships", "read"):
        "as context_conflicts: the task's direct edges in the same hot read; contexts sits below "
        "graph",
    ("contexts/services/write.py", "locks_task_lock_hint", "read"):
        "save_context_snapshot loads the task with may_be_locked (a current lock hint) in one "
        "statement, one round trip on a hot path",
    ("graph/readers/postgres.py", "task_contexts", "read"):
        "the Postgres graph backend: recursive CTEs over relationships joined with the tasks they "
        "link, one statement per answer",
    ("graph/readers/postgres.py", "active_sessions", "read"):
        "as task_contexts: sessions and their work in the same graph answer",
    ("graph/readers/postgres.py", "agent_sessions_sessionwork", "read"):
        "as task_contexts: who works on a task in the same graph answer",
    ("locks/services.py", "task_contexts", "read"):
        "a lock hint records the task's project in the statement that writes it (it must commit "
        "before the Redis lock exists); locks sits below contexts",
    ("sessions/services/activity.py", "task_contexts", "read"):
        "record_activity: tool uses, heartbeat and the edited paths the task does not list yet in "
        "one statement, one round trip on a hot path",
    ("sessions/services/agent_context.py", "task_contexts", "read"):
        "resolve_task picks a session's task (branch, active, created) in one statement at start",
    ("sessions/services/agent_context.py", "global_context", "read"):
        "as task_contexts (the project's active task)",
    ("sessions/services/agent_context.py", "projects", "read"):
        "as task_contexts (the project must exist)",
    ("sessions/services/lifecycle.py", "task_contexts", "read"):
        "start_session is one statement (work is recorded only on a task of the session's "
        "project) and a heartbeat checks its task in its UPDATE",
    ("sessions/services/lifecycle.py", "context_versions", "read"):
        "end_session's one statement counts the tasks the session changed",
    ("sessions/services/pause.py", "task_contexts", "read"):
        "tasks of the session's project completed since the pause, one join",
    ("sessions/services/recovery.py", "task_contexts", "read"):
        "crash sweep and recovery: a crashed session's snapshot is taken inside its UPDATE",
    ("sessions/services/recovery.py", "context_versions", "read"):
        "as task_contexts: the versions the crashed session wrote, in the same statement",
    ("sessions/services/work.py", "task_contexts", "read"):
        "orphaned work (check_recovery, console, graph): the one query every page asks joins "
        "work, sessions and tasks",
}


@dataclass(frozen=True)
class Use:
    path: str
    line: int
    table: str
    kind: str  # "read" or "write"


def ownership() -> dict[str, str]:
    """Table name (without schema) -> the package path of the app that owns it."""
    from django.apps import apps

    owners: dict[str, str] = {}
    for config in apps.get_app_configs():
        package = Path(config.path).resolve()
        # Only this project's apps: a virtualenv inside the checkout holds Django's own.
        if not package.is_relative_to(ROOT) or "site-packages" in package.parts:
            continue
        for model in config.get_models(include_auto_created=True):
            table = model._meta.db_table.split('"."')[-1].strip('"')
            owners[table] = package.relative_to(ROOT).as_posix()
    owners.update(RAW_TABLES)
    return owners


def owner_of_file(path: str, owners: dict[str, str]) -> str | None:
    packages = sorted(set(owners.values()), key=len, reverse=True)
    return next((p for p in packages if path == p or path.startswith(p + "/")), None)


# --- resolving the names code builds table names with -------------------------------------

def _models() -> dict[str, str]:
    from django.apps import apps

    return {model.__name__: model._meta.db_table.split('"."')[-1].strip('"')
            for model in apps.get_models(include_auto_created=True)}


class Module:
    """One parsed file: its assignments and table-returning functions, and its imports."""

    def __init__(self, path: Path, index: dict[str, Module], source: str | None = None):
        self.path = path
        self.tree = ast.parse(path.read_text() if source is None else source, str(path))
        self.index = index
        self.assigned: dict[str, list[ast.expr]] = {}
        self.returns: dict[str, list[ast.expr]] = {}
        self.imports: dict[str, tuple[str, str | None]] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                self.assigned.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, ast.FunctionDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Return) and sub.value is not None:
                        self.returns.setdefault(node.name, []).append(sub.value)
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.module, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports[alias.asname or alias.name.split(".")[0]] = (alias.name, None)

    def imported(self, name: str) -> tuple[Module | None, str | None]:
        if name not in self.imports:
            return None, None
        module, attribute = self.imports[name]
        if attribute is not None:
            target = self.index.get(f"{module}.{attribute}")
            if target is not None:
                return target, None
            return self.index.get(module), attribute
        return self.index.get(module), None


def tables_of(expr: ast.expr | None, module: Module, models: dict[str, str],
              known: set[str], depth: int = 0) -> set[str]:
    """The tables an expression can name (empty when it names none that is known)."""
    if expr is None or depth > 6:
        return set()
    again = lambda e, m=module: tables_of(e, m, models, known, depth + 1)  # noqa: E731
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        name = expr.value.split('"."')[-1].split(".")[-1].strip('"')
        return {name} if name in known else set()
    if isinstance(expr, ast.JoinedStr):
        found: set[str] = set()
        for part in expr.values:
            if isinstance(part, ast.Constant):
                found |= again(part)
            elif isinstance(part, ast.FormattedValue):
                found |= again(part.value)
        return found
    if isinstance(expr, ast.Attribute):
        # Model._meta.db_table, apps.get_model("label", "Model")._meta.db_table
        if expr.attr == "db_table" and isinstance(expr.value, ast.Attribute):
            owner = expr.value.value
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute) \
                    and owner.func.attr == "get_model" and len(owner.args) == 2 \
                    and isinstance(owner.args[1], ast.Constant):
                owner = ast.Name(str(owner.args[1].value))
            table = models.get(owner.id) if isinstance(owner, ast.Name) else None
            return {table} if table else set()
        # module.NAME
        if isinstance(expr.value, ast.Name):
            target, _ = module.imported(expr.value.id)
            if target is not None:
                return {t for value in target.assigned.get(expr.attr, [])
                        for t in tables_of(value, target, models, known, depth + 1)}
        return set()
    if isinstance(expr, ast.Call):
        function = expr.func
        if isinstance(function, ast.Attribute) and function.attr == "quote_name" and expr.args:
            return again(expr.args[0])
        name = function.id if isinstance(function, ast.Name) else None
        if name in ("qualified", "spec_table") and expr.args:
            return again(expr.args[0])
        if name is not None:
            if name in module.returns:
                return {t for value in module.returns[name] for t in again(value)}
            target, attribute = module.imported(name)
            if target is not None and attribute in target.returns:
                return {t for value in target.returns[attribute]
                        for t in tables_of(value, target, models, known, depth + 1)}
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
            target, _ = module.imported(function.value.id)
            if target is not None and function.attr in target.returns:
                return {t for value in target.returns[function.attr]
                        for t in tables_of(value, target, models, known, depth + 1)}
        return set()
    if isinstance(expr, ast.Name):
        if expr.id in module.assigned:
            return {t for value in module.assigned[expr.id] for t in again(value)}
        target, attribute = module.imported(expr.id)
        if target is not None and attribute is not None:
            return {t for value in target.assigned.get(attribute, [])
                    for t in tables_of(value, target, models, known, depth + 1)}
    return set()


# --- raw SQL -------------------------------------------------------------------------------

_REF = r'(?:"?(?:\w+|<[^>]*>|\{\w+\})"?\.)?"?(\w+|<[^>]*>)"?'
_STATEMENT = re.compile(
    r"\b(?P<kind>INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE(?:\s+TABLE)?(?:\s+ONLY)?|COPY"
    r"|FROM|JOIN|ON)\s+(?=" + _REF + ")", re.I)
_WRITES = ("INSERT", "UPDATE", "DELETE", "TRUNCATE", "COPY")


def sql_text(node: ast.expr, module: Module, models: dict[str, str],
             known: set[str]) -> str | None:
    """A string literal or f-string as SQL text, each interpolated table as <table>."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue):
                tables = tables_of(part.value, module, models, known)
                parts.append(f"<{'|'.join(sorted(tables))}>")
        return "".join(parts)
    return None


def template_text(call: ast.Call, module: Module, models: dict[str, str],
                  known: set[str]) -> str | None:
    """``TEMPLATE.format(name=...)``: the template with each named table as <table>."""
    template = call.func.value  # type: ignore[attr-defined]
    if isinstance(template, ast.Name) and template.id in module.assigned:
        template = module.assigned[template.id][0]
    text = sql_text(template, module, models, known)
    if text is None:
        return None
    for keyword in call.keywords:
        if keyword.arg:
            tables = tables_of(keyword.value, module, models, known)
            text = text.replace("{" + keyword.arg + "}", f"<{'|'.join(sorted(tables))}>")
    return text


def sql_uses(text: str, path: str, line: int, known: set[str], migration: bool) -> list[Use]:
    uses = []
    for match in _STATEMENT.finditer(text):
        word = match["kind"].split()[0].upper()
        if word == "ON" and not (migration and re.search(r"TRIGGER\b[^;]*$",
                                                          text[:match.start()], re.I)):
            continue  # ON of a join condition; ON of CREATE TRIGGER is a read of its table
        if word == "UPDATE" and re.search(r"(AFTER|BEFORE|OR|FOR|OF|DO|KEY)\s*$",
                                          text[:match.start()], re.I):
            continue  # a trigger's event, ON CONFLICT DO UPDATE, FOR UPDATE: not a table
        if word == "COPY" and not re.search(r"\bFROM\b", text[match.end():match.end() + 200],
                                            re.I):
            word = "FROM"  # COPY ... TO reads
        ref = match.group(2)
        tables = ref[1:-1].split("|") if ref.startswith("<") else [ref]
        kind = "write" if word in _WRITES else "read"
        uses += [Use(path, line, table, kind) for table in tables if table in known]
    return uses


# --- ORM writes ----------------------------------------------------------------------------

def _root_model(node: ast.expr, models: dict[str, str]) -> str | None:
    """The model a call chain starts from: Model(...), Model.objects...., Model.method(...)."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            break
    return node.id if isinstance(node, ast.Name) and node.id in models else None


def _chain(node: ast.expr) -> list[str]:
    names = []
    while isinstance(node, ast.Call | ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    return names


def orm_writes(module: Module, path: str, models: dict[str, str]) -> list[Use]:
    uses = []
    imported = {name for name in module.imports if name in models}
    defined = {node.name for node in ast.walk(module.tree) if isinstance(node, ast.ClassDef)}
    models_here = imported | (defined & set(models))
    for function in [module.tree] + [n for n in ast.walk(module.tree)
                                     if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]:
        instances: dict[str, str] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                model = _root_model(node.value, models)
                if model in models_here and "values" not in _chain(node.value) \
                        and "values_list" not in _chain(node.value):
                    instances[node.targets[0].id] = model
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method = node.func.attr
            if method not in WRITE_METHODS:
                continue
            model = _root_model(node.func.value, models)
            if model in models_here and ("objects" in _chain(node.func.value) or method != "save"):
                if "objects" in _chain(node.func.value) or isinstance(node.func.value, ast.Name):
                    uses.append(Use(path, node.lineno, models[model], "write"))
            elif isinstance(node.func.value, ast.Name) and node.func.value.id in instances \
                    and method in ("save", "delete"):
                uses.append(Use(path, node.lineno, models[instances[node.func.value.id]],
                                "write"))
    return uses


# --- the scan ------------------------------------------------------------------------------

def scan(extra: dict[str, str] | None = None) -> list[Use]:
    """Every use of a known table in the server packages' code and migrations; ``extra``
    (path -> source) adds planted files for the self-check."""
    owners = ownership()
    known = set(owners)
    models = _models()
    files = {path.relative_to(ROOT).as_posix(): path
             for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}
    index: dict[str, Module] = {}
    for relative, path in files.items():
        name = relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        index[name] = Module(path, index)
    planted = {relative: Module(ROOT / relative, index, source)
               for relative, source in (extra or {}).items()}
    uses: list[Use] = []
    modules = {rel: index[rel.removesuffix(".py").removesuffix("/__init__").replace("/", ".")]
               for rel in files} | planted
    for relative, module in modules.items():
        migration = "/migrations/" in relative
        docstrings = {id(node.value) for node in ast.walk(module.tree)
                      if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
        for node in ast.walk(module.tree):
            if id(node) in docstrings:
                continue
            if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant)
                                                   and isinstance(node.value, str)):
                text = sql_text(node, module, models, known)
                if text:
                    uses += sql_uses(text, relative, node.lineno, known, migration)
                if migration and isinstance(node, ast.Constant) and node.value in known:
                    # A migration naming a table builds SQL on it (a trigger of its own).
                    uses.append(Use(relative, node.lineno, node.value, "read"))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "format" and node.keywords:
                text = template_text(node, module, models, known)
                if text:
                    uses += sql_uses(text, relative, node.lineno, known, migration)
        uses += orm_writes(module, relative, models)
    return sorted(set(uses), key=lambda u: (u.path, u.line, u.table, u.kind))


def crossings(uses: list[Use]) -> dict[tuple[str, str, str], list[int]]:
    """(file, table, kind) -> lines, for each use of a table outside its owner."""
    owners = ownership()
    found: dict[tuple[str, str, str], list[int]] = {}
    for use in uses:
        if owner_of_file(use.path, owners) == owners[use.table]:
            continue
        found.setdefault((use.path, use.table, use.kind), []).append(use.line)
    return found


def test_every_table_has_one_owner():
    owners = ownership()
    assert {"task_contexts", "active_sessions", "file_claims", "graph_outbox",
            "orchestrator_session_owner", "storage_usage"} <= set(owners)
    assert set(owners.values()) == {"foundation/core", "locks", "contexts", "sessions", "conflicts",
                                    "claims", "graph"}


def test_only_the_owner_writes_and_reads_its_tables():
    found = crossings(scan())
    unlisted = {key: lines for key, lines in found.items() if key not in EXCEPTIONS}
    assert not unlisted, "\n".join(f"{path}:{lines} {kind}s {table}"
                                   for (path, table, kind), lines in sorted(unlisted.items()))
    stale = set(EXCEPTIONS) - set(found)
    assert not stale, f"exceptions nothing needs any more: {sorted(stale)}"


def test_the_check_can_fail():
    """Planted writes and reads of another app's table are found, however the name is built."""
    planted = {"locks/planted.py": '''
from django.db import connection
from claims.models import FileClaim
from sessions.services.common import sessions_table
from foundation.core.db import qualified
from foundation.core.models import SessionOwner

CLAIMS = FileClaim._meta.db_table

def write():
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {CLAIMS} WHERE true")
        cursor.execute(f"UPDATE {sessions_table()} SET status = 'x'")
        cursor.execute(f'INSERT INTO {qualified("task_contexts")} (id) VALUES (1)')
        cursor.execute(f"SELECT 1 FROM {connection.ops.quote_name('graph_outbox')}")
    SessionOwner.objects.filter(session_id="s").delete()
    owner = SessionOwner(session_id="s")
    owner.save()
''', "contexts/migrations/9999_planted.py": '''
SQL = """CREATE FUNCTION f() RETURNS TRIGGER AS $$ BEGIN
  INSERT INTO file_claims (id) VALUES (1); RETURN NEW; END $$ LANGUAGE plpgsql;
CREATE TRIGGER t AFTER UPDATE ON "{S}".active_sessions FOR EACH ROW EXECUTE FUNCTION f();"""
'''}
    found = {(path, table, kind) for (path, table, kind) in crossings(scan(planted))
             if "planted" in path}
    assert found == {
        ("locks/planted.py", "file_claims", "write"),
        ("locks/planted.py", "active_sessions", "write"),
        ("locks/planted.py", "task_contexts", "write"),
        ("locks/planted.py", "graph_outbox", "read"),
        ("locks/planted.py", "orchestrator_session_owner", "write"),
        ("contexts/migrations/9999_planted.py", "file_claims", "write"),
        ("contexts/migrations/9999_planted.py", "active_sessions", "read"),
    }, found


def test_the_architecture_page_lists_the_owners():
    """The table owners table of docs/architecture/index.md is the map built here."""
    page = (ROOT / "docs" / "architecture" / "index.md").read_text()
    section = page[page.index("## Table owners"):]
    section = section[:section.index("\n## ", 1)]
    listed: dict[str, str] = {}
    for line in section.splitlines():
        cells = line.split("|")
        if not line.startswith("| `") or len(cells) < 3:
            continue
        names = re.findall(r"`([^`]+)`", cells[1])
        if not names or not re.fullmatch(r"[\w.]+", names[0]):
            continue
        package = names[0].replace(".", "/")
        for table in re.findall(r"`((?:<schema>(?:_internal)?\.)?\w+)`", cells[2]):
            listed[table.split(".")[-1]] = package
    owners = {table: package for table, package in ownership().items()}
    assert listed == owners
