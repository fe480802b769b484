"""The heuristic word lists and patterns of text handling and the answer path, in one place.

Plain English and plain document layout only: never a word from one corpus. Word lists of stems
are Snowball-stemmed (what `rag.language.text.terms` returns); patterns are compiled once here. Each entry
says what it is for; the modules that read it are named where it is not obvious.
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# Words and tokens (rag.language.text)

# Stop words: never content terms of a question, a chunk or a sentence.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
    you've your yours yourself yourselves also just may might must shall will can could would should
    get gets got us its via per etc e g i e vs please pls plz tell know want need does do one two""".split()
)
# Abbreviations after which a period does not end a sentence (lowercase, without the final dot).
ABBREVIATIONS = frozenset(
    """e.g i.e etc vs cf approx mr mrs ms dr prof sr jr st no nos fig figs vol eq ref sec al inc ltd corp co
    dept est min max jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun u.s u.k
    e.u a.m p.m ph.d""".split()
)
# Month names that may follow a day number written as an ordinal with a full stop ("31. März", "1. maj",
# "3. Oktober"): the full stop ends no sentence there (`text.sentence_spans`). Lower-case words never
# start a sentence, so these matter where month names are capitalised (German, English) or start a line
# of text that capitalises them; the languages that write ordinals "N." (German, the Nordic languages,
# Dutch dates in running text) and English.
MONTH_NAMES = frozenset(
    """januar jänner februar feber märz maerz april mai juni juli august september oktober november
    dezember marts mars maj desember december januari februari maart mei augustus july june
    january february march october jan feb mär mrz apr jun jul aug sep sept okt nov dez""".split()
)
# Stems the Snowball stemmer leaves apart although they name the same period ("annual fee" is a
# fee per year, as "monthly" is per month, which Snowball already maps to "month").
SAME_STEM = {"annual": "year", "annum": "year"}
# Sentences that state a proposal, a possibility or a plan rather than what holds now.
PROPOSAL_RE = re.compile(
    r"\b(?:propos(?:al|als|ed|es|ing)|suggest(?:s|ed|ion)?|draft|consider(?:s|ed|ing)?"
    r"|plans?\s+to|planning\s+to|intends?\s+to|if\s+approved)\b",
    re.IGNORECASE,
)
# Modal verbs: a sentence using one supposes rather than states what holds (conflict detection).
MODAL_RE = re.compile(r"\b(?:would|could|might)\b", re.IGNORECASE)

# ---------------------------------------------------------------------------------------------
# Question wording

# Stems of how-questions ("how long", "how many", "how big") that say nothing about the topic.
HOW_FORMS = frozenset({"long", "much", "mani", "often", "far", "soon", "big", "larg", "high"})
# Stems that carry no topic in a question ("still", "the whole ..."): never question terms.
QUESTION_FILLERS = HOW_FORMS | frozenset(
    {"still", "happen", "whole", "anoth", "instead", "just", "exact", "actual", "realli", "quick"}
    | {"ever", "current", "typic", "usual", "possibl", "exist", "sinc", "till"}
)
# A condition or circumstance leading a one-sentence question, up to the comma before the asking
# words ("If I call it without a name, what ...", "With the default limits, how much ..."): the
# asker's situation, not what is asked.
LEAD_CLAUSE_RE = re.compile(
    r"^(?:if|when|whenever|with|once|after|before|since|while|given|assuming|unless|in)\b[^?,]*,\s*"
    r"(?=(?:what|which|how|who|whom|whose|where|when|why|is|are|was|were|can|could|do|does|did|should|"
    r"will|would|must|may)\b)",
    re.IGNORECASE,
)
# A condition trailing the asking sentence ("What happens to my account once I graduate?", "... if I
# return a book late?"): the answer names it, or it answers another circumstance.
TRAILING_CONDITION_RE = re.compile(
    r"(?<=\w )(?:if|when|whenever|once|after|before|until|unless)\s+"
    r"(?:i|we|you|they|he|she|it|my|our|your|their|someone|somebody|a|an|the)\b([^?,;]*)",
    re.IGNORECASE,
)
# A question asking whether something holds ("Can staff claim ...?", "Is there ...?").
YES_NO_QUESTION_RE = re.compile(
    r"^\W*(?:can|could|do|does|did|is|are|am|was|were|will|would|should|shall|may|might|must|has|have"
    r"|had)\b",
    re.IGNORECASE,
)
# Stems of nouns an amount of bytes measures ("how much space / memory / storage"), and a figure
# with a byte unit ("500 MB", "2 GiB", "4096 bytes"): the figure is about that noun.
SIZE_NOUNS = frozenset({"space", "storag", "memori", "disk", "size", "room", "capac"})
BYTE_AMOUNT_RE = re.compile(
    r"\b\d[\d,.]*\s*(?:[KMGTP]i?B|bytes?|kilobytes?|megabytes?|gigabytes?|terabytes?)\b", re.IGNORECASE
)
# Stems that ask for a default ("the default value", "by default"): a sentence stating one covers them.
DEFAULT_TERMS = frozenset({"default", "valu"})
# Stems naming the kind of answer wanted ("deadline", "maximum") rather than its topic: the
# source states them as figures ("within 30 days", "up to 10"), so they weigh less.
ANSWER_TYPE_TERMS = frozenset(
    {"limit", "maximum", "minimum", "max", "min", "deadlin", "daili", "quota", "ahead", "advanc", "notic"}
    | {
        "largest",
        "smallest",
        "highest",
        "lowest",
        "biggest",
        "oldest",
        "earliest",
        "newest",
        "latest",
        "fewest",
    }
)
# Stems of price words: an amount question worded around a price is answered by a money amount.
PRICE_TERMS = frozenset({"cost", "price", "fee", "charg", "pay"})
# Stems that ask for money without naming what it is for: "fee" on one side and "cost" on the
# other do not make two subjects (conflict detection).
MONEY_FORMS = PRICE_TERMS | frozenset({"paid", "amount", "spend"})
# Stems that carry no topic in the words before a quantity: never conflict context keys.
WEAK_KEYS = frozenset({"within", "now", "everi", "around", "approxim", "rough", "current", "total", "least"})
# Stems marking a lower or an upper bound ("minimum 3", "at most 10") in conflict context.
LOWER_BOUND = frozenset({"minimum", "min", "least", "lower", "floor"})
UPPER_BOUND = frozenset({"maximum", "max", "upper", "ceil", "cap", "exceed"})
# Questions asking for a point in time: only these compare calendar years (conflict detection).
ASKS_WHEN_RE = re.compile(r"\b(?:when|what year|which year|in what year|what date)\b", re.IGNORECASE)

