"""Case tables for Memora's judgments about text (issue 28): data only, no tests.

Each table holds rows of one judgment, grouped by kind, with more cases of each kind
than the issue quotes; many are LoCoMo observations and turns (``bench/judgments.py``
prints those) or worded like them. A row says what a learner must see, not how a rule
gets there. ``OPEN`` rows are design decisions left to whoever implements the fix:
they say what Memora does today and what the issue's rules suggest.
"""

from __future__ import annotations

# -- routing -----------------------------------------------------------------------------------
# (line typed at the prompt, the command it runs or None for chat). "Runs" includes
# printing the command's usage: either way the line never reaches the tutor. The rule
# to hold (issue 28, point 2): a command with side effects runs only from a form that
# cannot be a sentence (a slash, a path with a folder or an extension, an id, a
# confirmation); ``remember`` keeps its natural form, but not a question or an
# exclamation about the past.

# English sentences that open with a command's own word: all chat.
ROUTING_SENTENCES = [
    # export / import: trade and data talk
    ("Export tariffs.", None),
    ("Export tariffs hurt farmers last year.", None),
    ("Export growth slowed in the third quarter.", None),
    ("Export controls on chips are getting stricter.", None),
    ("Export licences take ages to get here.", None),
    ("Import duties went up again.", None),
    ("Import taxes hurt small shops.", None),
    ("Import costs rose by ten percent.", None),
    ("Import substitution was a big topic in my economics class.", None),
    ("Import cars are expensive in Taiwan.", None),
    # search
    ("Search results confuse me.", None),
    ("Search engines crawl the whole web.", None),
    ("Search parties found the hikers after two days.", None),
    ("Search history says a lot about a person.", None),
    ("Search me, I have no idea.", None),
    ("Search everywhere before you buy a new one!", None),
    # remember: exclamations, advice and questions about the past
    ("Remember Paris in spring", None),
    ("Remember Paris in spring!", None),
    ("Remember Jon, Just do it!", None),
    ("Remember to call your mum tonight.", None),
    ("Remember to breathe.", None),
    ("Remember kindness matters most.", None),
    ("Remember Sunday dinners at grandma's!", None),
    ("Remember the sunset we saw at the lake last summer?", None),
    ("Remember that epic block in Game 7 of the '16 Finals?", None),
    ("Remember when we volunteered together last year?", None),
    ("Remember yourself as a kid, full of dreams.", None),
    ("Remember Mom's advice: never give up!", None),
    # forget
    ("Forget Paris, let's talk about London.", None),
    ("Forget Paris", None),
    ("Forget 2023, honestly.", None),
    ("Forget homework, I want to chat today.", None),
    ("Forget the past and keep moving forward!", None),
    ("Forget perfection, just write.", None),
    ("Forget-me-nots are my favourite flowers.", None),
    # history
    ("History matters", None),
    ("History class was boring today.", None),
    ("History teachers always say that.", None),
    ("History 101 was my favourite class.", None),
    ("History repeats itself, they say.", None),
    # memory / memories
    ("Memory edit is a strange phrase.", None),
    ("Memory cap sounds like a hat.", None),
    ("Memory games help my kids focus.", None),
    ("Memory loss runs in my family.", None),
    ("Memories fade.", None),
    ("Memories matter.", None),
    ("Memories last forever.", None),
    ("Memories like these make me happy.", None),
    # profile
    ("Profile goal setting is hard for me.", None),
    ("Profile level questions in interviews scare me.", None),
    ("Profile preference surveys are boring.", None),
    ("Profile pictures on LinkedIn should be professional.", None),
    ("Profile clear, please?", None),
    ("Profile corrections are annoying.", None),
    # review / mistakes / progress
    ("Review export figures with me, please.", None),
    ("Review the words from yesterday with me.", None),
    ("Review sites lie sometimes.", None),
    ("Mistakes happen to everyone.", None),
    ("Mistakes forget nobody.", None),
    ("Mistakes like mine are common, right?", None),
    ("Progress feels slow lately.", None),
    ("Progress since January has been amazing!", None),
    ("Progress is progress, keep it up.", None),
    # help
    ("Help! I lost my keys.", None),
    ("Help me write an email to my landlord.", None),
    ("Help wanted signs are everywhere in my town.", None),
    ("Help forget my ex, haha.", None),
    # the commands that take nothing
    ("Why do you feel that way?", None),
    ("Why include strength training in your routine?", None),
    ("Why not do some research first?", None),
    ("Status symbols don't impress me.", None),
    ("Status: tired but happy.", None),
    ("Reset my password, how do I say that politely?", None),
    ("Reset buttons are hidden on most routers.", None),
    ("Undo the last change, please.", None),
    ("Undo is my favourite button in Word.", None),
    ("Page 12 of my textbook has a mistake.", None),
    ("Page me when you arrive!", None),
    ("Users often complain about the new app.", None),
    ("Users like me need simple menus.", None),
    ("Exit through the gift shop.", None),
    ("Exit polls were wrong again.", None),
    ("Quit smoking last year, feeling great!", None),
    ("Quit while you're ahead.", None),
    ("Reindex is not a real word, is it?", None),
]

