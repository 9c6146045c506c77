"""Cheap wording cues about a learner's message, as data with their examples.

Three questions are answered before any model call, from the words alone:

* ``looks_like_correction``: may the message correct a memory? Then it is read
  *before* the reply, so the wrong memory is left out of that reply. A false
  alarm costs two model calls before the reply; a miss only means the
  correction lands after it, as any other.
* ``may_change_profile``: may it change the profile (a level, a goal, a
  preference, or one of them ending)? Then it is read after its own reply
  instead of waiting in a batch. A false alarm costs one call, a miss a short
  delay.
* ``skips_extraction``: can it hold no fact and no mistake at all (an
  acknowledgement, a greeting, emoji)? Then it is not read.

Each cue is one kind of wording with its pattern and the messages it must
catch; each table has messages no cue of it may catch. tests/test_cues.py runs
every row, so a cue is changed by adding a row first. A cue is written for its
kind, never for one message: "no" is a correction only when it stands alone as
an answer to what was said ("No, I live in Osaka", "nope, wrong city"), never as
a word of a phrase ("no worries", "no idea"); "I don't" only when it takes back
something already said ("I don't actually have a dog", "... anymore"), never
as a plain dislike ("I don't like the rain today").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memora.core.text_utils import CJK_RANGES


@dataclass(frozen=True)
class Cue:
    """One kind of wording: its pattern and messages it must catch."""

    kind: str
    pattern: re.Pattern[str]
    examples: tuple[str, ...]


@dataclass(frozen=True)
class CueTable:
    """Cues for one question, and messages none of them may catch."""

    name: str
    cues: tuple[Cue, ...]
    not_cues: tuple[str, ...]

    def match(self, text: str) -> Cue | None:
        return next((cue for cue in self.cues if cue.pattern.search(text)), None)


def _cue(kind: str, pattern: str, *examples: str) -> Cue:
    return Cue(kind, re.compile(pattern, re.IGNORECASE), examples)


# A negation in English: "not", "never", "no", or a verb's "n't".
_NEG = r"(?:\bnot\b|\bnever\b|\bno\b|n['\u2019]?t\b)"
_APOS = r"['\u2019]?"

CORRECTION = CueTable(
    "correction",
    (
        # The learner denies having said what is remembered.
        _cue(
            "denial",
            rf"\b(?:never|didn{_APOS}t|did\s+not)\s+(?:say|said|tell|told|mention(?:ed)?)\s+"
            rf"(?:that|so|this|it|i|i{_APOS}m|you|we|anything\s+like)\b"
            r"|\bnot\s+what\s+i\s+(?:said|meant|say)\b|\bwhere\s+did\s+you\s+get\s+that\b"
            # 說話 is "to speak", not "to say something"
            r"|我(?:從來|从来|從|从)?(?:沒|没)(?:有)?(?:這樣|这样|那樣|那样)?(?:說|说|講|讲)(?![話话])",
            "No, I never said I want to work abroad.",
            "I didn't say that",
            "I did not tell you I was married.",
            "That's not what I said.",
            "where did you get that?",
            "我沒說過我有狗",
            "我没有说我住在台北",
            "我從來沒說過這個",
            "我沒有這樣說",
            "我从没讲过",
        ),
        # A verdict on what the tutor holds or just said.
        _cue(
            "verdict",
            r"\bthat(?:['\u2019]?s|\s+is|\s+was)\s+(?:not\s+(?:right|true|correct|what|it|quite\s+right)|wrong|incorrect)\b"
            rf"|\bthat\s+(?:isn{_APOS}t|wasn{_APOS}t)\s+(?:right|true|correct|what|it|quite\s+right)\b"
            r"|\bnot\s+true\b"
            rf"|\byou(?:{_APOS}re|\s+are|{_APOS}ve|\s+have)?\s+(?:got\s+|get\s+|have\s+)?(?:(?:it|that|this|me)\s+)?"
            r"(?:wrong|mistaken|misunderstood|misheard|mixed\s+(?:it|that|them|me)\s+up)\b"
            r"|\bremember(?:ed)?\s+(?:it\s+|that\s+)?wrong(?:ly)?\b|\bwrong\s+about\b"
            r"|(?<![對对])不[對对](?![稱称勁劲])|不是(?:這樣|这样)|搞[錯错]|[記记][錯错]|弄[錯错]|你(?:說|说)?[錯错]了",
            "That's wrong, I live in Osaka.",
            "that's not right, I have two cats",
            "That isn't right.",
            "that wasn’t what I said",
            "Not true!",
            "you're wrong about my job",
            "You got it wrong, I'm a nurse.",
            "You misunderstood me.",
            "you remembered it wrong",
            "不對，我住在高雄",
            "你搞錯了",
            "你記錯了，我是老師",
            "不是這樣的",
            "你错了，我没有猫",
        ),
        # A reply that opens with a refusal standing alone, then the right version.
        _cue(
            "retort",
            # declining an offer ("No, thanks") answers no statement
            r"^\s*(?:no+|nope|nah|not\s+really|not\s+exactly|wrong)(?!\W*(?:no\s+)?(?:thanks|thank\s+you|problem|worries)\b)"
            r"(?:\s*(?:[,.!;:\u2014\u2013-]|$)"
            rf"|\s+(?:no|i|i{_APOS}m|i{_APOS}ve|it|it{_APOS}s|that|that{_APOS}s|this|my|we|you|actually|wrong|not|never)\b)"
            r"|^\s*(?:(?:no|nope|nah)\W+)?(?:the\s+)?wrong\s+[a-z]+\s*(?:[,.!;:\u2014\u2013-]|$)"
            r"|^\s*(?:不|不是|沒有|没有)[啦啊喔哦呀的]?\s*[，,。.！!、](?!\s*(?:謝謝|谢谢|不用|不必))",
            "No, I live in Osaka.",
            "No.",
            "nope, wrong city",
            "Nope wrong city",
            "nah it's Tuesday",
            "no I don't have a dog",
            "No no, my sister is the doctor",
            "Wrong city, I'm in Kaohsiung.",
            "Not really, I prefer tea.",
            "不，我住在高雄",
            "不是，是週五",
            "不是啦，是下週",
            "沒有，我沒有狗",
        ),
        # The learner corrects what they themselves said.
        _cue(
            "self",
            r"\bi\s+(?:meant|misspoke|mistyped|made\s+a\s+typo)\b|\bmy\s+(?:mistake|bad)\b|\bcorrection\s*:"
            r"|\blet\s+me\s+correct\b|\bto\s+correct\s+(?:myself|that|what)\b|\bi\s+was\s+wrong\b"
            rf"|^\s*actually\s*,?\s+(?:it{_APOS}s|it\s+(?:is|was)|that{_APOS}s|i{_APOS}m|i\s+am|i\s+(?:meant|said))\b"
            r"|^\s*(?:please\s+)?(?:forget|ignore|scratch)\s+(?:that|what\s+i\s+said)\b"
            r"|(?:說|说|講|讲|打)[錯错]|口[誤误]|更正|糾正一下|纠正一下|其[實实]是|我的意思是",
            "Sorry, I meant Tuesday.",
            "I misspoke, it's two cats",
            "Correction: my exam is in May.",
            "Actually, it's Osaka, not Tokyo.",
            "my mistake, I have two brothers",
            "I was wrong, the test is next week",
            "Forget that, I live in Osaka now.",
            "我說錯了，是星期五",
            "我说错了",
            "更正一下，我住在台中",
            "其實是下個月",
            "我的意思是三月",
            "口誤，是週五",
            "打錯了，是B2",
        ),
        # A fact that has stopped being true.
        _cue(
            "change",
            rf"{_NEG}[^.!?;\n]{{0,60}}?\bany\s?more\b|\bno\s+longer\b"
            rf"|\b(?:don{_APOS}t|do\s+not|doesn{_APOS}t|does\s+not|am\s+not|{_APOS}m\s+not|isn{_APOS}t|is\s+not"
            rf"|didn{_APOS}t|did\s+not)\s+actually\b|\bactually\s+(?:don{_APOS}t|do\s+not|not|never|didn{_APOS}t)\b"
            r"|不再|(?:已經|已经)(?:不|沒|没)[^，。！？,.!?]{0,12}了",
            "I don't live in Taipei anymore.",
            "I'm not a student any more",
            "I no longer work at the bank.",
            "not anymore",
            "I don't actually have a dog.",
            "I actually don't like sushi",
            "我不再學法文了",
            "我已經不住台北了",
        ),
    ),
    (
        "No worries, thanks",
        "I don't like the rain today",
        "no problem!",
        "No thanks, I'm full.",
        "No idea what that means",
        "No way!",
        "Nobody told me.",
        "Nothing new today",
        "I'm not sure.",
        "That's right!",
        "that is correct",
        "That isn't a problem",
        "我沒有說話的機會",
        "I'm not hungry",
        "That's not bad",
        "That's not a problem",
        "I didn't say much in class today",
        "Don't forget that the exam is Friday",
        "I don't have time today",
        "I took the wrong bus",
        "It's not raining",
        "I made a mistake on my test",
        "I mean, it's fine",
        "Is that right?",
        "Not bad, thanks",
        "I have no car",
        "No, thanks.",
        "no, thank you",
        "Nope, no problem",
        "I didn't tell my mom about the exam",
        "I got the answer wrong",
        "What's wrong with this sentence?",
        "不，謝謝",
        "不是很好",
        "不客氣",
        "不好意思，我遲到了",
        "我不喜歡下雨",
        "沒問題",
        "你覺得這樣對不對？",
        "其實我今天很累",
        "不錯",
        "今天天氣不好",
        "我現在不想去",
    ),
)

PROFILE = CueTable(
    "profile",
    (
        _cue(
            "level",
            r"\b(?:[abc][12]|cefr|ielts|toefl|toeic|levels?)\b|程度|級|级|等級|等级",
            "I think I'm B2 now.",
            "My IELTS score was 6.5",
            "What level am I?",
            "我的程度是中級",
            "我考過英檢中级了",
        ),
        _cue(
            "goal",
            rf"\b(?:goals?|aims?|wants?\s+to|wanted\s+to|would\s+like\s+to|{_APOS}d\s+like\s+to|hope\s+to|trying\s+to)\b"
            r"|目標|目标|想學|想学|想要",
            "My goal is to pass the exam.",
            "I want to work abroad.",
            "I'd like to practise interviews",
            "I'm trying to read more",
            "我的目標是出國工作",
            "我想學商業英文",
        ),
        _cue(
            "preference",
            r"\b(?:prefer\w*|rather)\b|偏好|比較喜歡|比较喜欢",
            "I prefer short answers.",
            "I'd rather you corrected every mistake",
            "我比較喜歡簡短的回答",
        ),
        _cue(
            "ending",
            r"\b(?:no\s+longer|not\s+anymore|stopped|gave\s+up|changed\s+my\s+mind)\b|不再|不想",
            "I gave up on the TOEIC.",
            "I changed my mind about grammar drills",
            "I stopped learning French.",
            "我不想考托福了",
            "我不再需要商業英文",
        ),
    ),
    (
        "I like pizza.",
        "The weather is nice today",
        "I went to Taipei last week.",
        "My sister is a doctor",
        "我今天很累",
        "我昨天去了台北",
    ),
)


def looks_like_correction(text: str) -> bool:
    """A cheap cue that a message may correct a memory ("No, I never said ...");
    see the module docstring for what a false alarm and a miss cost."""
    return CORRECTION.match(text) is not None


def may_change_profile(text: str) -> bool:
    """A cheap cue that a message may change the profile (a level, a goal, a
    preference, or one of them ending)."""
    return PROFILE.match(text) is not None


# Messages that cannot hold a fact or a mistake, so they are not sent to the
# extraction call: a closed list of acknowledgements and greetings, in English
# and Chinese, and nothing else. The list is of whole phrases, never of words:
# "thanks you" (a learner's mistake) is two listed words but no listed phrase,
# so it is read. Yes and no are left out on purpose: they answer the tutor's
# question ("Do you still live in Taipei?" "No.") and can carry a fact.
ACK_PHRASES = frozenset(
    p
    for line in """
