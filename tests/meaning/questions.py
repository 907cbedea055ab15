"""Questions about the LoCoMo development conversations that share no content word with the turn
that answers them: each asks in other words (synonyms, paraphrase, what a thing is an instance
of), and names nobody. tests/meaning/test_meaning.py checks the "no shared content word"
property with the keyword memories' own terms (himga.memory.text: stopwords out, Porter
stems), against the turn's speaker and content, and the turns the keyword method reads with it
(its window: the two turns before and after it in its session), so no word can reach it."""

# (conversation, evidence turn, question)
QUESTIONS: tuple[tuple[str, str, str], ...] = (
    ("conv-26", "D1:3", "Which meeting for gay and trans people did she attend?"),
    ("conv-26", "D1:7", "What did the meetings do for her self-esteem and bravery?"),
    ("conv-26", "D2:8", "What is she investigating in order to become a parent to orphans?"),
    ("conv-26", "D4:3", "Which Scandinavian nation does her grandmother come from?"),
    ("conv-26", "D6:7", "Who is assembling a home bookshelf for future children?"),
    ("conv-26", "D7:11", "What novel about a transgender teenager did she praise?"),
    ("conv-26", "D8:11", "What do yellow blossoms symbolise?"),
    ("conv-26", "D14:17", "Who created a colourful pane for a place of worship?"),
    ("conv-26", "D14:33", "Which upcoming exhibition of queer artwork is being organised?"),
    ("conv-26", "D18:7", "How did the youngsters cope after the crash?"),
    ("conv-30", "D1:9", "Which genre of movement does she prefer?"),
    ("conv-30", "D1:17", "What was her proudest victory as a teenager?"),
    ("conv-30", "D3:6", "Why did she select the sofas and lighting for her boutique?"),
    ("conv-30", "D5:15", "What does the ink on her skin mean?"),
    ("conv-30", "D8:1", "Why did he stop using his financial institution?"),
    ("conv-30", "D12:6", "Which entrepreneurship title is on his nightstand?"),
    ("conv-30", "D13:7", "What personal coaching does he provide to students?"),
    ("conv-30", "D13:11", "What is the purpose of his planner?"),
    ("conv-30", "D15:1", "Why did he travel to Italy's capital?"),
    ("conv-41", "D1:12", "What did the additional money do for the classrooms?"),
    (
        "conv-41",
        "D8:15",
        "Where did she find inspiration for the fortress decoration in her house?",
    ),
    ("conv-41", "D11:1", "What vehicle failure hurt his finances?"),
    ("conv-41", "D13:5", "What physical benefits came from the training sessions?"),
    ("conv-41", "D13:7", "How frequently do they exercise as a household?"),
    ("conv-41", "D17:1", "Which animal companion died after a decade with them?"),
    ("conv-41", "D17:11", "Why are they thinking of taking in an abandoned puppy?"),
    ("conv-41", "D19:8", "What new position was he given?"),
    ("conv-41", "D20:4", "What kind of concert did they enjoy together?"),
    ("conv-41", "D22:17", "How frequently does he watch the sky at dusk?"),
    ("conv-41", "D27:12", "Why should youths go to war monuments?"),
    ("conv-41", "D30:14", "Why does he believe his efforts change nothing?"),
)