# The command forms that stay commands (docs/commands.md and each command's examples).
ROUTING_COMMANDS = [
    ("export ~/memora.json", "export"),
    ("export ~/memora-backup.json", "export"),
    ("export backups/", "export"),
    ('export "my backup.json"', "export"),
    ("export C:\\Users\\mei\\memora.json", "export"),
    ("/export tariffs", "export"),
    ("/export", "export"),
    ("import backup.json", "import"),
    ("import ~/memora-backup.json", "import"),
    ("import ./exports/mei.json", "import"),
    ("/import tariffs", "import"),
    ("review export ~/memora-mistakes.apkg", "review"),
    ("review export deck.apkg", "review"),
    ("review", "review"),
    ("forget 3f2a1b9c", "forget"),
    ("forget 3fa9", "forget"),
    ("forget all", "forget"),
    ("forget user ann", "forget"),
    ("/forget 3f2a1b9c", "forget"),
    ("history 3fa9c2d1", "history"),
    ("memory edit 3fa9c2d1 I moved to Taipei in 2024", "memory"),
    ("memory cap 200", "memory"),
    ("memory cap off", "memory"),
    ("memory cap", "memory"),
    ("profile", "profile"),
    ("profile level B2", "profile"),
    ("profile goal pass IELTS with 7.0", "profile"),
    ("profile preference short answers", "profile"),
    ("profile remove preference short answers", "profile"),
    ("profile corrections off", "profile"),
    ("profile confirm", "profile"),
    ("profile reject", "profile"),
    ("remember I live in Tainan", "remember"),
    ("remember I have a job interview on Friday", "remember"),
    ("remember my sister lives in Leeds", "remember"),
    ("remember that I live in Taipei", "remember"),
    ("remember I'm vegetarian", "remember"),
    ("remember Tom likes jazz", "remember"),
    ("remember 我住在台北", "remember"),
    ("/remember Paris in spring", "remember"),
    ("search job interview", "search"),
    ("search Kyoto", "search"),
    ("search where is my passport", "search"),
    ("memories", "memories"),
    ("memories --all", "memories"),
    ("memories --type episodic", "memories"),
    ("memories --all coffee", "memories"),
    ("memories Kyoto", "memories"),
    ("mistakes", "mistakes"),
    ("mistakes forget m3fa9c", "mistakes"),
    ("progress", "progress"),
    ("progress --since 30d", "progress"),
    ("progress --plain", "progress"),
    ("help", "help"),
    ("help forget", "help"),
    ("why", "why"),
    ("/why is this here", "why"),
    ("status", "status"),
    ("reset", "reset"),
    ("undo", "undo"),
    ("page", "page"),
    ("users", "users"),
    ("reindex", "reindex"),
    ("exit", "exit"),
    ("quit", "quit"),
    ("\\export tariffs", None),  # a leading backslash is always chat
]

