"""What a memory states about whom: the attribute a new memory can take over from an older one.

Automatic supersession must never merge two true facts, so it acts only on what this module
can read with confidence: one attribute that holds one value at a time (where someone lives,
their employer, their phone number), of one subject (the user, or a named person: "Anna's
city" is not "my city"). Two forms are read:

- "Key: value" lines, as agents and memory runs write them ("Lives in: Porto", "Sister's job:
  nurse"), when the key names a single-valued attribute;
- plain statements of those attributes ("I moved to Porto", "The user works at Acme", "My
  new phone number is 555 0100", "Call me Bob").

Anything else (likes, friends, allergies: many at once; negations and the past tense: not a
new value) states no attribute, and is never superseded automatically. Pure functions: every
replica reads a text the same way.

Written by hand because no library reads these forms: an NLP parser would find subjects and
objects, but not which attributes hold one value at a time, which is the whole question.
"""

import re
import unicodedata
from dataclasses import dataclass

# Attributes that hold one value at a time, by the words that name them (after the
# subject: "phone number", "job title").
SINGLE_VALUED = {
    "name": "name",
    "full name": "name",
    "first name": "name",
    "preferred name": "name",
    "nickname": "nickname",
    "lives in": "lives in",
    "living in": "lives in",
    "location": "lives in",
    "city": "lives in",
    "home city": "lives in",
    "current city": "lives in",
    "based in": "lives in",
    "home": "lives in",
    "residence": "lives in",
    "address": "address",
    "home address": "address",
    "country": "country",
    "works at": "works at",
    "works for": "works at",
    "employer": "works at",
    "company": "works at",
    "workplace": "works at",
    "job": "job",
    "job title": "job",
    "title": "job",
    "occupation": "job",
    "role": "job",
    "position": "job",
    "profession": "job",
    "age": "age",
    "email": "email",
    "email address": "email",
    "phone": "phone",
    "phone number": "phone",
    "mobile": "phone",
    "mobile number": "phone",
    "cell": "phone",
    "partner": "partner",
    "spouse": "partner",
    "wife": "partner",
    "husband": "partner",
    "girlfriend": "partner",
    "boyfriend": "partner",
    "relationship status": "relationship status",
    "manager": "manager",
    "boss": "manager",
    "timezone": "timezone",
    "time zone": "timezone",
    "car": "car",
    "diet": "diet",
    "gym": "gym",
    "school": "school",
    "university": "school",
    "salary": "salary",
    "rent": "rent",
    "doctor": "doctor",
    "dentist": "dentist",
    "bank": "bank",
    "team": "team",
    "favorite team": "team",
    "favourite team": "team",
}
# Key prefixes that make any attribute single-valued: "Favourite food", "Current project".
_SINGLE_PREFIXES = ("favorite ", "favourite ", "current ", "preferred ", "primary ", "main ")
_USER = {"i", "me", "my", "user", "the user", "user's", "the user's", "i'm"}
_RELATIONS = (
    "friend|best friend|sister|brother|mother|father|mom|mum|dad|wife|husband|partner|son|"
    "daughter|boss|manager|colleague|coworker|cousin|aunt|uncle|neighbou?r|roommate|flatmate|"
    "girlfriend|boyfriend|grandmother|grandfather|niece|nephew"
)
_NAME = r"[A-Z][\w\-]+(?: [A-Z][\w\-]+)?"
# Who a statement is about: the user, a relation ("my sister", "my friend Anna": Anna), or a
# capitalised name.
_SUBJECT = (
    rf"(?P<subject>I|[Tt]he user|User|(?:[Mm]y|[Tt]he user's) (?P<relation>{_RELATIONS})"
    rf"(?: (?P<named>{_NAME}))?|(?P<name>{_NAME}))"
)
# Only a person moves or joins: "Meeting moved to Friday" is no one's new home.
_PERSON = (
    rf"(?P<subject>I|[Tt]he user|User|(?:[Mm]y|[Tt]he user's) (?P<relation>{_RELATIONS})"
    rf"(?: (?P<named>{_NAME}))?)"
)
_VALUE = r"(?P<value>[^.!?;\n]+?)"
_END = r"\s*(?:[.!?;]|$)"
_NEGATED = re.compile(
    r"\b(not|no longer|never|n't|used to|anymore|any more|formerly|previously|was|were)\b", re.I
)
_STATEMENTS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            rf"^{_SUBJECT} (?:now )?(?:lives?|am living|is living|resides?) (?:now )?in "
            + _VALUE
            + _END
        ),
        "lives in",
    ),
    (
        re.compile(
            rf"^{_PERSON} (?:has |have |just |recently )*(?:moved|relocated) "
            rf"(?:back )?to {_VALUE}{_END}"
        ),
        "lives in",
    ),
    (re.compile(rf"^{_SUBJECT} (?:am|is) (?:now )?based in {_VALUE}{_END}"), "lives in"),
    (
        re.compile(
            rf"^{_SUBJECT} (?:now )?(?:works?|am working|is working) (?:now )?(?:at|for) "
            + _VALUE
            + _END
        ),
        "works at",
    ),
    (
        re.compile(
            rf"^{_PERSON} (?:has |have |just |recently )*(?:joined|started (?:a new job )?at|"
            rf"started working (?:at|for)) {_VALUE}{_END}"
        ),
        "works at",
    ),
    (re.compile(rf"^{_SUBJECT} (?:am|is) (?P<value>\d{{1,3}}) years? old{_END}"), "age"),
    (re.compile(rf"^(?:[Aa]ctually,? )?(?:please )?call me {_VALUE}{_END}"), "name"),
]
# "My new phone number is ...", "The user's employer is now Acme", "Anna's city is Paris".
_POSSESSIVE = re.compile(
    rf"^(?:(?P<mine>[Mm]y|[Tt]he user's|[Uu]ser's)|(?:[Mm]y (?P<relation>{_RELATIONS})"
    rf"(?: (?P<named>{_NAME}))?'s)|(?P<name>{_NAME})'s) (?:new |current |latest )?"
    rf"(?P<attribute>[a-z][a-z ]{{1,30}}?) (?:is|are) (?:now )?{_VALUE}{_END}"
)
_KEY_LINE = re.compile(r"^(?:\[[\w\-]+\] )?(?P<key>[A-Za-z][\w '\-]{0,40}?)\s*:\s*(?P<value>\S.*)$")
_POSSESSIVE_KEY = re.compile(r"^(?P<whose>[\w\- ]+?)'s (?P<attribute>.+)$")
_TRAILING = re.compile(r"\s+(?:now|these days|at the moment|currently|since \w+(?: \d{4})?)$")
_LEADING = re.compile(r"^(?:now |currently |a |an |the )")


