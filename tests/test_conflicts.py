from datetime import date

from rag.answer.conflicts import detect_conflict, find_conflicts
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


# Counts of things, money per period, distinct subjects, years (general rules, other domains).
LOANS_NEW = _sectioned(
    1, "lending-policy", "Borrowing limits", "Each member may borrow up to 12 books at a time."
)
LOANS_OLD = _sectioned(
    2, "member-faq", "Borrowing", "A member can borrow up to 8 books at once from any branch."
)


def test_detect_conflict_counts_of_the_same_noun_conflict() -> None:
    conflict = detect_conflict("How many books can a member borrow?", [LOANS_NEW, LOANS_OLD])
    assert conflict is not None
    assert conflict.dimension == "count:book"
    assert sorted(s.quantity for s in conflict.statements) == ["12 books", "8 books"]


def test_detect_conflict_counts_of_different_nouns_do_not_conflict() -> None:
    other = _sectioned(
        2, "member-faq", "Borrowing", "A member can borrow up to 8 DVDs at once from any branch."
    )
    assert find_conflicts(None, [LOANS_NEW, other]) == []


def test_detect_conflict_same_count_in_words_is_not_a_conflict() -> None:
    same = _sectioned(2, "member-faq", "Borrowing", "A member can borrow up to twelve books at once.")
    assert find_conflicts(None, [LOANS_NEW, same]) == []


GYM_TABLE = _sectioned(
    1,
    "fees-2026",
    "Leisure centre",
    "- Gym membership, adult: $30 per month\n- Gym membership, child: $15 per month",
)


def test_detect_conflict_money_per_period_compares_across_periods() -> None:
    older = _sectioned(2, "leisure-faq", "Gym", "An adult gym membership costs $300 per year.")
    conflict = detect_conflict("How much is an adult gym membership?", [GYM_TABLE, older])
    assert conflict is not None
    assert conflict.dimension == "money_usd_per_year"
    assert sorted(s.quantity for s in conflict.statements) == ["$30 per month", "$300 per year"]


def test_detect_conflict_same_price_per_other_period_is_not_a_conflict() -> None:
    same = _sectioned(2, "leisure-faq", "Gym", "An adult gym membership costs $360 per year.")
    assert detect_conflict("How much is an adult gym membership?", [GYM_TABLE, same]) is None


def test_detect_conflict_contrasting_qualifier_means_distinct_subjects() -> None:
    # the other document only states the adult price; the table tells adult and child apart
    older = _sectioned(2, "leisure-faq", "Gym", "An adult gym membership costs $30 per month.")
    assert find_conflicts(None, [GYM_TABLE, older]) == []
    assert detect_conflict("How much is a gym membership?", [GYM_TABLE, older]) is None


def test_detect_conflict_both_documents_list_both_subjects_is_none() -> None:
    mooring_a = _sectioned(
        1,
        "harbour-fees",
        "Moorings",
        "- Standard mooring: $45 per year\n- Reduced mooring for seniors: $25 per year",
    )
    mooring_b = _sectioned(
        2,
        "harbour-guide",
        "Mooring fees",
        "- Standard mooring fee: $45 per year\n- Senior mooring fee: $25 per year",
    )
    assert detect_conflict("How much is a mooring for seniors?", [mooring_a, mooring_b]) is None
    assert detect_conflict("How much is a mooring?", [mooring_a, mooring_b]) is None


def test_detect_conflict_first_and_second_item_prices_are_distinct_subjects() -> None:
    table = _sectioned(
        1,
        "fees-2026",
        "Boat ramps",
        "- Ramp pass, first trailer: $96 per year\n- Ramp pass, second trailer: $144 per year",
    )
    faq = _sectioned(2, "boating-faq", "Ramps", "A ramp pass costs $72 per year for the first trailer.")
    conflict = detect_conflict("How much does a ramp pass cost?", [table, faq])
    assert conflict is not None
    assert sorted(s.quantity for s in conflict.statements) == ["$72 per year", "$96 per year"]
    assert len(find_conflicts(None, [table, faq])) == 1


def test_detect_conflict_price_word_in_one_document_only_does_not_rule_it_out() -> None:
    # "fee" only in one side's wording: for money it asks for the price, it names no other subject
    table = _sectioned(1, "fees-2026", "Boat ramps", "- Ramp pass fee, first trailer: $96 per year")
    faq = _sectioned(2, "boating-faq", "Ramps", "A ramp pass is $72 per year for the first trailer.")
    assert detect_conflict("What is the fee for a ramp pass?", [table, faq]) is not None


def test_detect_conflict_question_word_in_an_off_topic_statement_does_not_rule_it_out() -> None:
    table = _sectioned(
        1,
        "fees-2026",
        "Boat ramps",
        "- Ramp pass, first trailer: $96 per year\n- Harbour car park, all-day rate: $12 per day",
    )
    faq = _sectioned(2, "boating-faq", "Ramps", "A ramp pass costs $72 per year for the first trailer.")
    assert detect_conflict("What's the ramp pass price for my trailer and car?", [table, faq]) is not None


BRIDGE_A = _block(1, "history", "The old bridge was opened in 1932 after three years of work.")
BRIDGE_B = _block(2, "heritage-list", "The old bridge was opened in 1934 by the mayor.")


def test_detect_conflict_years_conflict_when_the_question_asks_when() -> None:
    conflict = detect_conflict("When was the old bridge opened?", [BRIDGE_A, BRIDGE_B])
    assert conflict is not None and conflict.dimension == "year"
    assert sorted(s.quantity for s in conflict.statements) == ["1932", "1934"]


def test_detect_conflict_years_ignored_unless_the_question_asks_when() -> None:
    assert detect_conflict("Who opened the old bridge?", [BRIDGE_A, BRIDGE_B]) is None
    assert find_conflicts(None, [BRIDGE_A, BRIDGE_B]) == []


def test_detect_conflict_same_year_is_not_a_conflict() -> None:
    same = _block(2, "heritage-list", "The old bridge was opened on 4 May 1932 by the mayor.")
    assert detect_conflict("When was the old bridge opened?", [BRIDGE_A, same]) is None


def test_detect_conflict_ignores_a_proposal_to_change_the_value() -> None:
    current = _block(1, "marina-fees", "The annual mooring permit costs $300 per boat.", date(2026, 2, 1))
    minutes = _block(
        2,
        "harbour-minutes",
        "The harbour master presented a proposal to raise the annual mooring permit to $340 per boat.",
        date(2026, 3, 1),
    )
    assert detect_conflict("How much is the annual mooring permit?", [current, minutes]) is None