# Typos still get "Did you mean": (line, the command meant).
ROUTING_TYPOS = [
    ("exprot ~/memora.json", "export"),
    ("improt ~/backup.json", "import"),
    ("forgt 3fa9c2d1", "forget"),
    ("hisory 3fa9c2d1", "history"),
    ("remeber I live in Tainan", "remember"),
    ("serach Kyoto", "search"),
]

# Design decisions: (line, what happens today, what the rules suggest, why it is open).
OPEN = [
    (
        "export",
        "writes the export to the default file in the data folder",
        "stays a command",
        "one word cannot be a sentence and the file goes to Memora's own folder; 'Export.' with a full stop may not",
    ),
    ("Export.", "chat ('export.' is no command word)", "chat, or the command", "a full stop after one word"),
    (
        "export backup",
        "writes a file named 'backup' in the working folder",
        "usage or chat, never a write",
        "a bare word is no path with a folder or an extension",
    ),
    ("import backup", "imports a file named 'backup' if there is one", "usage or chat", "as 'export backup'"),
    (
        "forget 2023",
        "deletes the memory whose id starts with 2023 if there is one, else 'not a memory id'",
        "usage or chat",
        "four digits are a valid id prefix and a year",
    ),
    (
        "profile clear",
        "empties the profile at once",
        "a confirmation first",
        "the issue lists it among the side effects that need a form that cannot be a sentence",
    ),
    ("memories fade", "lists the memories matching 'fade'", "chat or the filter", "a one-word filter that is a verb"),
    ("undo that", "chat", "chat, or the command", "an everyday object after a command that takes nothing"),
]

# -- conflicts ---------------------------------------------------------------------------------
# (older fact, newer fact), each stored as ``remember`` stores it (category "other"),
# so every pair is compared: the widest reading, the one bench/judgments.py counts.

