import pytest

from daemon.engines.tts.text import (
    SentenceSplitter,
    ends_phrase,
    first_phrase,
    split_sentences,
    spoken,
)


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


def test_the_first_phrase_lets_speech_start_early():
    splitter = SentenceSplitter(first_words=(3, 5))
    assert splitter.feed("Sure, ") == []  # too short to stand alone
    assert splitter.feed("the kitchen lights are on, ") == ["Sure, the kitchen lights are"]
    assert splitter.feed("and the heat is at twenty, as you asked. ") == [
        "on, and the heat is at twenty, as you asked."
    ]


def _first_piece(reply: str) -> list[str]:
    """What a streamed reply's first pieces are, fed a word at a time as an LLM writes."""
    splitter = SentenceSplitter(first_words=(3, 5))
    out: list[str] = []
    for i, word in enumerate(reply.split(" ")):
        out += splitter.feed(word if i == 0 else f" {word}")
    return out + splitter.flush()


@pytest.mark.parametrize(
    ("reply", "first"),
    [
        # A clause mark after three words or more.
        ("Okay, sure thing, the lights are on.", "Okay, sure thing,"),
        # Before a word that starts a phrase.
        ("Okay, I've set a timer for ten minutes.", "Okay, I've set a timer"),
        ("I have turned on the lights in the kitchen.", "I have turned"),
        # No break within five words: five words, never ending on a joining word.
        ("The weather tomorrow will be sunny and warm.", "The weather tomorrow will be"),
        ("Please wait while I look up the forecast.", "Please wait while I look"),
        # A sentence that ends first is the first piece.
        ("It is 3:45 PM. Anything else?", "It is 3:45 PM."),
        ("I've turned on the kitchen lights.", "I've turned on the kitchen lights."),
    ],
)
def test_the_first_piece_is_a_short_phrase(reply: str, first: str) -> None:
    pieces = _first_piece(reply)
    assert pieces[0] == first
    assert " ".join(pieces) == reply  # nothing lost, nothing added


def test_only_the_first_piece_is_short() -> None:
    pieces = _first_piece("Sure, I can do that for you. It will take a minute or two to finish.")
    assert pieces == ["Sure, I can do", "that for you.", "It will take a minute or two to finish."]


def test_first_phrase_splits_only_what_goes_on() -> None:
    assert first_phrase(["Okay, I've set a timer for ten minutes.", "Bye."]) == [
        "Okay, I've set a timer",
        "for ten minutes.",
        "Bye.",
    ]
    assert first_phrase(["Good night."]) == ["Good night."]
    assert first_phrase([]) == []


@pytest.mark.parametrize(
    ("piece", "pause"),
    [
        ("Good night.", True),
        ("Sure,", True),
        ('He said "yes."', True),
        ("Okay, I've set a timer", False),
    ],
)
def test_a_pause_belongs_only_after_punctuation(piece: str, pause: bool) -> None:
    assert ends_phrase(piece) is pause


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