ok|okay|okey|alright|all right|fine|sure|cool|nice|great|good|awesome|perfect
thanks|thank you|thanks a lot|thanks so much|thank you so much|thank you very much|many thanks|cheers
you're welcome|youre welcome|no problem|got it|i see|understood|noted
hi|hello|hey|hi there|hello there|hey there|good morning|good afternoon|good evening|good night
bye|goodbye|bye bye|see you|see you later|see ya|talk soon
lol|haha|hahaha|hmm|wow|oh|ah
好|好的|好啊|好吧|嗯|嗯嗯|哦|噢|喔|行|可以|沒問題|没问题|明白|明白了|知道了|了解|收到|懂了
謝謝|谢谢|謝謝你|谢谢你|謝謝老師|谢谢老师|多謝|多谢|感謝|感谢|不客氣|不客气
你好|您好|嗨|哈囉|哈喽|早|早安|午安|晚安|再見|再见|拜拜|回頭見|回头见|哈哈|哈哈哈
""".strip().splitlines()
    for p in line.split("|")
)
# Messages that are only acknowledgements, greetings or symbols, and messages
# with any other word (read, however short: a three-word sentence can hold the
# mistake the learner most needs to see).
ACK_SKIPPED = (
    *("ok", "OK!", "okay.", "Ok, thanks!", "ok thanks", "thanks", "Thanks!!", "thank you", "Thank you so much!"),
    *("thank you very much", "thanks a lot :)", "cheers", "got it", "I see.", "cool", "nice!", "great, thanks"),
    *("hi", "Hello!", "hey there", "Good morning!", "good night", "bye", "see you later", "you're welcome"),
    *("you\u2019re welcome", "haha", "hmm...", "wow", "👍", "🙂🙂", "...", "?!", "  ", "/help", "/review"),
    *("好的", "好", "嗯嗯", "好的，謝謝！", "谢谢你", "謝謝老師", "你好", "晚安", "再見", "拜拜", "收到", "明白了"),
    *("哈哈", "ok 好的", "hi 你好 😊", "不客氣", "沒問題！"),
)
ACK_READ = (
    *("I goed home", "ok I will", "thanks, my exam is Friday", "好的我明天考試", "thanks you", "thank"),
    *("Thanks teacher", "No.", "yes", "Yes!", "no thanks", "hiking", "hi I'm Ming", "ok exam", "see you tomorrow"),
    *("good good morning friend", "I'm fine", "fine thanks and you", "I see you", "ok 明天", "好的老師"),
    *("謝謝你的幫助", "我很好", "明天見", "I am ok", "Me too!", "Same here!", "lol I failed", "ok so"),
    *("wow it's late", "1", "B2", "Bonjour", "ありがとう", "감사합니다", "merci", "/help me with this sentence"),
    *("ok /help", "Ok. I go to school by bus.", "不對", "更正"),
)
# A unit is an English word (apostrophes kept: "you're") or one CJK character.
_UNIT = re.compile(rf"[a-z0-9']+|[{CJK_RANGES}]")


def _units(text: str) -> tuple[str, ...]:
    return tuple(_UNIT.findall(text.lower().replace("\u2019", "'")))


_ACK_UNITS = frozenset(_units(p) for p in ACK_PHRASES)
_ACK_LONGEST = max(len(u) for u in _ACK_UNITS)


def skips_extraction(text: str) -> bool:
    """True when ``text`` cannot hold a fact or a mistake: emoji or punctuation
    only, a command-like word ("/help"), or nothing but listed acknowledgements
    and greetings ("ok thanks!", "好的，謝謝"). Anything with another word is read."""
    if re.fullmatch(r"\s*/\w+\s*", text):
        return True
    units = _units(text)
    if re.search(r"[^\W_]", _UNIT.sub("", text.lower().replace("\u2019", "'"))):
        return False  # letters of another script (Japanese kana, Korean, accented Latin): read it
    # The whole line must split into listed phrases; one unit left over is content.
    reachable = [True] + [False] * len(units)
    for end in range(1, len(units) + 1):
        reachable[end] = any(
            reachable[start] and units[start:end] in _ACK_UNITS for start in range(max(0, end - _ACK_LONGEST), end)
        )
    return reachable[-1]