# Restatements that must NOT be flagged.
NOT_CONFLICTS = [
    # tense: the same fact said in another tense (LoCoMo observations)
    (
        "The learner encourages Jon to keep up his hard work and achievements.",
        "The learner encouraged Jon to keep up the good work and not forget his passion for dance.",
    ),
    ("The learner volunteers at a homeless shelter.", "The learner volunteered at a homeless shelter last week."),
    (
        "The learner expresses gratitude for Gina's belief in him.",
        "The learner expressed gratitude for Gina's support.",
    ),
    (
        "The learner appreciated Maria's offer to help with networking.",
        "The learner appreciates Maria's offer to help with the community issues.",
    ),
    ("The learner met new people who share his interests.", "The learner played with people who shared his interests."),
    ("The learner has been working on a project recently.", "The learner is working on a new project."),
    ("I play tennis on Sundays.", "I played tennis last Sunday."),
    ("The learner teaches piano to kids.", "The learner taught piano to kids at the summer camp."),
    # number: singular and plural of one thing
    (
        "The learner is keen to try Nate's dairy-free dessert recipe.",
        "The learner is trying dairy-free options in her dessert recipes.",
    ),
    (
        "The learner finds it rewarding to make a difference in the community.",
        "The learner feels it is an uphill battle to make a positive change in communities.",
    ),
    (
        "The learner asks John about recent b-ball games.",
        "The learner congratulated John on winning a close b-ball game.",
    ),
    ("The learner practices for video game tournaments.", "The learner had a letdown in a video game tournament."),
    ("The learner loves cats.", "The learner has a cat."),
    ("The learner reads a novel every month.", "The learner reads novels on the train."),
    # a word in another form: noun, verb, gerund
    (
        "The learner volunteers at a homeless shelter.",
        "The learner finds volunteering at the homeless shelter really fulfilling.",
    ),
    (
        "The learner is starting a dance studio due to his passion for dancing.",
        "The learner wants a studio for all dancers.",
    ),
    ("The learner values belief in oneself.", "The learner believes in the importance of kindness."),
    ("The learner paints landscapes.", "The learner's paintings are of landscapes."),
    # a negated paraphrase: "not give up" says "keep going"
    (
        "The learner encourages Jon to keep going after his dreams.",
        "The learner encourages Jon to keep pushing for his dreams and not give up.",
    ),
    (
        "The learner supports Jon and believes in him.",
        "The learner supports Jon through setbacks and encourages him not to give up.",
    ),
    ("The learner tells Tim to keep trying.", "The learner tells Tim not to quit."),
    ("The learner stays positive.", "The learner never loses hope."),
    ("The learner remembers her grandmother's recipes.", "The learner has not forgotten her grandmother's recipes."),
    ("The learner is calm before exams.", "The learner does not panic before exams."),
    # a function word on one side: "supports" / "is supportive of"
    (
        "The learner supports Jon's opening of the dance studio.",
        "The learner is supportive of Jon's dream of opening a dance studio.",
    ),
    ("The learner appreciates Nate's kind words.", "The learner is appreciative of Nate's support and kind words."),
    ("The learner depends on her sister for rides.", "The learner is dependent on her sister for rides."),
    ("The learner respects her teachers.", "The learner is respectful of her teachers."),
    ("The learner fears heights.", "The learner is fearful of heights."),
    # a second verb or added detail
    (
        "The learner encourages Jon to keep going after his dreams.",
        "The learner supports and encourages Jon in his business dreams.",
    ),
    ("The learner cooks Thai food.", "The learner cooks and sells Thai food at the market."),
    ("The learner has a cat.", "The learner has a black cat named Mochi."),
    # two different things that share words: a name, two events, two numbers
    ("My name is Mei.", "My cat is Mochi."),
    ("My name is Mei.", "My cat is called Mochi."),
    ("My name is Mei.", "My cat is named Mochi."),
    ("My name is Mei.", "My cat's name is Mochi."),
    ("My name is Mei.", "My sister is called Lin."),
    ("The learner's name is Carlos.", "The learner's dog is named Max."),
    (
        "The learner made a stained glass window about her journey as a transgender woman.",
        "The learner made a painting representing her journey as a trans woman.",
    ),
    (
        "The learner had an awesome day at the park with his family.",
        "The learner recalls having a blast at a live music event with his family last week.",
    ),
    ("The learner has been married for 5 years.", "The learner has been into art for seven years."),
    ("The learner has 2 kids.", "The learner has 3 cats."),
    ("The learner runs 5 km every morning.", "The learner has been running for 10 years."),
    # one number in words and in digits
    ("The learner is twenty-one.", "The learner is 21."),
    ("The learner has two kids.", "The learner has 2 kids."),
    ("I'm thirty-five years old.", "I'm 35."),
    # the job: an interview, a workplace, a career wish are no second job
    ("I work as an accountant.", "My job interview went well."),
    ("I work as an accountant.", "I have a job interview on Friday."),
    ("The learner works as an accountant.", "The learner's job interview went well."),
    ("The learner works as a nurse.", "The learner finds work stressful lately."),
    ("The learner works as a nurse.", "The learner is considering a career in counseling."),
    ("The learner works at a bank.", "The learner is working on a new project at work."),
    # a relative's job, home or age is not the learner's
    ("The learner is a teacher.", "The learner's wife is a nurse."),
    ("The learner works as a nurse.", "The learner's husband works as a chef."),
    ("The learner works at Google.", "The learner's husband works at Apple."),
    ("The learner works as a teacher in Tainan.", "The learner's wife works as a nurse in Kaohsiung."),
    ("I'm a teacher at Kang Chiao.", "My wife is a nurse at NTUH."),
    ("The learner lives in Tainan.", "The learner's parents live in Taipei."),
    ("The learner lives in Osaka.", "The learner's brother lives in Kyoto."),
    ("The learner is from Brazil.", "The learner's husband is from Portugal."),
    ("The learner is 29 years old.", "The learner's son is 4 years old."),
    ("I'm a teacher.", "My brother is an engineer."),
]

