"""The lexical side: terms in English and Chinese, and BM25 over the catalog."""

from __future__ import annotations

import pytest

from long_term_memory import LongTermMemoryStore
from memora.store import lexical
from memora.store.index import InMemoryVectors

PORTER_EXAMPLES = {  # from Porter's 1980 paper
    "caresses": "caress",
    "ponies": "poni",
    "cats": "cat",
    "feed": "feed",
    "agreed": "agre",
    "plastered": "plaster",
    "motoring": "motor",
    "sing": "sing",
    "conflated": "conflat",
    "hopping": "hop",
    "falling": "fall",
    "filing": "file",
    "happy": "happi",
    "relational": "relat",
    "conditional": "condit",
    "generalizations": "gener",
    "electrical": "electr",
    "adjustable": "adjust",
    "controlling": "control",
    "roll": "roll",
}


@pytest.mark.parametrize("word, stem", sorted(PORTER_EXAMPLES.items()))
def test_porter_stemmer_matches_the_paper(word, stem):
    assert lexical.porter_stem(word) == stem


def test_english_terms_drop_stop_words_possessives_and_question_words():
    assert lexical.terms("Caroline's friends recommended painting classes") == [
        "carolin",
        "friend",
        "recommend",
        "paint",
        "class",
    ]
    assert lexical.query_terms("What did Caroline's friends recommend?") == ["carolin", "friend", "recommend"]
    assert lexical.query_terms("Do you remember my name?") == ["name"]


def test_chinese_becomes_character_bigrams_and_mixed_text_keeps_both():
    assert lexical.terms("咖啡店") == ["咖啡", "啡店"]
    assert lexical.terms("貓") == ["貓"]
    assert lexical.terms("我的IELTS考試") == ["我的", "ielt", "考試"]
    assert lexical.terms("ＩＥＬＴＳ") == ["ielt"]  # full-width letters fold to ASCII


@pytest.fixture
def store(tmp_path):
    from memora.model.embeddings import HashEmbedder

    store = LongTermMemoryStore(tmp_path / "db", vectors=InMemoryVectors(), embedding_function=HashEmbedder())
    for text in [
        "我每天早上都喝咖啡",
        "我下週二有英文考試",
        "我的貓叫麻糬",
        "I practised airport check-in",
        "I love painting landscapes",
    ]:
        store.add(text)
    return store


def test_bm25_finds_chinese_by_bigrams(store):
    hits = store.catalog.lexical_search(lexical.query_terms("英文考試"), 10)
    assert [store.get(i).content for i, _ in hits] == ["我下週二有英文考試"]
    hits = store.catalog.lexical_search(lexical.query_terms("喝咖啡"), 10)
    assert store.get(hits[0][0]).content == "我每天早上都喝咖啡"


def test_bm25_matches_stemmed_english_and_ignores_superseded(store):
    [(memory_id, score)] = store.catalog.lexical_search(lexical.query_terms("Did I paint?"), 10)
    assert store.get(memory_id).content == "I love painting landscapes" and score > 0
    store.supersede(memory_id, None, reason="correction")
    assert store.catalog.lexical_search(lexical.query_terms("painting"), 10) == []


def test_same_meaning_keeps_every_word_that_can_change_a_fact():
    from memora.store.lexical import SAME_MEANING_FILLER, STOP_WORDS, say_the_same

    assert SAME_MEANING_FILLER <= STOP_WORDS  # only a few of retrieval's stop words may be ignored
    same = [
        ("The learner doesn't drink coffee.", "The learner does not drink coffee"),
        ("The learner can't swim.", "The learner cannot swim."),
        ("My sister lives in Paris", "The learner's sister lives in Paris."),
        ("I'm from Taichung", "The learner is from Taichung."),
        ("At night the learner studies English.", "The learner studies English at night."),
        ("The learner is bullied at school.", "At school the learner is bullied."),
        ("I'm a nurse", "The learner is a nurse."),
        ("It is \u221210 degrees.", "It is -10 degrees."),
        ("It is \uff0d10 degrees.", "It is -10 degrees."),
        ("壽司是我最喜歡的食物", "我最喜歡的食物是壽司"),
    ]
    different = [
        ("The learner moved to Tokyo.", "The learner moved from Tokyo."),
        ("The learner's salary went up.", "The learner's salary went down."),
        ("The learner eats before work.", "The learner eats after work."),
        ("The learner likes jazz.", "The learner liked jazz."),
        ("The learner is happy.", "The learner is happier."),
        ("The learner has a cat.", "The learner has cats."),
        ("He is the learner's teacher.", "She is the learner's teacher."),
        ("The learner's brother is the teacher.", "The learner is the brother's teacher."),
        ("The learner prefers tea to coffee.", "The learner prefers coffee to tea."),
        ("The learner will move.", "The learner won't move."),
        ("我愛他", "他愛我"),
        ("我的哥哥是老師", "我是哥哥的老師"),
        # voice, tense and aspect: a be-form or an auxiliary is never filler
        ("The learner is bullied at school.", "The learner bullied at school."),
        ("The learner's son is bullied.", "The learner's son bullied."),
        ("The learner was taught by Anna.", "The learner taught by Anna."),
        ("The learner is being followed.", "The learner followed."),
        ("The learner has been a nurse.", "The learner has a nurse."),
        ("The learner was a nurse.", "The learner is a nurse."),
        ("The learner lived in Osaka.", "The learner has lived in Osaka."),
        ("The learner had lived in Osaka.", "The learner has lived in Osaka."),
        ("The learner did like tea.", "The learner does like tea."),
        # modality
        ("The learner can swim.", "The learner could swim."),
        ("The learner will move.", "The learner would move."),
        ("The learner should move.", "The learner must move."),
        ("The learner may move.", "The learner might move."),
        ("The learner may move.", "The learner moves."),
        ("I'll move.", "I'd move."),
        # sign
        ("It is -10 degrees.", "It is 10 degrees."),
        ("It is \u221210 degrees.", "It is 10 degrees."),
        ("It is \u201310 degrees.", "It is 10 degrees."),
        ("It is \uff0d10 degrees.", "It is 10 degrees."),
        ("哈爾濱是-20度", "哈爾濱是20度"),
        # 是 and other Chinese function words
        ("我是老師", "我老師"),
        ("我被打了", "我打了"),
        ("我去過日本", "我去日本"),
    ]
    assert [pair for pair in same if not say_the_same(*pair)] == []
    assert [pair for pair in different if say_the_same(*pair)] == []