# Question wording per answer type (see rag.reader.answer_types).
TIME_QUESTION_RE = re.compile(
    r"\bhow\s+(?:long|often|soon|quickly|fast|frequently|early|late)\b|\b(?:deadline|duration|timeout|frequency)\b"
    r"|\bhow\s+far\s+(?:ahead|in\s+advance)\b|\bhow\s+much\s+notice\b",
    re.IGNORECASE,
)
# After "what time / which day": the noun is the head of its phrase when an auxiliary, preposition,
# determiner or pronoun (or the end) follows; "what time zone", "which day pass" ask for a zone, a pass.
_HEAD_NOUN_END = (
    r"(?=\s*[?,.]|\s*$|\s+(?:do|does|did|is|are|was|were|will|would|should|can|could|has|have|had|must|may"
    r"|of|in|on|at|for|to|from|by|the|a|an|my|your|our|their|its|i|we|you|it|they|he|she|this|that)\b)"
)
DATE_QUESTION_RE = re.compile(
    r"^\W*when\b|\b(?:until|by|since)\s+when\b|\b(?:what|which)\s+(?:year|date|day|month|time)\b"
    + _HEAD_NOUN_END
    + r"|,\s*when\b",
    re.IGNORECASE,
)
NUMBER_QUESTION_RE = re.compile(
    r"\bhow\s+(?:many|much|big|large|far|old|high|low|small)\b"
    r"|\b(?:limit|limits|maximum|minimum|max|min|price|prices|cost|costs|size|quota|rate|percent|percentage"
    r"|number\s+of|amount\s+of|versions?|fee|fees|allowance|largest|smallest|highest|lowest|oldest|newest)\b"
    r"|\b(?:what|which)\s+port\b",
    re.IGNORECASE,
)
PLACE_QUESTION_RE = re.compile(
    r"^\W*where\b|\b(?:in\s+)?(?:what|which)\s+(?:city|country|region|town)\b", re.IGNORECASE
)
CAUSE_QUESTION_RE = re.compile(
    r"^\W*why\b|\bwhat\s+(?:caused|causes|led\s+to)\b|\b(?:the\s+)?reason\s+for\b", re.IGNORECASE
)
PERSON_QUESTION_RE = re.compile(r"^\W*who(?:m|se)?\b", re.IGNORECASE)
# A how-to question ("How can I change the number of ...", "How do I turn off ..."): it asks for a
# procedure, not an amount, whatever nouns follow. HOW_TO_RE finds the frame anywhere ("After a big
# commit, how do I ..."), HOW_TO_QUESTION_RE only opening the question.
_HOW_TO = r"how\s+(?:do|can|could|should|would|may|might|must)\s+(?:i|we|you|one)\b"
HOW_TO_RE = re.compile(rf"\b{_HOW_TO}", re.IGNORECASE)
HOW_TO_QUESTION_RE = re.compile(rf"^\W*{_HOW_TO}", re.IGNORECASE)
# The noun phrase a "how many / how much" question counts ("how many free guests"): its last word is
# the noun a figure must be about. Auxiliaries, articles and prepositions end it.
MEASURED_NOUN_RE = re.compile(
    r"\bhow\s+(?:many|much)\s+((?:(?!(?:do|does|did|is|are|was|were|can|could|will|would|should|shall|may"
    r"|might|must|has|have|had|of|the|a|an|it|they|we|i|you|per|in|on|for|to|at|with|time|more|less|longer)\b)"
    r"[a-z][\w'/-]*\s*){1,3})",
    re.IGNORECASE,
)
# A count question ("how many ..."): answered by a figure next to what it counts.
COUNT_QUESTION_RE = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
# "the (maximum) number of <noun>" and the few words after it: a count of that noun stated as a subject.
NUMBER_OF_RE = re.compile(r"\b(?:number|count|amount)\s+of((?:\W+\w+){1,3})", re.IGNORECASE)
# A figure and the few words after it ("50 members", "4 of them", "3 guests per paid seat").
COUNTED_RE = re.compile(
    r"(?<![\w.])(?:\d[\d,.]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|fifty"
    r"|hundred|dozen)\b((?:\W+\w+){1,3})",
    re.IGNORECASE,
)
# Asking for a default: "what is the default ...", "... by default?", "default value of ...".
# "unless I set X", "without giving a category", "if I don't pass one": what holds when nothing is set.
DEFAULT_QUESTION_RE = re.compile(
    r"\bdefault(?:s|ed)?\b|\bout\s+of\s+the\s+box\b"
    r"|\bunless\s+(?:i|you|we|one)\s+(?:set|change|configure|specify|pass|give|provide|override)\b"
    r"|\bwithout\s+(?:setting|changing|configuring|specifying|passing|giving|providing|overriding)\b"
    r"|\bwithout\s+(?:the\s+|an?\s+)?(?:-{1,2}\w[\w-]*|``[^`]+``)"  # "without -m": the option not given
    r"|\bif\s+(?:i|you|we|one)\s+(?:don't|don’t|do\s+not|never)\s+(?:set|change|configure|specify|pass|give"
    r"|provide|choose|pick|select|override)\b"
    r"|\bif\s+(?:it\s+is|it's|[\w.`'-]+\s+(?:is|are))(?:n't\s+|n’t\s+|\s+not\s+|\s+never\s+)"
    r"(?:set|configured|specified|given|provided|passed|chosen)\b",
    re.IGNORECASE,
)
# Default clauses (`rag.language.asking`): a condition on a verb of choosing, setting or telling that
# is not done ("unless I change it", "if I don't pass one", "if FOO isn't set", "if I leave it alone")
# asks for what holds by default; these words of it name nothing the answer says.
CHOOSING_VERBS = frozenset(
    """set change configure specify pass give provide choose pick select override tell say ask point name
    raise lower turn switch enable disable alter modify adjust customize customise define supply touch
    leave edit""".split()
)
# Who asks, as the subject of a clause ("if I ...", "unless you ...", "if one ..."), and the forms of
# "be" a passive is built with ("if it isn't set", "unless it is configured").
ASKERS = frozenset({"i", "we", "you", "one"})
BE_FORMS = frozenset({"be", "is", "are", "was", "were", "been", "being", "am", "'s", "it's"})
# Words that negate a clause by themselves (with any word ending in "n't").
NEGATORS = frozenset({"not", "never", "no", "nothing", "none", "nobody"})
# Words of leaving a thing as it is: with a choosing verb they make its clause a default clause ("if I
# leave the setting alone") ...
LEFT_AS_IS = frozenset({"alone", "unchanged", "untouched", "unset"})
# ... and, with these pro-forms and manners of choosing, they name nothing in one ("unless I tell it
# otherwise", "if I don't point it elsewhere", "if I don't configure anything").
UNCHANGED_WORDS = LEFT_AS_IS | frozenset(
    {"otherwise", "elsewhere", "else", "anything", "something", "differently", "explicitly", "manually"}
)
# A hedge on the amount asked for ("Roughly how many", "approximately what size", "about 10"): it
# names nothing the answer says.
HEDGE_RE = re.compile(
    r"\b(?:roughly|approximately|around|about|nearly|almost|circa)\b(?=\s+(?:how|what|which|\d))",
    re.IGNORECASE,
)
# "the default <noun>" in a leading condition ("With the default retry policy, ..."): the setup the
# question assumes, not a request for a default.
DEFAULT_SETUP_RE = re.compile(r"\b(?:the|its|their|a)\s+default\s+[a-z]", re.IGNORECASE)
# A verb of using a thing followed by that thing written as code ("call flash()", "run ``make``",
# "using `--reload`", "import app.models"): the verb says only that the thing is used.
CODE_USE_RE = re.compile(
    r"\b(call|calls|calling|called|use|uses|using|run|runs|running|invoke|invokes|invoking|pass|passes"
    r"|passing|import|imports|importing)\s+(?:the\s+|a\s+|an\s+)?"
    r"(?=``?[^`]+`|[A-Za-z_][\w.]*\(\)|--?[A-Za-z]|[A-Za-z]\w*(?:[._]\w+)+)",
    re.IGNORECASE,
)
# The noun of "what time", "which days", "what year": it names the fact wanted, not the topic.
# "Which/what <noun>" asking for a named thing of code or configuration ("Which environment variable
# ...", "what flag ...", "Which config key ..."): the answer names it, as code or an identifier.
CODE_QUESTION_RE = re.compile(
    r"\b(?:which|what)(?:'s|’s|\s+is|\s+are)?(?:\s+the|\s+an?)?\s+"
    r"(?:(?!(?:do|does|did|can|could|should|would|will|must|is|are|i|we|you|it)\b)[\w.-]+\s+){0,2}?"
    r"(variable|option|flag|setting|(?<=config )key|(?<=setting )key|(?<=settings )key|argument|parameter"
    r"|function|method|class|command|subcommand|converter|module|header|attribute|decorator|exception"
    r"|directive|keyword|callback|endpoint)s?\b(?!\s+of\b)",
    re.IGNORECASE,
)
# The written forms that show a code literal's kind without naming it: a flag or option starts
# with "-", a variable, setting or key is UPPER_CASE, an argument or parameter is "name=value", a
# function or method is called "name()", a decorator starts with "@", a class or exception is
# CamelCase, a command is words starting with a lowercase program name.
CODE_FORMS: tuple[tuple[frozenset[str], re.Pattern[str]], ...] = (
    (frozenset({"flag", "option", "argument"}), re.compile(r"--?[A-Za-z][\w-]*(?:[= ]\S+)?")),
    (frozenset({"variable", "setting", "key"}), re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")),
    (frozenset({"argument", "parameter", "keyword", "option"}), re.compile(r"[a-z_]\w*=\S+")),
    (frozenset({"function", "method", "callback"}), re.compile(r"[\w.]+\(.*\)")),
    (frozenset({"decorator"}), re.compile(r"@[\w.]+(?:\(.*\))?")),
    (frozenset({"class", "exception"}), re.compile(r"(?:[\w]+\.)*[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+")),
    (frozenset({"command", "subcommand"}), re.compile(r"/?[a-z][\w.-]*(?: \S+)+")),
)
TYPE_NOUN_RE = re.compile(
    r"\b(?:what|which)\s+(time|times|hours|date|dates|days?|years?|months?)\b" + _HEAD_NOUN_END, re.IGNORECASE
)
# Wording asking for a price ("how much ... pay", "does it cost", "what is the fee"); "Which costs
# ..." asks for a kind, not a price.
_PRICE_WORDS = r"(?:cost|costs|price|prices|priced|fee|fees|charge|charges|charged|pay)"
PRICE_QUESTION_RE = re.compile(
    rf"\bhow\s+much\b.*\b{_PRICE_WORDS}\b|\b(?:do|does|did|will|would|to)\b.*\bcost\b"
    rf"|\bwhat(?:'s|\s+is|\s+are|\s+was)?\s+(?:\w+\s+){{0,4}}?{_PRICE_WORDS}\b",
    re.IGNORECASE,
)
# "What time", "by what time": a time of day, stated as a clock time.
# "What hours ... apply?", "which hours": the times of day something holds, as clock times too.
CLOCK_QUESTION_RE = re.compile(r"\bwhat\s+time\b|\b(?:what|which)\s+hours\b", re.IGNORECASE)

# ---------------------------------------------------------------------------------------------
# Facts a sentence states

# Word-like tokens for comparing a sentence's figures with the question's ("v1", "3.2", "14-day").
WORD_TOKEN_RE = re.compile(r"[\w.,:'-]*\w")
# Figures: digits, or number words a source writes out ("three times", "twice").
FIGURE_RE = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty"
    r"|thirty|forty|fifty|sixty|hundred|thousand|million|billion|dozen|once|twice|half)\b",
    re.IGNORECASE,
)
# Units and adverbs of time: a figure next to one states a duration or a frequency.
TIME_WORD_RE = re.compile(
    r"\b(?:milliseconds?|ms|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|daily|weekly"
    r"|monthly|hourly|yearly|annually|quarterly|nightly)\b",
    re.IGNORECASE,
)
# "How often ...?" asks for a rate: a repetition ("every 5000 generations", "each day", "twice a
# week", "three times"), an adverb of frequency ("nightly") or a rate per unit of time.
FREQUENCY_QUESTION_RE = re.compile(r"\bhow\s+(?:often|frequently)\b|\bfrequency\b", re.IGNORECASE)
_PERIOD = r"(?:second|minute|hour|day|night|week|month|quarter|year)"
FREQUENCY_RE = re.compile(
    rf"\b(?:every|each)\s+(?:other\s+)?(?:\d[\d,.]*|(?:{_PERIOD}|time)s?\b)"
    r"|\b(?:once|twice|thrice|times)\b|\b(?:hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually)\b"
    rf"|\b(?:per|a)\s+{_PERIOD}\b",
    re.IGNORECASE,
)
MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
# A date, a year, a clock time or a weekday: what a "when" question is answered with.
DATE_RE = re.compile(
    rf"\b(?:{MONTHS})\b\.?\s*\d|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{MONTHS})\b|\b(?:1[5-9]|20)\d\d\b"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d\d\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b",
    re.IGNORECASE,
)
# Day-and-month or ISO dates: what a "how many / how much" answer is not.
CALENDAR_DATE_RE = re.compile(
    rf"\b(?:{MONTHS})\b\.?\s*\d{{1,2}}\b(?:,?\s*\d{{4}})?|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{MONTHS})\b(?:\s+\d{{4}})?"
    r"|\b\d{4}-\d{2}-\d{2}\b",
    re.IGNORECASE,
)
# A clock time ("6:00 am", "noon"): what a "what time" question is answered with.
CLOCK_RE = re.compile(
    r"\b\d{1,2}(?::\d\d)?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d\d\b|\b(?:noon|midday|midnight)\b", re.I
)
# A causal phrase: what a "why" question is answered with.
CAUSE_RE = re.compile(
    r"\b(?:because|due\s+to|caused|causes|cause|reason|owing\s+to|led\s+to|result(?:ed)?\s+(?:of|from)"
    r"|so\s+that|in\s+order\s+to|so\s+as\s+to|intended\s+to|meant\s+to|to\s+(?:avoid|prevent|ensure|allow))\b",
    re.IGNORECASE,
)
# A money amount, and a statement that something costs nothing: answers to a price question.
MONEY_RE = re.compile(r"[$€£¥]\s?\d|\d\s?(?:cents?|dollars?|euros?|pounds?|usd|eur|gbp|aud|cad)\b", re.I)
NO_CHARGE_RE = re.compile(r"\b(?:free|no\s+(?:extra\s+|additional\s+)?(?:charge|cost|fee))\b", re.I)
# A question asking for a version ("Which versions were affected?", "in what version", "the oldest
# texi2any I can use"), and a version written as one ("2.5", "21.3.0", "v5", "version 3"): only the
# second answers the first.
VERSION_QUESTION_RE = re.compile(
    r"\b(?:oldest|newest)\b"
    r"|\b(?:which|what)\s+(?:(?!(?:in|of|for|to|on|at|since|from|with|by|is|are|was|were|do|does|did)\b)"
    r"[\w.-]+\s+){0,2}?versions?\b",
    re.IGNORECASE,
)
# A release named by its number ("v5.0.0", "3.11.2"): a version of something, never the amount, size
# or limit a question of another kind asks for ("the highest resolution" is not "Gutenprint v5.0.0").
RELEASE_RE = re.compile(r"(?<![\w.])(?:v\d+(?:\.\d+)*|\d+\.\d+\.\d+(?:[-+]?[a-z]+\d*)?)(?!\w)", re.IGNORECASE)
VERSION_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)+[a-z]*\d*\b|\bv\d+\b|\bversions?\s+\d", re.IGNORECASE)
# A cause stated as what brings an effect about ("X causes Y", "X led to Y"): the effect follows it;
# other causal phrases ("because", "due to", "so that") introduce the reason for what the rest says.
CAUSE_FORWARD_RE = re.compile(r"^(?:causes|led\s+to)$", re.IGNORECASE)
# A cause named as a noun ("was identified as the cause", "the main reason"): the sentence names
# the cause of what its context describes.
CAUSE_NOUN_RE = re.compile(r"\b(?:the|a|an|root|main|primary|real|likely|probable)\s+$", re.IGNORECASE)
# A figure after a name written with a capital ("iOS 16", "Python 3"): a version of that product.
NAMED_VERSION_RE = re.compile(r"\b([A-Za-z][\w+-]*[A-Z][\w+-]*|[A-Z][\w+-]*)\s+(\d+)\b")
# Where a causal phrase ends: the next clause break.
CLAUSE_END_RE = re.compile(r"[,;:]\s|\s--?\s|[—–]|$")
# Words that refer back to what an earlier sentence names ("This is intended to ...").
REFERRING_RE = re.compile(r"\b(?:it|its|they|them|their|this|that|these|those)\b", re.IGNORECASE)
# "What / which <noun> does ...?": the noun names the kind of thing asked for ("What error does the
# console return?"); a sentence that neither names it nor writes a name in code does not answer.
ASKED_NOUN_RE = re.compile(
    r"^\W*(?:what|which)\s+(?:[a-z][\w-]*\s+){0,2}?([a-z][\w-]*)\s+(?:does|do|did|is|are|was|were|will|would"
    r"|should|can|could|has|have|must|gets?)\b",
    re.IGNORECASE,
)
NOT_ASKED_NOUNS = frozenset(
    {"do", "does", "did", "is", "are", "was", "were", "will", "would", "should", "can", "could", "else"}
    | {"i", "we", "you", "it", "they", "else", "exactly", "then"}
)
# "instead of / rather than / other than ..." up to the clause's end: the alternative an asker sets
# aside ("How can I export one project instead of the whole workspace?").
CONTRAST_PHRASE_RE = re.compile(
    r"\b(?:instead\s+of|rather\s+than|other\s+than)\s+([^,;:?!.]+)", re.IGNORECASE
)
# A default stated in prose ("by default", "defaults to", "the default is"): answers a default question.
DEFAULT_STATEMENT_RE = re.compile(r"\bdefault(?:s|ed)?\b", re.IGNORECASE)
# The "by " of "... by default" (searched up to "default"): the value may stand before it.
BY_DEFAULT_RE = re.compile(r"\bby\s+$", re.IGNORECASE)
# A capitalised word after a place preposition ("in Lisbon", "near Porto"): answers "where".
PLACE_RE = re.compile(r"\b(?:in|at|near|from|outside|inside)\s+(?:the\s+)?([A-Z][\w'-]+)")
# A capitalised word inside a sentence (not its first word): a name it mentions.
CAPITALISED_RE = re.compile(r"(?<=[a-z,;:] )([A-Z][a-z][\w'-]*)")
# Capitalised words that are never places or names.
NOT_PLACES = frozenset(MONTHS.split("|")) | {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"
}  # fmt: skip

