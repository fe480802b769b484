from datetime import date

from rag.conflicts import detect_conflict, find_conflicts
from rag.types import Block, Chunk

UPLOAD_QUESTION = "What is the maximum file upload size?"
TRASH_QUESTION = "How long do deleted projects stay in the trash?"

ADMIN = (
    "Files and attachments. The maximum file upload size is 250 MB per file. "
    "Files above the maximum upload size are rejected before the upload starts."
)
API = (
    "Uploading files. Maximum upload size: 100 MB per file. "
    "Requests whose file exceeds the maximum upload size are rejected."
)
TRASH = "Deleted projects stay in the trash for 30 days. After that they are removed for good."
TRIAL = "The free trial lasts 90 days. You can upgrade at any time during the trial."


def _block(n: int, doc_id: str, text: str, updated: date | None = None, title: str = "") -> Block:
    chunk = Chunk(
        chunk_id=f"{doc_id}#c01",
        doc_id=doc_id,
        title=title or doc_id.replace("-", " ").title(),
        section="",
        text=text,
        updated_at=updated,
        url=f"/chunks/{doc_id}#c01",
    )
    return Block(n=n, chunk=chunk, score=0.8, sent_text=text)


ADMIN_BLOCK = _block(1, "admin-guide", ADMIN, date(2026, 5, 12), "Admin guide")
API_BLOCK = _block(2, "api-reference", API, date(2025, 10, 3), "API reference")


def test_detect_conflict_planted_upload_limit_names_both_documents_and_dates() -> None:
    conflict = detect_conflict(UPLOAD_QUESTION, [API_BLOCK, ADMIN_BLOCK])
    assert conflict is not None
    assert conflict.dimension == "bytes"
    assert conflict.policy == "present_both"
    assert {"maximum", "upload", "size", "file"} <= set(conflict.context)
    newest, older = conflict.statements
    assert (newest.doc_id, newest.title, newest.updated_at, newest.quantity) == (
        "admin-guide",
        "Admin guide",
        date(2026, 5, 12),
        "250 MB",
    )
    assert (older.doc_id, older.title, older.updated_at, older.quantity) == (
        "api-reference",
        "API reference",
        date(2025, 10, 3),
        "100 MB",
    )
    assert newest.text == "The maximum file upload size is 250 MB per file."
    assert older.text == "Maximum upload size: 100 MB per file."
    assert ADMIN[newest.start : newest.end] == newest.text
    assert API[older.start : older.end] == older.text
    assert (newest.n, older.n) == (1, 2)


def test_detect_conflict_prefer_newest_still_returns_the_conflict_with_its_policy() -> None:
    conflict = detect_conflict(UPLOAD_QUESTION, [ADMIN_BLOCK, API_BLOCK], policy="prefer_newest")
    assert conflict is not None and conflict.policy == "prefer_newest"


def test_detect_conflict_unrelated_day_counts_do_not_collide() -> None:
    blocks = [_block(1, "data-retention", TRASH), _block(2, "pricing", TRIAL)]
    assert detect_conflict(TRASH_QUESTION, blocks) is None
    assert find_conflicts(None, blocks) == []


def test_detect_conflict_same_value_in_other_units_is_not_a_conflict() -> None:
    blocks = [
        _block(1, "admin-guide", "Each workspace has a storage quota of 1 GB for attachments."),
        _block(2, "faq", "Each workspace has a storage quota of 1024 MB for attachments."),
    ]
    assert detect_conflict("What is the workspace storage quota?", blocks) is None


def test_detect_conflict_that_was_not_asked_does_not_block_the_answer() -> None:
    blocks = [ADMIN_BLOCK, API_BLOCK, _block(3, "data-retention", TRASH)]
    assert detect_conflict(TRASH_QUESTION, blocks) is None
    assert find_conflicts(None, blocks) != []


def test_detect_conflict_within_one_document_is_not_a_conflict() -> None:
    blocks = [ADMIN_BLOCK, _block(2, "admin-guide", API)]
    assert detect_conflict(UPLOAD_QUESTION, blocks) is None


