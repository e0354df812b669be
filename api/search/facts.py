"""What a memory states about whom: the attribute a new memory can take over from an older one.

Automatic supersession must never end a fact that is still true, so it acts only on what this
module reads with confidence: one attribute of one subject (the user, or a named person:
"Anna's city" is not "my city"), with one value at a time. Two forms are read:

- "Key: value" lines, as agents and memory runs write them ("Lives in: Porto", "Landlord:
  Mr Murphy", "Sister's job: nurse"): a key names one attribute, unless it names things
  there are many of at once (likes, allergies, languages, friends, sisters, reminders: a
  plural key counts as many);
- plain statements of common attributes, with or without their subject ("I moved to
  Porto", "Moved to Croydon last weekend", "The user works at Acme", "My new phone number is
  555 0100", "Reports to Carla Mota now", "Broke up with Miguel", "Call me Bob").

Negations and the past tense ("I don't live in Lisbon any more", "I lived in London for a
year") state no current value and are never read. Pure functions: every replica reads a
text the same way.

Written by hand because no library reads these forms: a parser finds subjects and objects,
but not which attributes hold one value at a time, which is the whole question here.
"""

import re
import unicodedata
from dataclasses import dataclass

# Names of one attribute, by the words that name it: a key or a sentence's noun.
SYNONYMS = {
    "full name": "name",
    "first name": "name",
    "preferred name": "name",
    "living in": "lives in",
    "location": "lives in",
    "city": "lives in",
    "home city": "lives in",
    "based in": "lives in",
    "home": "lives in",
    "residence": "lives in",
    "home address": "address",
    "works for": "works at",
    "employer": "works at",
    "company": "works at",
    "workplace": "works at",
    "job title": "job",
    "title": "job",
    "occupation": "job",
    "role": "job",
    "position": "job",
    "profession": "job",
    "email address": "email",
    "phone number": "phone",
    "mobile": "phone",
    "mobile number": "phone",
    "cell": "phone",
    "number": "phone",
    "spouse": "partner",
    "wife": "partner",
    "husband": "partner",
    "girlfriend": "partner",
    "boyfriend": "partner",
    "relationship status": "partner",
    "relationship": "partner",
    "boss": "manager",
    "line manager": "manager",
    "supervisor": "manager",
    "reports to": "manager",
    "time zone": "timezone",
    "university": "school",
    "favourite team": "team",
    "broadband provider": "broadband",
    "internet provider": "broadband",
    "gp": "doctor",
}
# Keys of things there are many of at once, and relations (one may have several sisters).
MULTI_VALUED = {
    "like", "likes", "love", "loves", "enjoys", "dislikes", "hates", "hobby", "hobbies",
    "interest", "interests", "allergic to", "allergy", "allergies", "speaks", "language",
    "languages", "learning", "friend", "friends", "pet", "pets", "kid", "kids", "child",
    "children", "son", "daughter", "sister", "brother", "sibling", "cousin", "aunt", "uncle",
    "niece", "nephew", "colleague", "neighbour", "neighbor", "goal", "goals", "skill",
    "skills", "note", "notes", "todo", "to do", "reminder", "idea", "ideas", "quote", "tip",
    "recipe", "event", "meeting", "appointment", "task", "visited", "plan", "plans", "wants",
    "wishlist", "prefers", "tag", "tags", "project", "projects", "book", "books",
}  # fmt: skip
_KEY_WORDS = 4  # a longer "key" is a sentence with a colon in it
_USER = {"i", "me", "my", "user", "the user", "user's", "the user's", "i'm", "mine"}
_RELATIONS = (
    "best friend|friend|sister|brother|mother|father|mom|mum|dad|wife|husband|partner|son|"
    "daughter|boss|manager|colleague|coworker|cousin|aunt|uncle|neighbou?r|roommate|flatmate|"
    "girlfriend|boyfriend|grandmother|grandfather|grandma|grandpa|niece|nephew"
)
_NAME = r"[A-Z][\w\-]+(?: [A-Z][\w\-]+)?"
# Words that open a note about the user without naming anyone ("Just moved to Brighton").
_NOT_A_NAME = r"(?!(?:Just|Now|Recently|Finally|Also|Actually|Today|Yesterday|Still|Then)\b)"
# Who a statement is about: the user; a relation ("my sister", "Sister Chioma", "Aiko's
# brother Hiro": the name when given); or a capitalised name.
_SUBJECT = (
    rf"(?P<subject>I|[Tt]he user|User|(?:(?:[Mm]y|[Tt]he user's|(?P<owner>{_NAME})'s) )?"
    rf"(?P<relation>(?i:{_RELATIONS}))(?: (?P<named>{_NAME}))?|{_NOT_A_NAME}(?P<name>{_NAME}))"
)
_STEP = r"(?i:(?:has|have|'ve|just|recently|finally|now|also|actually) ?)*"
_VALUE = r"(?P<value>[^.!?;\n]+?)"
_END = r"\s*(?:[.!?;]|$)"
_DIETS = r"vegan|vegetarian|pescatarian|flexitarian|carnivore|keto|paleo|gluten-free"
_NEGATED = re.compile(
    r"\b(not|no longer|never|n't|used to|anymore|any more|formerly|previously|was|were|"
    r"thinking|will|going to|plans?|planning|might|maybe|would)\b",
    re.I,
)