# ---------------------------------------------------------------------------------------------
# Sentences that are never an answer on their own

# Sentences that open by referring back ("It keeps ...", "They ..."): their neighbours name the topic.
ANAPHOR_RE = re.compile(r"^\W*(?:it|its|they|them|their|he|she|his|her)\b", re.IGNORECASE)
# Pronouns that refer back to something named nearby ("at most 4 of them").
PRONOUN_RE = re.compile(r"\b(?:it|its|they|them|their|these|those)\b", re.IGNORECASE)
# Pointers elsewhere ("See the documentation of X for details.", "Read the design guide.",
# "For more information, refer to ..."): they name where an answer is, they do not give it.
SEE_ALSO_RE = re.compile(
    r"^\W*(?:see(?:\s+also)?|read|refer\s+to|consult|check\s+out|have\s+a\s+look\s+at|look\s+at"
    r"|follow\s+the\s+(?:recommendations|instructions|guide))\b"
    r"|\b(?:for\s+(?:more\s+|further\s+|full\s+)?(?:details|information|more|guidance|examples?)"
    r"|see\s+(?:the\s+)?(?:\S+\s+){0,6}?(?:documentation|docs|section|reference|guide|page|chapter)\b)",
    re.IGNORECASE,
)

# ---------------------------------------------------------------------------------------------
# Document layout: what is prose and what is code, markup or a heading (rag.reader.prose)