def test_detect_conflict_minimum_and_maximum_are_not_the_same_quantity() -> None:
    blocks = [
        _block(1, "a", "The minimum upload size for a video file is 1 MB."),
        _block(2, "b", "The maximum upload size for a video file is 500 MB."),
    ]
    assert detect_conflict("What upload size is allowed for a video file?", blocks) is None


def test_detect_conflict_needs_two_shared_context_keys() -> None:
    blocks = [
        _block(1, "a", "Exports finish within 30 minutes."),
        _block(2, "b", "Imports finish within 60 minutes."),
    ]
    assert find_conflicts(None, blocks) == []


def test_detect_conflict_question_term_only_one_side_mentions_rules_it_out() -> None:
    blocks = [
        _block(1, "api", "Webhook deliveries that fail are retried 8 times over roughly 24 hours."),
        _block(2, "billing", "Payments that fail are retried 3 times over 10 days."),
    ]
    assert find_conflicts(None, blocks) != []
    assert detect_conflict("How long are failed webhook deliveries retried?", blocks) is None


def test_find_conflicts_ranks_the_conflict_touching_most_question_terms_first() -> None:
    blocks = [
        ADMIN_BLOCK,
        API_BLOCK,
        _block(3, "security", "Idle sessions expire after 12 hours without activity."),
        _block(4, "sso", "Idle sessions expire after 8 hours without activity."),
    ]
    assert len(find_conflicts(None, blocks)) == 2
    (conflict,) = find_conflicts("When do idle sessions expire?", blocks)
    assert conflict.dimension == "duration"
    assert [s.quantity for s in conflict.statements] == ["12 hours", "8 hours"]


def test_detect_conflict_without_quantities_is_none() -> None:
    blocks = [_block(1, "a", "Projects can be archived."), _block(2, "b", "Projects can be deleted.")]
    assert detect_conflict("Can projects be archived?", blocks) is None


def _sectioned(n: int, doc_id: str, section: str, text: str) -> Block:
    block = _block(n, doc_id, text)
    chunk = block.chunk
    return Block(
        n=n,
        chunk=Chunk(
            chunk_id=f"{doc_id}#c{n:02d}",
            doc_id=doc_id,
            title=chunk.title,
            section=section,
            text=text,
            url=chunk.url,
        ),
        score=block.score,
        sent_text=text,
    )


PRICES = [
    _sectioned(1, "pricing", "Team", "The Team plan costs $8 per user per month."),
    _sectioned(2, "pricing", "Business", "The Business plan costs $16 per user per month."),
    _sectioned(3, "faq", "Billing", "The Business plan costs $15 per user per month."),
]


def test_detect_conflict_about_the_statement_the_question_names() -> None:
    conflict = detect_conflict("What does the Business plan cost per user?", PRICES)
    assert conflict is not None
    assert sorted(s.quantity for s in conflict.statements) == ["$15", "$16"]


def test_detect_conflict_between_statements_the_question_does_not_name_is_none() -> None:
    assert find_conflicts(None, PRICES) != []
    assert detect_conflict("What does the Team plan cost per user?", PRICES) is None


RATES = [
    _block(1, "api", "The API allows 600 requests per minute per token."),
    _block(2, "release-notes", "The REST API rate limit is now 1,200 requests per minute per token."),
]


def test_detect_conflict_rate_limit_asked_in_other_words() -> None:
    conflict = detect_conflict("How many API requests per minute does a token get?", RATES)
    assert conflict is not None and conflict.dimension == "rate_per_minute"


def test_detect_conflict_question_mostly_about_something_else_is_none() -> None:
    assert (
        detect_conflict("How many items can I request per page with the API's limit parameter?", RATES)
        is None
    )


def test_detect_conflict_pair_about_subject_other_than_the_named_one_is_none() -> None:
    blocks = [
        _sectioned(1, "pricing", "Team", "- $8 per user per month billed annually."),
        _sectioned(
            2, "pricing", "Business", "- The Business plan costs $16 per user per month billed annually."
        ),
        _sectioned(3, "faq", "Billing", "The Business plan costs $15 per user per month billed annually."),
    ]
    assert detect_conflict("What does the Business plan cost per user on annual billing?", blocks) is not None
    assert detect_conflict("What does the Team plan cost per user on annual billing?", blocks) is None
