"""What a memory states: the attribute a newer memory may take over (api/search/facts.py).
Two texts supersede each other only when their keys are equal and their values differ."""

import pytest

from api.search.facts import statement_of

SAME_FACT = [  # (older, newer): one attribute of one subject, another value
    ("Lives in: Lisbon", "I moved to Porto"),
    ("I live in Lisbon", "Just moved to Brighton!"),
    ("Home: Peckham, London", "Moved to Croydon last weekend."),
    ("Employer: Acme", "The user now works at Globex."),
    ("Line manager: Mrs Okafor", "Reports to Carla Mota now."),
    ("Partner: Miguel", "Broke up with Miguel."),
    ("Relationship status: single", "Dating Rui now - we met at the climbing wall."),
    ("My phone: +34 612 345 678", "New number: +34 699 876 543"),
    ("Gym: Solinca Boavista", "Switched gyms to Fitness Hut Braga."),
    ("Landlord: Mrs Byrne", "Landlord: Declan Walsh"),
    ("Rent: £850", "My rent went up to £1,240."),
    ("I'm vegan.", "I've gone back to vegetarian, eggs and dairy are fine again."),
    ("Name: Alice Moreira", "Actually, call me Bob"),
    ("Léa's rent: €780", "Léa's rent in Paris is €1,350."),
]
NOT_THE_SAME = [  # both may be true at once
    ("My friend Anna lives in Paris.", "My friend Tomás lives in Rome."),
    ("Likes: pastel de nata", "Likes: sushi"),
    ("Allergic to: penicillin", "Allergic to: cats"),
    ("Speaks: German, English", "Speaks: some Spanish"),
    ("Lives in: Lisbon", "My sister Rita lives in Coimbra."),
    ("Work phone: +351 220 104 377", "Mum's phone: +351 239 481 662"),
    ("Phone: 555 0100", "Locker number at the leisure centre: 42"),
    ("Sister: Tanya, lives in Atlanta", "Sister: Maria, lives in Boston"),
    ("Lives in: Berlin", "Moved to the ICU."),
    ("Running shoes: Hoka", "Running shoes: Asics"),
]
NOTHING = [
    "I don't live in Lisbon any more",
    "I lived in London for a year as an Erasmus student.",
    "Sean is thinking about moving to Berlin next year.",
    "Léa is in Venice this week for the Biennale.",
    "The user grew up in Osaka.",
    "I love ramen too.",
    "Tyre pressures: 33 psi front, 30 rear",
    "A note\nover two lines: here",
]


@pytest.mark.parametrize(("older", "newer"), SAME_FACT)
def test_a_new_value_of_one_fact(older: str, newer: str) -> None:
    before, after = statement_of(older), statement_of(newer)
    assert before is not None
    assert after is not None
    assert before.key == after.key
    assert before.value != after.value


@pytest.mark.parametrize(("older", "newer"), NOT_THE_SAME)
def test_facts_that_hold_together(older: str, newer: str) -> None:
    before, after = statement_of(older), statement_of(newer)
    assert before is None or after is None or before.key != after.key


@pytest.mark.parametrize("text", NOTHING)
def test_no_current_value(text: str) -> None:
    assert statement_of(text) is None


def test_the_same_value_said_another_way_and_categories() -> None:
    lines = [statement_of(t) for t in ("Lives in: Porto (since 2024)", "I live in Porto now.")]
    assert lines[0] == lines[1]
    fact, preference = statement_of("Employer: Acme", "fact"), statement_of("Employer: X", None)
    assert fact is not None
    assert preference is not None
    assert fact.key != preference.key