# A Markdown list item's marker.
BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# A Markdown ATX heading ("## Trash").
HEADING_RE = re.compile(r"^\s*#{1,6}\s")
# A Markdown table's rule cell ("---", ":--:") or an empty cell.
TABLE_RULE_RE = re.compile(r":?-{2,}:?|")
# A code fence (``` or ~~~), opening or closing.
FENCE_RE = re.compile(r"^\s*(?:`{3,}|~{3,})")
# A reST explicit markup line: a directive (".. note::"), a link target (".. _name:"), a
# substitution (".. |x| ...") or a comment (".." alone).
DIRECTIVE_RE = re.compile(r"^\s*\.\.(?:\s+([\w:-]+)::|\s+_[^:]*:|\s+\|[^|]+\||\s*$|\s+\S)")
# Directives whose indented content is code or a literal, never prose.
CODE_DIRECTIVES = frozenset(
    {"code", "code-block", "sourcecode", "doctest", "testcode", "testoutput", "literalinclude"}
    | {"parsed-literal", "math", "highlight", "productionlist", "raw", "csv-table", "graphviz", "jinja"}
)
# Directives whose indented content is prose (admonitions and notes).
PROSE_DIRECTIVES = frozenset(
    {"note", "warning", "danger", "caution", "attention", "hint", "important", "tip", "error", "admonition"}
    | {"topic", "sidebar", "rubric", "container", "deprecated", "versionadded", "versionchanged", "glossary"}
)
# Directives that describe one named thing (".. py:data:: NAME", ".. option:: --flag", ".. envvar:: X"):
# their argument is the entry's name, the label of the prose indented below it. Any directive of a
# domain ("py:", "js:", "std:", ...) describes one too.
ENTRY_DIRECTIVES = frozenset(
    {"describe", "object", "option", "cmdoption", "envvar", "confval", "setting", "function", "class"}
    | {"data", "attribute", "method", "exception", "decorator", "module", "attr", "currentmodule"}
)
# A directive marker whose leading ".." the chunker left in the chunk before ("versionchanged:: 3.1").
CUT_DIRECTIVE_RE = re.compile(r"^\s*[A-Za-z][\w-]*(?::[\w-]+)?::(?:\s|$)")
# A reST directive option or field-list marker on a line of its own (":alt: a screenshot").
OPTION_RE = re.compile(r"^\s*:[\w -]+:(?:\s|$)")
# A title underline, overline or horizontal rule: one punctuation character repeated.
UNDERLINE_RE = re.compile(r"^\s*([=\-`:'\"~^_*+#<>.])\1{2,}\s*$")
# A reST simple or grid table border ("====  ======", "+----+----+"): whitespace-separated runs of
# "=", "+" and "-", the first at least 3 long, each other one too unless it is only "+", with room
# for two columns of 3 (`rag.reader.prose.table_border` counts them: a nested-quantifier regex
# for the whole rule backtracks exponentially on a long rule followed by anything else).
TABLE_BORDER_RE = re.compile(r"\s*[=+-]{3,}(?:\s+(?:\++|[=+-]{3,}))*\s*")
# A content-tab title in MkDocs Material ('=== "Sync"'): a heading for the indented text below it.
TAB_TITLE_RE = re.compile(r'^\s*===\s+"[^"]+"\s*$')
# A Markdown admonition header ("!!! note", '??? info "Changed in 19.4"').
ADMONITION_RE = re.compile(r"^\s*(?:!!!|\?\?\?\+?)\s*\w")
# Interactive sessions: a Python prompt or continuation, a shell prompt.
DOCTEST_RE = re.compile(r"^\s*(?:>>>|\.\.\.)(?:\s|$)")
# a shell prompt ("$ ", "user@host:~$ ") or a program's named prompt ("sqlite> ", "MrBayes > ")
SHELL_RE = re.compile(r"^\s*(?:\$|%|[\w.-]+@[\w.-]+[:~][^\s]*[$#]|[A-Za-z][\w.-]*\s?>)\s+\S")
# Template syntax ("{{ user }}", "{% if %}", "{# note #}"): a template line, not prose.
TEMPLATE_RE = re.compile(r"\{\{|\{%|\{#|%\}|\}\}")
# Lines that read as code outside a marked block: imports, definitions, assignments, calls.
CODE_LINE_RE = re.compile(
    r"^\s*(?:from\s+[\w.]+\s+import\b|import\s+[\w.]+\s*$|def\s+\w+\(|class\s+\w+[(:]|return\b|@\w[\w.]*"
    r"|if\s+__name__\b|[\w.\[\]\"']+\s*[+\-*/]?=\s*\S|[\w.]+\([^)]*\)?[,)]*\s*$|[\]\[{}()]+[,;]?\s*$"
    # Python block openers, in their lowercase code form: "with open(p) as f:", "for x in items:"
    r"|with\s+\S.*\bas\s+\w+\s*:\s*$|for\s+\w+(?:,\s*\w+)*\s+in\s+\S.*:\s*$)"
)
# Inline code and reST roles ("``x``", "`x`", ":meth:`x`"): literal values, not the sentence's topic words.
INLINE_CODE_RE = re.compile(r"(?::[\w:-]+:)?``[^`]+``|(?::[\w:-]+:)?`[^`]+`")
# A code identifier: snake_case, dotted.path, --flag or a name of capitalised hyphenated parts (an
# HTTP header, "X-Protocol-Version", "Content-Type"), compared after `-` -> `_`, lowercased.
IDENTIFIER_RE = re.compile(
    r"(?<![\w.-])(?:--[A-Za-z][\w-]+|[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+|\w*[A-Za-z]\w*_\w+"
    r"|[A-Z][A-Za-z0-9]*(?:-[A-Z][A-Za-z0-9]*)+(?![\w-]))"
)
# A field line ("**Default:** `100`", "Default: ``X``", "- Command line: -t INT"): a short
# label, a colon, a value.
FIELD_RE = re.compile(r"^[\W_]{0,4}([A-Za-z][\w-]*(?: [\w-]+){0,2}?)[*_`]{0,3}:[*_`]{0,3}\s+(\S.*)$")