# Real changes that MUST be flagged, several of each kind.
CONFLICTS = [
    # a new job without the slot's cue words
    ("The learner works as a nurse.", "The learner is a software engineer now."),
    ("The learner works as a nurse.", "The learner became a pilot."),
    ("The learner is a teacher.", "The learner is an accountant now."),
    ("I work as a waiter.", "I'm a bus driver now."),
    ("The learner is a dancer.", "The learner is now a full-time chef."),
    # unemployed, then employed (and back)
    ("The learner is unemployed.", "The learner works at a bank."),
    ("The learner is out of work.", "The learner works at a bakery."),
    ("The learner is looking for a job.", "The learner started a job at Google."),
    ("I don't have a job.", "I work at a hotel."),
    ("The learner works at a bank.", "The learner is unemployed."),
    # ages in words and in digits
    ("The learner is twenty-nine.", "The learner is 31."),
    ("The learner is 29 years old.", "The learner is thirty-one years old."),
    ("I'm twenty-five.", "I'm 27."),
    ("The learner's son is seven.", "The learner's son is 9."),
    ("The learner is 40.", "The learner is forty-two."),
    ("The learner is twenty-one.", "The learner is thirty-one."),
    # living situation
    ("The learner lives alone.", "The learner lives with her parents."),
    ("The learner lives with roommates.", "The learner lives alone now."),
    ("I live with my parents.", "I moved into my own flat."),
    ("The learner lives in a dorm.", "The learner rents a house with his girlfriend."),
    ("The learner lives with his wife.", "The learner lives by himself."),
    # never been, then went
    ("The learner has never been to Japan.", "The learner went to Japan last year."),
    ("The learner has never flown.", "The learner flew to Paris in May."),
    ("I have never seen snow.", "I saw snow in Sapporo."),
    ("The learner has never tried sushi.", "The learner ate sushi at a party."),
    ("The learner has never been abroad.", "The learner spent a month in Spain."),
    # cannot, then does
    ("The learner cannot swim.", "The learner swims every morning."),
    ("The learner can't drive.", "The learner drives to work."),
    ("I can't cook.", "I cook dinner for my family every night."),
    ("The learner does not speak Spanish.", "The learner speaks Spanish with her colleagues."),
    ("The learner cannot play the guitar.", "The learner plays guitar in a band."),
    # a preference reversed in other words
    ("The learner prefers long explanations.", "The learner wants short answers."),
    ("The learner likes detailed corrections.", "The learner wants fewer corrections."),
    ("I prefer British English.", "I want to learn American English."),
    ("The learner likes to be corrected every time.", "The learner finds constant corrections annoying."),
    ("The learner wants lots of grammar drills.", "The learner is tired of grammar drills."),
]

# -- exams and interviews ----------------------------------------------------------------------
# (a memory's text, the category it would have, what it is: "exam", "interview" or None).
# A dated plan ("schedule") the learner sits or attends. Whether an interview pulls review
# cards forward as an exam does is a design decision; both are kinds the plan must know.
EXAMS = [
    # real exams the learner sits
    ("The learner has an IELTS exam on Friday.", "schedule", "exam"),
    ("The learner takes the TOEFL on Saturday.", "schedule", "exam"),
    ("The learner has her IELTS speaking test next Tuesday.", "schedule", "exam"),
    ("The learner sits the Cambridge C1 Advanced on 3 June.", "schedule", "exam"),
    ("The learner has a midterm in economics on Thursday.", "schedule", "exam"),
    ("The learner has finals next week.", "schedule", "exam"),
    ("The learner takes the JLPT N3 in December.", "schedule", "exam"),
    ("The learner retakes the aptitude test for joining the military next month.", "schedule", "exam"),
    ("The learner prepares for exams at school.", "schedule", "exam"),
    ("The learner has a driving theory test on Monday.", "schedule", "exam"),
    ("學習者週五有托福考試。", "schedule", "exam"),
    # real interviews the learner attends
    ("The learner has a job interview on Friday.", "schedule", "interview"),
    ("The learner gets an interview for a design internship.", "schedule", "interview"),
    ("The learner has a visa interview at the embassy on Tuesday.", "schedule", "interview"),
    ("The learner has her citizenship interview next week.", "schedule", "interview"),
    ("The learner has a second-round interview with Google on Monday.", "schedule", "interview"),
    # a test or an interview that is no exam: medical, a car, someone else's, the learner as interviewer
    ("The learner has a blood test on Friday.", "schedule", None),
    ("The learner has a test drive of a new Honda on Saturday.", "schedule", None),
    ("The learner has an eye test at the optician's next week.", "schedule", None),
    ("The learner is getting a COVID test before her flight.", "schedule", None),
    ("The learner is taking her dog to the vet for an allergy test on Monday.", "schedule", None),
    ("The learner's kids have a spelling test on Friday.", "schedule", None),
    ("The learner's son has his driving test next week.", "schedule", None),
    ("The learner's daughter has a college interview on Saturday.", "schedule", None),
    ("The learner is interviewing candidates for her team on Thursday.", "schedule", None),
    ("The learner is running a stress test of the servers on Friday.", "schedule", None),
    ("The learner has a taste test for the wedding cake on Sunday.", "schedule", None),
    ("學習者的兒子明天有考試。", "schedule", None),
    # not a plan at all: the word alone makes no exam
    ("The learner works as a driving test examiner.", "identity", None),
    ("The learner writes unit tests all day.", "habit", None),
    ("The learner watched an interview with Taylor Swift.", "other", None),
    ("The learner finds exams stressful.", "learning", None),
]

