"""Block rules without storage: names, words, capacity, the system-prompt section."""

import pytest

from api.memory import blocks


@pytest.mark.parametrize(
    ("typed", "stored"),
    [
        # Seed 000's three examples, verbatim.
        ("Human - Facts about the user", "human"),
        ("Important_Financial_Data", "important_financial_data"),
        ("My Custom Block", "my_custom_block"),
        # What models also send: the prompt heading, brackets, stray spacing and case.
        ("[Human - Facts about the user]", "human"),
        ("  PERSONA ", "persona"),
        ("Persona — Your traits and characteristics", "persona"),
        ("project-notes", "project_notes"),
        ("Q3  goals!", "q3_goals"),
        ("!!!", ""),
    ],
)
def test_block_names_are_normalized(typed: str, stored: str) -> None:
    assert blocks.normalize_block_name(typed) == stored


def test_valid_names_are_their_own_normal_form() -> None:
    assert blocks.is_valid_block_name("my_custom_block")
    assert not blocks.is_valid_block_name("My Custom Block")
    assert not blocks.is_valid_block_name("")
    assert not blocks.is_valid_block_name("x" * (blocks.MAX_BLOCK_NAME + 1))


def test_default_blocks() -> None:
    assert [(b.name, b.description) for b in blocks.DEFAULT_BLOCKS] == [
        ("human", "Facts about the user"),
        ("persona", "Your traits and characteristics"),
    ]


def test_words_are_counted_over_all_lines() -> None:
    # Seed 000's Alice: "Name: Alice" is 2 words, with "Works at: Google" 5 in all.
    assert blocks.count_words(["Name: Alice"]) == 2
    assert blocks.count_words(["Name: Alice", "Works at: Google"]) == 5
    assert blocks.count_words([]) == 0


def test_the_warning_starts_at_exactly_80_percent() -> None:
    assert not blocks.needs_warning(3999, 5000)
    assert blocks.needs_warning(4000, 5000)
    assert blocks.percent_used(4000, 5000) == 80
    assert blocks.percent_used(3999, 5000) == 79
    assert blocks.needs_warning(8, 10)
    assert not blocks.needs_warning(7, 10)


def test_lines_are_cleaned_to_one_line() -> None:
    assert blocks.clean_line("  Name:   Alice\n Smith ") == "Name: Alice Smith"


def test_core_memory_renders_as_in_the_seed() -> None:
    rendered = blocks.render_core_memory(
        [
            (
                "human",
                "Facts about the user",
                ["Name: John Smith", "Lives in: London, UK", "Occupation: Software Engineer"],
            ),
            (
                "persona",
                "Your traits and characteristics",
                ["Helpful and professional", "Remembers everything discussed"],
            ),
        ]
    )
    assert rendered == (
        "<core_memory>\n"
        "[Human - Facts about the user]\n"
        "1: Name: John Smith\n"
        "2: Lives in: London, UK\n"
        "3: Occupation: Software Engineer\n"
        "\n"
        "[Persona - Your traits and characteristics]\n"
        "1: Helpful and professional\n"
        "2: Remembers everything discussed\n"
        "</core_memory>"
    )


def test_a_heading_normalizes_back_to_its_block() -> None:
    heading = blocks.render_block("my_custom_block", "Things", []).strip("[]")
    assert blocks.normalize_block_name(heading) == "my_custom_block"