# ---------------------------------------------------------------------------------------------
# Example questions on the web page (rag.examples)

# Headings that name a part of a document's layout, not a topic a reader would ask about.
LAYOUT_HEADINGS = frozenset(
    {"overview", "introduction", "intro", "summary", "contents", "table of contents", "index", "notes"}
    | {"note", "see also", "references", "appendix", "changelog", "change log", "history", "about"}
    | {"background", "attendees", "agenda", "action items", "next steps", "minutes", "contact", "contacts"}
    | {"faq", "glossary", "miscellaneous", "misc", "other", "general", "details", "description"}
    | {"example", "examples", "links", "resources", "further reading", "conclusion", "preface"}
    | {"foreword", "acknowledgements", "credits", "decisions", "discussion", "updates", "timeline"}
)
# "How to reset a password" -> "How do I reset a password?"
HOW_TO_HEADING_RE = re.compile(r"^how\s+to\s+(?P<rest>.+)$", re.IGNORECASE)
# Words that open an object phrase after a verb ("Create *a* project", "Connect *your* tools").
EXAMPLE_DETERMINERS = frozenset(
    "a an the your my our their this that these those each every all another any some".split()
)
# Words that join two topics: a gerund followed by one is a noun ("Billing and invoices").
EXAMPLE_JOINERS = frozenset({"and", "or", "versus", "vs", "&", "nor"})
# Second-person words turned to the asker's first person ("Connect your tools" -> "... my tools?").
TO_FIRST_PERSON = {"your": "my", "yours": "mine", "yourself": "myself", "you": "I"}
# Words a title starting with does not name a thing ("About us", "Getting started", "How we work").
NOT_A_NAME_OPENERS = frozenset("about how what why when where who getting introducing welcome meet".split())