def _verb(words: str) -> str:
    """A statement: its subject, if any (none: the user, as agents write notes), then `words`
    (a verb phrase, its first letter in either case when it opens the text)."""
    return rf"^(?:{_SUBJECT}(?: |(?=')))?{_STEP}(?i:{words})"


_STATEMENTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(_verb(r"(?:lives?|living|resides?|is living|am living) (?:now )?in ")
                + _VALUE + _END), "lives in"),
    # A place, or a home: "Moved to the ICU" is a ward.
    (re.compile(_verb(r"(?:moved|relocated) (?:back )?to ")
                + r"(?=[A-Z]|(?i:(?:a|an|my|our) (?:new )?(?:flat|house|home|place|apartment|"
                + r"studio|room)\b))" + _VALUE + _END), "lives in"),
    (re.compile(_verb(r"(?:am|is|'m) (?:now )?based in ") + _VALUE + _END), "lives in"),
    (re.compile(_verb(r"(?:works?|working|am working|is working) (?:now )?(?:at|for) ")
                + _VALUE + _END), "works at"),
    (re.compile(_verb(r"(?:joined|started (?:a new job )?at|started working (?:at|for)) ")
                + _VALUE + _END), "works at"),
    (re.compile(_verb(r"(?:works?|working) as (?:an? )?") + _VALUE + _END), "job"),
    (re.compile(_verb(r"(?:started as|got promoted to|was promoted to|promoted to) (?:an? )?")
                + _VALUE + _END), "job"),
    (re.compile(_verb(r"(?:am|is|'m) (?:now )?an? ")
                + r"(?P<value>[^.!?;\n]+? at [^.!?;\n]+?)" + _END), "job"),
    (re.compile(_verb(r"(?:reports?|reporting) (?:now )?to ") + _VALUE + _END), "manager"),
    (re.compile(_verb(r"(?:(?:am|is|'m) )?(?:now )?(?:dating|seeing) ")
                + _VALUE + _END), "partner"),
    (re.compile(_verb(r"(?:am|is|'m) (?:now )?(?:an? )?") + rf"(?P<value>(?i:{_DIETS}))\b"),
     "diet"),
    (re.compile(_verb(r"(?:gone|went|switched|turned) (?:back )?(?:to )?(?:being )?(?:an? )?")
                + rf"(?P<value>(?i:{_DIETS}))\b"), "diet"),
    (re.compile(_verb(r"commutes? (?:by|on) ") + _VALUE + _END), "commute"),
    (re.compile(_verb("")
                + r"(?P<value>(?i:takes?|rides?|drives?|bikes?|cycles?|walks?)(?: [^.!?;\n]*?)?)"
                + r" (?i:to (?:work|the office)(?: now| these days| most days)?)" + _END),
     "commute"),
    (re.compile(_verb(r"(?:drives?|rides?) an? ") + _VALUE + _END), "car"),
    (re.compile(_verb(r"supports? ") + _VALUE + _END), "team"),
    (re.compile(_verb(r"(?:am|is|'m) (?P<value>\d{1,3}) years? old") + _END), "age"),
    (re.compile(r"^(?i:(?:actually,? )?(?:please )?call me )" + _VALUE + _END), "name"),
]  # fmt: skip
# Changes of a thing the user has one of: "Switched gyms to Fitness Hut".
_SWITCHED = re.compile(
    _verb(r"(?:switched|changed|moved) ") + r"(?P<noun>[a-z]+(?: [a-z]+)?) to " + _VALUE + _END
)
# An end with no new value: the partner is no one now.
_APART = [
    re.compile(
        rf"^{_SUBJECT} and (?:I|me|[Tt]he user|{_NAME}|(?i:my \w+)) "
        r"(?i:broke up|split up|separated|divorced)\b"
    ),
    re.compile(
        _verb(r"(?:(?:am|is|'m) (?:now )?)?(?:broke up|split up|separated|divorced|single)\b")
    ),
]
_I_AND = re.compile(rf"^(?:{_NAME}) and I\b")
# "My new phone number is ...", "The user's employer is now Acme", "Anna's city is Paris".
_POSSESSIVE = re.compile(
    rf"^(?:(?P<mine>[Mm]y|[Tt]he user's|[Uu]ser's)|(?:[Mm]y )?(?P<relation>(?i:{_RELATIONS}))"
    rf"(?: (?P<named>{_NAME}))?'s|(?P<name>{_NAME})'s) (?:new |current |latest )?"
    r"(?P<attribute>[a-z][A-Za-z ]{1,30}?)(?: now| right now| these days)? "
    r"(?:is|are|went up to|went down to|changed to)(?: now)? " + _VALUE + _END
)
_KEY_LINE = re.compile(r"^(?:\[[\w\-]+\] )?(?P<key>[A-Za-z][\w '\-]{0,40}?)\s*:\s*(?P<value>\S.*)$")
_POSSESSIVE_KEY = re.compile(r"^(?P<whose>[\w\- ]+?)'s (?P<attribute>.+)$")
_QUALIFIED = re.compile(r"^(?P<key>.+?) (?:at|in|for|with) \S.*$")  # "Rent in Brighton"
_KEY_PREFIX = re.compile(r"^(?:(?:new|current|latest|my|the|our|main|primary) )+")
_TRAILING = re.compile(
    r"(?:\s+(?:now|these days|right now|at the moment|currently|again|too|"
    r"(?:last|this) (?:week|weekend|month|year)|yesterday|today|since .+|from .+))+$"
)
_ASIDE = re.compile(r"\s*(?:\([^)]*\)|\s-\s.*|,\s*(?:still|now|since|from)\b.*)")
_LEADING = re.compile(r"^(?:now |currently |a |an |the )+")


