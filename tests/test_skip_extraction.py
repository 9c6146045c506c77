"""Messages that cannot hold a fact or a mistake are not sent to the extraction call.

The rule is narrow and by kind: acknowledgements and greetings from a closed
list (English and Chinese), emoji or punctuation alone, a command-like word.
Any other word, however short the message, means it is read: with the mistake
ledger, a three-word sentence can hold the mistake the learner most needs to see.
"""

from __future__ import annotations

import pytest

from memora.app.extraction import skips_extraction

SKIPPED = [
    "ok",
    "OK!",
    "okay.",
    "Ok, thanks!",
    "ok thanks",
    "thanks",
    "Thanks!!",
    "thank you",
    "Thank you so much!",
    "thank you very much",
    "thanks a lot :)",
    "cheers",
    "got it",
    "I see.",
    "cool",
    "nice!",
    "great, thanks",
    "hi",
    "Hello!",
    "hey there",
    "Good morning!",
    "good night",
    "bye",
    "see you later",
    "you're welcome",
    "you’re welcome",
    "haha",
    "hmm...",
    "wow",
    "👍",
    "🙂🙂",
    "...",
    "?!",
    "  ",
    "/help",
    "/review",
    "好的",
    "好",
    "嗯嗯",
    "好的，謝謝！",
    "谢谢你",
    "謝謝老師",
    "你好",
    "晚安",
    "再見",
    "拜拜",
    "收到",
    "明白了",
    "哈哈",
    "ok 好的",
    "hi 你好 😊",
]

NOT_SKIPPED = [
    "I goed home",
    "ok I will",
    "thanks, my exam is Friday",
    "好的我明天考試",
    "thanks you",
    "thank",
    "Thanks teacher",
    "No.",
    "yes",
    "Yes!",
    "no thanks",
    "hiking",
    "hi I'm Ming",
    "ok exam",
    "see you tomorrow",
    "good good morning friend",
    "I'm fine",
    "fine thanks and you",
    "I see you",
    "ok 明天",
    "好的老師",
    "謝謝你的幫助",
    "我很好",
    "明天見",
    "I am ok",
    "Me too!",
    "Same here!",
    "lol I failed",
    "ok so",
    "wow it's late",
    "1",
    "B2",
    "Bonjour",
    "ありがとう",
    "감사합니다",
    "merci",
    "/help me with this sentence",
    "ok /help",
    "Ok. I go to school by bus.",
]


@pytest.mark.parametrize("text", SKIPPED)
def test_acknowledgements_greetings_and_symbols_skip_extraction(text):
    assert skips_extraction(text)


@pytest.mark.parametrize("text", NOT_SKIPPED)
def test_a_message_with_any_other_word_is_read(text):
    assert not skips_extraction(text)


def test_an_acknowledgement_costs_no_extraction_call_and_leaves_nothing_to_read(make_app, server):
    app = make_app()
    app.chat("Ok, thanks!", on_delta=lambda _: None)
    app.chat("好的，謝謝！", on_delta=lambda _: None)
    assert app.wait_for_extraction(10)
    assert server.of_kind("extraction") == []
    assert app.pending_jobs == []  # nothing in the session file for the next start either
    app.chat("ok I will", on_delta=lambda _: None)
    assert app.wait_for_extraction(10)
    sent = server.of_kind("extraction")
    assert len(sent) == 1 and sent[0].input[-1]["content"].endswith("Message:\nok I will")
    assert len(server.chats) == 3  # every message still got its reply


def test_a_skipped_acknowledgement_still_stays_in_the_conversation(make_app, server):
    app = make_app()
    app.chat("thanks", on_delta=lambda _: None)
    app.chat("What did I just say?", on_delta=lambda _: None)
    assert "thanks" in [m["content"] for m in server.chats[-1].input if m.get("role") == "user"]