# -- corrections in one batch ------------------------------------------------------------------
# (memories stored before the batch, the messages of one batch in the order said,
#  the facts the reading finds as (message index, text), the corrections it finds as
#  (message index, the wrong statement, the memory a model names for it),
#  the memories current afterwards). Corrections apply after the facts said before
#  them, in the order said (issue 28, point 5).
CORRECTIONS = [
    # a fact and its correction in the same batch
    (
        (),
        ("I have a cat named Mochi.", "Sorry, I never said I have a cat."),
        ((0, "The learner has a cat named Mochi."),),
        ((1, "The learner has a cat.", "The learner has a cat named Mochi."),),
        (),
    ),
    (
        (),
        ("I work at Google.", "Wait, I never said I work at Google, I work at a bakery."),
        ((0, "The learner works at Google."), (1, "The learner works at a bakery.")),
        ((1, "The learner works at Google.", "The learner works at Google."),),
        ("The learner works at a bakery.",),
    ),
    (
        (),
        ("My sister lives in Leeds.", "No, that's not what I said, my sister lives in York."),
        ((0, "The learner's sister lives in Leeds."), (1, "The learner's sister lives in York.")),
        ((1, "The learner's sister lives in Leeds.", "The learner's sister lives in Leeds."),),
        ("The learner's sister lives in York.",),
    ),
    (
        (),
        ("I'm allergic to peanuts.", "Hmm, I didn't say I'm allergic to anything."),
        ((0, "The learner is allergic to peanuts."),),
        ((1, "The learner is allergic to something.", "The learner is allergic to peanuts."),),
        (),
    ),
    (
        (),
        ("I live in Taipei. I have two kids.", "No, I never said I live in Taipei."),
        ((0, "The learner lives in Taipei."), (0, "The learner has two kids.")),
        ((1, "The learner lives in Taipei.", "The learner lives in Taipei."),),
        ("The learner has two kids.",),
    ),
    (
        (),
        ("I play the violin.", "It's raining again.", "Sorry, I never said I play the violin, I play the viola."),
        ((0, "The learner plays the violin."), (2, "The learner plays the viola.")),
        ((2, "The learner plays the violin.", "The learner plays the violin."),),
        ("The learner plays the viola.",),
    ),
    (
        (),
        ("I'm starting my own dance studio.", "Actually, I never said I'm opening a studio, I'm still looking."),
        ((0, "The learner is starting his own dance studio."), (1, "The learner is looking for a dance studio.")),
        ((1, "The learner is opening a dance studio.", "The learner is starting his own dance studio."),),
        ("The learner is looking for a dance studio.",),
    ),
    (
        (),
        ("我有一隻貓叫麻糬。", "抱歉，我沒說過我有貓。"),
        ((0, "學習者有一隻貓叫麻糬。"),),
        ((1, "學習者有貓。", "學習者有一隻貓叫麻糬。"),),
        (),
    ),
    # in the order said: a fact said again after its correction stands
    (
        (),
        ("I have a cat.", "No, I never said I have a cat.", "Sorry, my mistake, I do have a cat, Mochi."),
        ((0, "The learner has a cat."), (2, "The learner has a cat named Mochi.")),
        ((1, "The learner has a cat.", "The learner has a cat."),),
        ("The learner has a cat named Mochi.",),
    ),
    (
        ("The learner has a dog.",),
        ("I never said I have a dog.", "Oh wait, I do have a dog, his name is Rex."),
        ((1, "The learner has a dog named Rex."),),
        ((0, "The learner has a dog.", "The learner has a dog."),),
        ("The learner has a dog named Rex.",),
    ),
    # a correction of an earlier memory beside a new fact (today's behaviour, kept)
    (
        ("The learner lives in Taipei.",),
        ("No, I never said I live in Taipei.", "I live in Tainan."),
        ((1, "The learner lives in Tainan."),),
        ((0, "The learner lives in Taipei.", "The learner lives in Taipei."),),
        ("The learner lives in Tainan.",),
    ),
]

