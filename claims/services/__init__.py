"""Live file claims: who is editing which file of a project now.

A session claims a path when it is about to edit it (the Claude Code hook's check before
Edit/Write/MultiEdit/NotebookEdit), when its activity reports an edit, or by calling
``claim_files``. Paths are relative to the repository's root, so two clones or worktrees
of one repository name a file the same way. A claim is *held* while its session is live
(status active or compacted and a heartbeat younger than CRASH_THRESHOLD_MINUTES: the
watchdog keeps a working Claude Code session beating), it is not released, and its TTL
since the session last touched the path has not run out; an expired claim of a live
session is *recently held* for FILE_CLAIM_RECENT_SECONDS more. A session that ends or
crashes holds nothing from that moment: every query joins the session's row.

Claiming a path that another live session on another task holds or recently held:

- policy ``warn`` (the project's, ``claims.policy``): the claim is made and the answer
  carries a warning (who, which task, how long ago, what that task is doing) for the
  claimant's model; said once per other session and path;
- policy ``block``: nothing is claimed and the answer is ``blocked`` with the reason;
- a *held* claim of another task is a file_conflict at once: both tasks list the path in
  keyFiles and the detector's own query stores what it finds for the pair (its rules,
  severity and de-duplication), and the other session gets a notice for its next hook
  answer (``sessions.services.notices``).

Sessions of the same task, and a session's own claims, never warn. Every warning, notice
and block is an event in the session's log and counts in file_claim_checks_total.

Two agents claiming one path at the same moment are serialised by a transaction-level
advisory lock per (project, path), so one of them always sees the other.

The package, by job: ``claimants`` (who is claiming), ``holders`` (who else holds a
path), ``claiming`` (the check before an edit, release, renewal by a flush), ``overlaps``
(file conflicts recorded off the claim's path), ``messages`` (what the agents are told)
and ``queries`` (reading claims). Callers import from those modules.
"""
