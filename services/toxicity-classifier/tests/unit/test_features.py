"""The featurisation training and serving share: normalisation and the n-gram terms."""

from stockade.toxicity_classifier.features import char_terms, normalize, word_terms


def test_normalize_decodes_entities_and_replaces_urls_mentions_and_retweet_markers():
    text = "RT @some_user: Fish &amp; chips at https://example.org/menu?x=1 www.example.com   NOW"
    assert normalize(text) == "mentionhere : fish & chips at urlhere urlhere now"


def test_normalize_cuts_runs_of_one_character_to_two():
    assert normalize("Sooooo gooood!!!!!") == "soo good!!"
    assert normalize("") == ""


def test_word_terms_are_one_to_three_word_ngrams_keeping_apostrophes():
    assert word_terms("don't stop now") == [
        "don't",
        "stop",
        "now",
        "don't stop",
        "stop now",
        "don't stop now",
    ]
    assert word_terms("!!") == []


def test_char_terms_are_two_to_five_grams_inside_padded_words():
    terms = char_terms("ab c*d")
    assert terms[:3] == [" a", "ab", "b "]
    assert " ab " in terms and " c*d " in terms and "c*" in terms
    assert not any("b c" in t or "b  c" in t for t in terms)  # never across two words
    assert char_terms("") == [] and char_terms(" ") == []