# --- the support check (rag.support.check) ---

# Words that refer to a document in general: a lead-in naming only these refers to the cited block.
GENERIC_SOURCE_WORDS = """
        document documents documentation docs doc manual manuals guide guides handbook policy policies
        article page pages section sections faq source sources text notes note release wiki knowledge base
        help center centre official current latest cited passage entry record records article guidance
        older newer earlier previous original
        guideline guidelines reference material file"""
# Verbs by which a sentence attributes a claim to its source ("the policy states that ...").
SOURCE_VERBS = (
    r"(?:states?|says?|notes?|explains?|specif(?:y|ies)|mentions?|confirms?|indicates?|reports?|documents?"
    r"|clarif(?:y|ies)|describes?|outlines?|stipulates?|provides?|sets? out|tells? us|reads?|gives?|lists?"
    r"|puts?|shows?|warns?|recommends?|advises?|points? out|adds?|records?)"
)

# Scope words: a sentence that brings one in that its span does not have (nor an equivalent) widens or
# narrows the claim ("every delivery" -> "any delivery", "per token" -> "the whole workspace").
SCOPE_GROUPS = (
    {"any", "anyone", "anybody", "anything", "whatever", "whichever", "regardless"},
    {"every", "each", "all", "everyone", "everybody", "everything"},
    {"whole", "entire", "all"},
    {"always", "every"},
    {"only", "solely", "exclusively", "unless"},
    {"except", "excluding"},
    {"including", "even"},
)
# Opposites: a sentence that says one where its span says the other, and not the first, reverses it.
OPPOSITES = (
    ("still", "no longer"),
    ("always", "never"),
    ("including", "excluding"),
    ("includes", "excludes"),
    ("include", "exclude"),
    ("allowed", "forbidden"),
    ("allowed", "prohibited"),
    ("required", "optional"),
    ("mandatory", "optional"),
    ("enabled", "disabled"),
    ("visible", "hidden"),
    ("public", "private"),
    ("before", "after"),
    ("at least", "at most"),
    ("minimum", "maximum"),
    ("increase", "decrease"),
    ("increases", "decreases"),
    ("automatically", "manually"),
    ("immediately", "later"),
    ("upgrade", "downgrade"),
    ("upgrades", "downgrades"),
)
# Closed-class words the stop words leave in (pronouns, determiners, wh-words): they restate, never name a
# subject, so the alignment of a sentence to its span passes over them.
FUNCTION_WORDS = frozenset(
    """another anyone anybody anything anywhere everyone everybody everything everywhere someone somebody
    something somewhere whatever whenever wherever whichever whoever whose either neither none nothing
    nobody nowhere else many much several whether yet however thus hence therefore although though
    whereas ones""".split()
)
# A compound preposition is one of these, a noun, then one of the tails ("in addition to", "on top of",
# "in front of", "on behalf of"): its noun relates two things and names neither.
COMPOUND_PREPOSITION_HEADS = frozenset("in on at by for with from".split())
COMPOUND_PREPOSITION_TAILS = frozenset("of to with".split())
# Words that only stand in for a scope word of the span ("only" ~ "unless"), never flagged themselves.
SCOPE_EQUIVALENTS_ONLY = frozenset({"unless", "anything", "whichever"})
# When "only" in a sentence restates its span rather than adding a claim (`support.lexical.new_scope`):
# the span says itself that the thing is exclusive or limited (a word of exclusion, a closed count of
# items), bounds the figure "only" stands before ("up to 5" / "only 5"), or states a definition by its
# condition ("X counts as Y when C": the condition is the whole criterion, so "X only counts as Y when C").
# Words and phrases by which a span says itself that a thing is exclusive or limited.
EXCLUSIVE_RE = re.compile(
    r"\b(?:only|unless|solely|exclusively|just|alone|no (?:other|one else)|nobody else|nothing else"
    r"|none other|(?:limited|restricted|confined) to|reserved for|(?:a|one) single|the one)\b",
    re.IGNORECASE,
)
# The span's words the negation rule pairs with the "only" of a sentence: "only" itself, and "unless"
# after a negation ("cannot X unless Y" = "only X if Y").
ONLY_PAIRED_RE = re.compile(r"\b(?:only|unless)\b", re.IGNORECASE)
# A bound just before a figure ("up to 5", "at most five", "limited to 20"), and the words "only" may
# stand before the figure it limits ("only 5", "can only have 5", "only up to 5").
BOUND_BEFORE_RE = re.compile(
    r"\b(?:up to|at most|no more than|(?:a )?maximum of|maximum|max|capped at|limited to)\s+(?:[$€£]\s*)?$",
    re.IGNORECASE,
)
ONLY_BEFORE_FIGURE_RE = re.compile(r"only\s+(?:[a-z'’]+\s+){0,2}(?:up to\s+)?(?:[$€£]\s*)?", re.IGNORECASE)
DEFINITION_RE = re.compile(
    r"\b(?:counts?|counted|qualif(?:y|ies)|(?:is|are) (?:considered|deemed|regarded|treated|classed|defined))"
    r"\s+(?:as|for)?\b[^.;:]*?\b(?:when|if|once|as long as|provided)\b",
    re.IGNORECASE,
)
ONLY_CONDITION_RE = re.compile(
    r"\bonly\b(?:\s+[\w'’-]+){0,5}?\s+(?:when|if|once|as long as|provided)\b", re.IGNORECASE
)

# --- text addressed to an assistant (rag.language.injection) ---

# Who a planted instruction addresses, who it asks to be told, the verbs and openers it uses.
ASSISTANT_WORDS = (
    r"(?:AI|A\.I\.|assistants?|chat ?bots?|bots?|(?:large )?language models?|LLMs?|GPT|models?|agents?)"
)
READER_WORDS = (
    r"(?:the |any |all |every |our |your )?"
    r"(?:users?|customers?|readers?|askers?|visitors?|people|person|them|everyone)"
)
TELL_VERBS = r"(?:tell|say|answer|respond|reply|inform|assure|state|claim|confirm|explain|write|output|print)"
TELL_OPENERS = r"(?:(?:then|also|now|please|and|instead|always|simply|just)[\s,]+)*"

# --- the answer core (rag.answer.core) ---

# Closing remarks and lead-ins addressed to the reader carry no claim of their own.
PLEASANTRY_RE = re.compile(
    r"\b(?:hope (?:this|that) helps|let me know|feel free|happy to help|glad to help|"
    r"(?:here(?:'s| is| are)|below (?:is|are)) (?:what|a summary|the (?:relevant|key))|"
    r"based on the (?:provided |available )?(?:documents|sources|context))\b",
    re.IGNORECASE,
)