# -- opposite corrections ----------------------------------------------------------------------
# (a mistake, another, whether they are one mistake), each (original, corrected, rule, kind).
# The same rule text in both directions is two mistakes (issue 28, point 6).
_SINCE_FOR = "since vs for"
OPPOSITE_CORRECTIONS = [
    (
        ("I have lived here since three years", "I have lived here for three years", _SINCE_FOR, "grammar"),
        ("I have worked here for 2019", "I have worked here since 2019", _SINCE_FOR, "grammar"),
        False,
    ),
    (
        ("The class starts in Monday", "The class starts on Monday", "prepositions of time", "grammar"),
        ("We met on 2019", "We met in 2019", "prepositions of time", "grammar"),
        False,
    ),
    (
        ("I don't have much friends", "I don't have many friends", "much vs many", "grammar"),
        ("I don't have many money", "I don't have much money", "much vs many", "grammar"),
        False,
    ),
    (
        ("I need to make my homework", "I need to do my homework", "make vs do", "word choice"),
        ("I have to do a decision", "I have to make a decision", "make vs do", "word choice"),
        False,
    ),
    (
        ("It was a honest mistake", "It was an honest mistake", "a vs an", "grammar"),
        ("I ate an banana", "I ate a banana", "a vs an", "grammar"),
        False,
    ),
    (
        ("There were less people today", "There were fewer people today", "fewer vs less", "grammar"),
        ("I drink fewer coffee now", "I drink less coffee now", "fewer vs less", "grammar"),
        False,
    ),
    (
        ("The dog wagged it's tail", "The dog wagged its tail", "its vs it's", "spelling"),
        ("Its raining again", "It's raining again", "its vs it's", "spelling"),
        False,
    ),
    (
        ("Can you borrow me your pen?", "Can you lend me your pen?", "borrow vs lend", "word choice"),
        ("Can I lend your charger?", "Can I borrow your charger?", "borrow vs lend", "word choice"),
        False,
    ),
    (
        ("She said me the truth", "She told me the truth", "say vs tell", "word choice"),
        ("He told that he was tired", "He said that he was tired", "say vs tell", "word choice"),
        False,
    ),
    (
        ("The movie was so bored", "The movie was so boring", "-ed vs -ing adjectives", "grammar"),
        ("I was boring in class", "I was bored in class", "-ed vs -ing adjectives", "grammar"),
        False,
    ),
    # the same correction in another sentence is still one mistake
    (
        ("I have lived here since three years", "I have lived here for three years", _SINCE_FOR, "grammar"),
        ("We have been friends since ten years", "We have been friends for ten years", _SINCE_FOR, "grammar"),
        True,
    ),
    (
        ("I don't have much friends", "I don't have many friends", "much vs many", "grammar"),
        ("There are much cars here", "There are many cars here", "much vs many", "grammar"),
        True,
    ),
    (
        ("Can you borrow me your pen?", "Can you lend me your pen?", "borrow vs lend", "word choice"),
        ("Could you borrow me some money?", "Could you lend me some money?", "borrow vs lend", "word choice"),
        True,
    ),
]
