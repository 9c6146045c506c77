"""The ``status`` and ``why`` reports, as (title, columns, rows) tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from context_builder import SECTION_TAGS, digest_item_text, hint_plan_text, retrieved_text
from memora.core.text_utils import quoted, shorten
from memora.core.timeutil import time_ago

if TYPE_CHECKING:
    from memora.app.assistant import Memora

Table = tuple[str, list[str], list[list[str]]]


def status_rows(app: Memora) -> list[Table]:
    settings = app.settings
    store = app.store
    cap = store.memory_cap
    model_state = (
        settings.model
        if app.model.configured
        else f"{settings.model} (not configured: set OPENAI_API_KEY or OPENAI_BASE_URL)"
    )
    model = app.model
    shutdown = model.shutdown()
    if shutdown is not None:
        model_state += f" (OpenAI announced its shutdown for {shutdown.isoformat()})"
    embedding = app.embedder.name
    missing = store.check_vectors()
    waiting = 0 if missing else store.count(without_vectors=True)
    if store.mismatch:
        embedding += f" (store built with {store.mismatch}: type 'reindex')"
    elif app.switch_to is not None:
        embedding += f" (the store's model; set to {app.switch_to.name}: 'reindex' switches)"
    general = [
        ["learner", settings.user],
        ["model", model_state],
        ["model endpoint", settings.base_url or ("api.openai.com" if settings.api_key else "-")],
    ]
    if model.configured:
        stats = model.structured
        general += [
            ["server", model.server.describe()],
            ["background role", model.background_role.describe()],
            ["reasoning effort", model.reasoning_line()],
            ["context window", model.context_line()],
            [
                "structured answers",
                f"{stats.answers} this session, {stats.repaired} needed a repair request"
                + (f", {stats.failed} still failed" if stats.failed else ""),
            ],
        ]
    general += [
        ["embedding model", embedding],
        ["token counting", app.counter.encoding_name],
        ["data folder", str(settings.data_dir)],
        ["profile", str(app.paths.profile)],
        ["session", str(app.paths.session)],
        ["mistake ledger", str(app.paths.mistakes)],
        ["activity log", str(app.paths.activity)],
        ["memory store", app.connection.location],
        [
            "memories",
            f"{store.count()} current, {store.count(include_superseded=True)} with history"
            + (f", cap {cap}" if cap else "")
            + ("; vectors missing: type 'reindex' to rebuild them" if missing else "")
            + (f"; {waiting} not searchable until the local embedding model is here" if waiting else ""),
        ],
    ]
    if missing:
        general.append(["vectors missing", missing])
    from memora.cli.page import open_pairs

    conflicts = len(open_pairs(app))
    general.append(["conflicts", f"{conflicts} open" + (" (see 'page')" if conflicts else "")])
    memory = app.memory
    budget = memory.budget
    last = memory.last_request or {}
    sections = last.get("sections") or {}
    caps = {
        "instructions": "-",
        "background": budget.background,
        "summary": budget.summary,
        "recent": budget.recent,
        "current": "-",
    }
    budget_rows = [
        [name, str(sections.get(name, "-")), str(caps[name])]
        for name in ("instructions", "background", "summary", "recent", "current")
    ]
    budget_rows.append(["total", str(last.get("total", "-")), str(budget.total)])
    usage = memory.usage
    pending = app.worker.pending
    extraction_state = f"{usage.extraction}"
    usage_rows = [
        ["chat", str(usage.chat)],
        [
            "embeddings" + (" (local model, no API cost)" if app.embedder.name.startswith("local:") else ""),
            str(usage.embeddings),
        ],
        ["summaries", str(usage.summaries)],
        ["extraction", extraction_state],
        ["review grading", str(usage.grading)],
        ["total", str(usage.total)],
    ]
    extraction_rows = [
        ["queued", str(pending)],
        ["failures this session", str(app.turn.extraction_failures)],
        ["last failure", app.turn.extraction_error or "none"],
        ["items set aside or relabelled this session", str(len(app.turn.extraction_skipped))],
    ]
    if app.turn.extraction_skipped:
        skipped = app.turn.extraction_skipped[-1]
        extraction_rows.append(["last skipped", f"{skipped.kind} {quoted(skipped.text, 60, end=':')} {skipped.reason}"])
    return [
        ("Memora", ["setting", "value"], general),
        ("Token budget (last request)", ["section", "tokens", "limit"], budget_rows),
        ("Session token usage", ["spent on", "tokens"], usage_rows),
        ("Memory extraction", ["item", "value"], extraction_rows),
    ]


def why_report(app: Memora) -> list[Table]:
    prepared = app.turn.last_prepared
    if prepared is None:
        return [("Why", ["note"], [["No chat request has been made in this session yet."]])]
    background = prepared.background
    now = background.now or app.clock()
    tokens = background.section_tokens(app.counter)
    section_rows = [[tag, str(tokens.get(tag, 0))] for tag in SECTION_TAGS if tag in tokens]
    section_rows.append(["(whole request)", f"{prepared.total_tokens} of {prepared.budget}"])
    tables: list[Table] = [("Sections of the last background", ["section", "tokens"], section_rows)]
    choice = app.model.background_role
    tables.append(("Sent as", ["role", "why"], [[background.role, choice.reason]]))
    if not background.has_data:
        sent = "only the current local time was sent" if background.clock else "no background message was sent"
        tables.append(("Background", ["note"], [[f"({sent})"]]))
        return tables
    profile_rows = [[line.removeprefix("- ")] for line in background.profile_lines()]
    if profile_rows:
        tables.append(("Profile", ["line"], profile_rows))
    if background.digest:
        # as the model read it: dates, resolved time phrases and "Learner said" included
        tables.append(
            (
                "About you (digest)",
                ["category", "memory"],
                [[d.category, digest_item_text(d, now)] for d in background.digest],
            )
        )
    if background.mistakes:
        tables.append(
            ("Mistakes to watch", ["line"], [[line.removeprefix("- ")] for line in background.mistake_lines()])
        )
    if background.hint is not None:
        tables.append(
            (
                "Follow-up hint",
                ["memory", "said", "text"],
                [
                    [
                        background.hint.memory_id,
                        time_ago(background.hint.said_at, now),
                        hint_plan_text(background.hint, now),
                    ]
                ],
            )
        )
    if background.knowledge:
        tables.append(
            (
                "Knowledge notes",
                ["score", "note", "text"],
                [[f"{k.score:.3f}", f"{k.source} › {k.title}", shorten(k.text, 80)] for k in background.knowledge],
            )
        )
    if background.memories:
        tables.append(
            (
                "Memories",
                ["score", "dense", "lexical", "recency", "id", "when", "text"],
                [
                    [
                        f"{m.score:.3f}",
                        f"{m.dense_score:.2f}",
                        f"{m.lexical_score:.2f}",
                        f"{m.recency:.2f}",
                        m.id,
                        time_ago(m.created_at, now),
                        retrieved_text(m, now),
                    ]
                    for m in background.memories
                ],
            )
        )
    if background.summary:
        tables.append(("Conversation summary", ["text"], [[shorten(background.summary, 300)]]))
    return tables
