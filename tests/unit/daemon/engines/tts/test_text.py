import pytest

from daemon.engines.tts.text import SentenceSplitter, split_sentences, spoken


def test_split_complete_text():
    assert split_sentences("Hello there, friend. How are you? Fine!") == [
        "Hello there, friend.",
        "How are you?",
        "Fine!",
    ]


def test_abbreviations_stay_whole():
    assert split_sentences("Dr. Smith lives on Elm St. near the park. It is nice here.") == [
        "Dr. Smith lives on Elm St. near the park.",
        "It is nice here.",
    ]


def test_streamed_pieces_emit_sentences_as_soon_as_they_end():
    splitter = SentenceSplitter()
    out = []
    for piece in ["The lights", " are on now", ". The", " heat is set to 20", " degrees. Ok"]:
        out.append(splitter.feed(piece))
    assert out == [[], [], ["The lights are on now."], [], ["The heat is set to 20 degrees."]]
    assert splitter.flush() == ["Ok"]


def test_whitespace_only_is_nothing():
    assert split_sentences("   \n ") == []


def test_first_clause_lets_speech_start_early():
    splitter = SentenceSplitter(first_clause_chars=20)
    assert splitter.feed("Sure, ") == []  # too short to stand alone
    assert splitter.feed("the kitchen lights are on, ") == ["Sure, the kitchen lights are on,"]
    assert splitter.feed("and the heat is at twenty, as you asked. ") == [
        "and the heat is at twenty, as you asked."
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Turn on the kitchen lights.", "Turn on the kitchen lights."),
        (
            "**Sure!** Here's the list:\n- milk\n- eggs\n1. bread",
            "Sure! Here's the list:\nmilk,\neggs,\nbread",
        ),
        (
            "# Weather\nIt's *sunny* today ☀️, see [the forecast](https://example.org/x).",
            "Weather,\nIt's sunny today, see the forecast.",
        ),
        ("Lights on 💡👍🏽 done.", "Lights on done."),
        ("Use `snake_case` and my_var_name.", "Use snake_case and my_var_name."),
        ("5*3 is 15, and a*b too.", "5*3 is 15, and a*b too."),
        ("| room | temp |\n|---|---:|\n| hall | 21 |", "room, temp,\nhall, 21"),
        ("```\nprint(1)\n```\nDone.", "print(1),\nDone."),
        ("> quoted\n---\n***all of it***", "quoted,\nall of it"),
        ("👍", ""),
    ],
)
def test_markdown_and_emoji_are_not_read_aloud(text, said):
    assert spoken(text) == said