@dataclass(frozen=True)
class Statement:
    """An attribute's value for a subject: `key` says whose and which ("user|lives in",
    under a category: "fact|user|lives in"), `value` what it is, normalized."""

    key: str
    value: str


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _attribute(words: str) -> str | None:
    """The attribute these words name, if it holds one value at a time."""
    folded = _fold(words).removeprefix("new ").removeprefix("the ")
    if folded in SINGLE_VALUED:
        return SINGLE_VALUED[folded]
    if folded.startswith(_SINGLE_PREFIXES) and len(folded.split()) <= 4:
        return folded.replace("favourite ", "favorite ")
    return None


def _value(text: str) -> str:
    value = _fold(text).rstrip(" .,!;")
    value = _TRAILING.sub("", value)
    return _LEADING.sub("", value).strip(" .,!;")


def _subject(found: re.Match[str]) -> str:
    groups = found.groupdict()
    named = groups.get("named") or groups.get("name")
    if named:
        return _fold(named)
    if groups.get("relation"):
        return _fold(groups["relation"])
    return "user"


def statement_of(text: str, category: str | None = None) -> Statement | None:
    """The single-valued attribute `text` states and its value; None when it states none
    this module can read with confidence."""
    line = " ".join(text.split())
    if not line or len(line) > 300 or "\n" in text.strip():
        return None
    found = _key_line(line) or _sentence(line)
    if found is None:
        return None
    subject, attribute, value = found
    if not value:
        return None
    return Statement(f"{category or ''}|{subject}|{attribute}", value)


def _key_line(line: str) -> tuple[str, str, str] | None:
    found = _KEY_LINE.match(line)
    if found is None:
        return None
    key, subject = found["key"], "user"
    whose = _POSSESSIVE_KEY.match(key)
    if whose is not None:
        owner = _fold(whose["whose"])
        subject = "user" if owner in _USER else owner.removeprefix("my ")
        key = whose["attribute"]
    attribute = _attribute(key)
    if attribute is None:
        return None
    return subject, attribute, _value(found["value"])


def _sentence(line: str) -> tuple[str, str, str] | None:
    if _NEGATED.search(line):
        return None
    for pattern, attribute in _STATEMENTS:
        found = pattern.match(line)
        if found is not None:
            subject = _subject(found) if "subject" in found.groupdict() else "user"
            return subject, attribute, _value(found["value"])
    found = _POSSESSIVE.match(line)
    if found is None:
        return None
    named = _attribute(found["attribute"])
    if named is None:
        return None
    subject = "user" if found["mine"] else _subject(found)
    return subject, named, _value(found["value"])