@dataclass(frozen=True)
class Statement:
    """An attribute's value for a subject: `key` says under which category, whose and which
    ("|user|lives in"; "fact|anna|lives in"), `value` what it is, normalized."""

    key: str
    value: str


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _attribute(words: str) -> str | None:
    """The attribute a key or a noun names; None for things there are many of at once."""
    key = _KEY_PREFIX.sub("", _fold(words)).replace("favourite", "favorite").strip()
    if key not in SYNONYMS and key not in MULTI_VALUED:
        qualified = _QUALIFIED.match(key)  # "manager at monzo": the manager
        key = qualified["key"] if qualified else key
    if not key or len(key.split()) > _KEY_WORDS or key in MULTI_VALUED:
        return None
    if key.split()[-1] in MULTI_VALUED:
        return None
    last = key.split()[-1]
    if key not in SYNONYMS and last.endswith("s") and not last.endswith(("ss", "us", "is")):
        return None  # a plural: several at once ("running shoes", "allergies")
    return SYNONYMS.get(key, key)


def _value(text: str) -> str:
    value = _ASIDE.sub("", _fold(text)).strip(" .,!;")
    value = _TRAILING.sub("", value)
    return _LEADING.sub("", value).strip(" .,!;")


def _subject(found: re.Match[str]) -> str:
    groups = found.groupdict()
    named = groups.get("named") or groups.get("name")
    if named:
        return _fold(named)
    if groups.get("relation"):
        return _fold(groups["relation"])
    if groups.get("subject") and _fold(groups["subject"]) not in _USER:
        return _fold(groups["subject"])
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
    for pattern in _APART:
        apart = pattern.match(line)
        if apart is not None:
            return ("user" if _I_AND.match(line) else _subject(apart)), "partner", "single"
    for pattern, attribute in _STATEMENTS:
        found = pattern.match(line)
        if found is not None:
            return _subject(found), attribute, _value(found["value"])
    switched = _SWITCHED.match(line)
    if switched is not None:
        noun = switched["noun"]
        named = _attribute(noun.removesuffix("s") if noun.endswith("s") else noun)
        if named is not None:
            return _subject(switched), named, _value(switched["value"])
    found = _POSSESSIVE.match(line)
    if found is None:
        return None
    named = _attribute(found["attribute"])
    if named is None:
        return None
    return ("user" if found["mine"] else _subject(found)), named, _value(found["value"])
