"""Everyday commands at 1k, 10k and 50k memories, each beside bare Chroma on the same data.

    python bench/scale.py [--sizes 1000,10000,50000] [--cache DIR] [--runs 5] [--timeout 60]
                          [--skip op,op] [--only op,op] [--data ../shared/data/locomo] [--profile DIR]

The memories are real sentences: the LoCoMo observations and turns, retold (the
first time about the learner, then about people in the learner's life: each
retelling changes the names, the relation and the places), so every text is
distinct. A size is the first N of one fixed order, so 1k lies inside 10k inside
50k. A store is built as Memora writes one: ``helpers.stores.add_many`` with
the local all-MiniLM-L6-v2 model into real Chroma on disk, 1% of the memories
then edited once (so ``history`` has versions), 40 mistakes in the ledger, a
profile; then the same rows, vectors and metadata go into a bare Chroma
collection beside it. Both are kept under ``--cache`` (``size-N/``) and reused by
the next run; ``vectors.npy`` there keeps every text's vector, so rebuilding a
store after a change of the store's format embeds nothing again.

Each operation runs in a worker process (``--worker``) on a working copy of the
cached store: Memora opened as ``chatbot.py`` opens it, its warm-up done, then
each command typed through ``commands.run_command`` on a plain console, timed
beside the bare-Chroma reference on the same data in the same process, runs
interleaved; medians are printed (p95 for the page's redraw). ``status`` is
timed first in a fresh process each run, since it is the first one of a session
that pays. A run that takes over ``--timeout`` is killed and printed as ``>Ns``,
and a cold operation that timed out once is not started again. Start-up (to the
prompt of ``chatbot.py``, through a pseudo-terminal, against ``python -c "import
chromadb, openai"``) and peak memory (the REPL's own maximum RSS, from the kernel)
are measured in child processes: ``import``, ``export`` and ``reindex`` run in
``chatbot.py --plain`` against Chroma's own add of the same texts (embedded by the
same model, in batches) and a paged ``get`` written as JSON. ``repl`` is a session
of everyday commands in ``chatbot.py --plain``: its peak memory.

``--profile DIR`` writes a cProfile of each timed Memora call of the worker
operations to DIR/<size>-<op>.prof. Nothing built or measured is committed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests")]

from helpers.stores import add_many  # noqa: E402

BARE = "bare-memories"


def chroma_settings():
    import chromadb

    return chromadb.Settings(anonymized_telemetry=False)


USER = "default"
BATCH = 1000
# name, the bare-Chroma reference beside it (None: none), how it is run
OPS = {
    "status": ("count()", "cold"),
    "memories": ("paged get of all rows", "warm"),
    "search": ("embed + query(10)", "warm"),
    "why": ("embed + query(10)", "warm"),
    "remember": ("embed + add", "warm"),
    "undo": ("delete([id])", None),  # timed by the remember worker: the undo of each remember
    "forget": ("delete([id])", "warm"),
    "history": ("get([id])", "warm"),
    "mistakes": ("count()", "warm"),
    "page open": ("SELECT every text", None),
    "page redraw p95": (None, None),
    "conflicts": (None, "warm"),
    "startup": ("import chromadb, openai", "child"),
    "export": ("paged get + JSON", "child"),
    "import": ("embed + add", "child"),
    "reindex": ("embed + add", "child"),
    "repl": (None, "child"),
}
SELECTABLE = [op for op, (_, how) in OPS.items() if how] + ["page"]

# -- the sentences -------------------------------------------------------------------------

RELATIONS = """cousin colleague boss neighbour classmate best-friend flatmate teacher team-mate landlord
manager partner friend coach mentor client old-school-friend tutor doctor""".split()
NAMES = """Ana Kenji Priya Tomas Mei Lukas Aisha Mateo Yuki Omar Sofia Daniel Hana Ivan Lena Rahul Chloe
Diego Sara Minh Elif Noah Amara Jonas Fatima Leo Ingrid Kofi Marta Hiro Nadia Pablo Zoe Arjun Clara
Tariq Emma Wei Nina Sam Olga Felix Rosa Kai Leila Bruno Iris Dev Alma Theo""".split()
PLACES = """Taipei Osaka Lisbon Seoul Toronto Melbourne Kraków Nairobi Bogotá Hanoi Porto Dublin Kyoto
Valencia Cebu Izmir Bergen Tainan Quito Busan""".split()
# Places named in the LoCoMo texts, swapped for others in each retelling.
KNOWN_PLACES = """New York City|Edinburgh|Scotland|Galway|Barcelona|Paris|Oregon|Florida|Michigan|Sweden
|Rome|Spain""".replace("\n", "").split("|")
# What Memora's reading would file a fact under, by its first telling word (else "other").
CATEGORY_WORDS = [
    ("schedule", "plan plans planning going next tomorrow upcoming week weekend trip"),
    ("learning", "learn learning class school study studying course education degree exam"),
    ("hobby", "paint painting music guitar piano hiking game games gaming book books read reading art"),
    ("preference", "love loves like likes enjoy enjoys favorite favourite prefer prefers"),
    ("habit", "every usually often always daily routine"),
    ("identity", "work works job career family kids married dog cat home lives"),
]
CATEGORY_OF = {word: category for category, words in CATEGORY_WORDS for word in words.split()}
MISTAKES = [
    ("Yesterday I goed to the market.", "Yesterday I went to the market.", "go → went: irregular past"),
    ("She don't like coffee.", "She doesn't like coffee.", "third person: doesn't"),
    ("I am agree with you.", "I agree with you.", "agree is a verb, no 'am'"),
    ("I have been to Tokyo last year.", "I went to Tokyo last year.", "past simple with a finished time"),
    ("He is more taller than me.", "He is taller than me.", "one comparative"),
    ("I look forward to see you.", "I look forward to seeing you.", "look forward to + -ing"),
    ("I didn't went there.", "I didn't go there.", "didn't + base form"),
    ("My sister make a cake.", "My sister makes a cake.", "third person -s"),
]


def base_sentences(data: Path) -> list[tuple[str, str, str, str, datetime]]:
    """(kind, speaker, other speaker, text, when) of every observation and turn, in a fixed shuffled order."""
    found = []
    for path in sorted(data.glob("*.json")):
        conversation = json.loads(path.read_text(encoding="utf-8"))
        speakers = (conversation["speaker_a"], conversation["speaker_b"])
        for key in conversation:
            match = re.fullmatch(r"session_(\d+)", key)
            if not match:
                continue
            number = match.group(1)
            when = datetime.strptime(conversation[f"{key}_date_time"].strip(), "%I:%M %p on %d %B, %Y")
            when = when.replace(tzinfo=UTC)
            for turn in conversation[key]:
                other = speakers[1] if turn["speaker"] == speakers[0] else speakers[0]
                if len(turn["text"].split()) >= 6:  # "Thanks, Mel!" is nobody's memory
                    found.append(("turn", turn["speaker"], other, turn["text"], when))
            for speaker, items in conversation.get(f"session_{number}_observation", {}).items():
                other = speakers[1] if speaker == speakers[0] else speakers[0]
                found.extend(("observation", speaker, other, text, when) for text, _ in items)
    random.Random(30).shuffle(found)
    return found


def _person(index: int, telling: int) -> tuple[str, str]:
    relation = RELATIONS[(index + 7 * telling) % len(RELATIONS)].replace("-", " ")
    name = NAMES[(3 * index + 11 * telling) % len(NAMES)]
    return f"the learner's {relation} {name}", name


def retold(base: tuple, index: int, telling: int) -> dict:
    """One memory: the base sentence told about the learner (telling 0) or someone in their life."""
    kind, speaker, other, text, when = base
    if telling == 0:
        subject, name = "the learner", "the learner"
    else:
        subject, name = _person(index, telling)
    friend = NAMES[(5 * index + 13 * telling + 1) % len(NAMES)]
    if telling:
        for n, place in enumerate(KNOWN_PLACES):
            text = text.replace(place, PLACES[(n + index + telling) % len(PLACES)])
    short = {"Melanie": "Mel", "Joanna": "Jo"}.get(speaker)
    first = True

    def name_of(match: re.Match) -> str:
        nonlocal first
        said, first = (subject if first else name), False
        return said

    if kind == "turn":
        text = re.sub(rf"\b{re.escape(other)}\b", friend, text)
        content = f'{subject} said: "{text}"'
    else:
        pattern = rf"\b{re.escape(speaker)}\b" + (rf"|\b{short}\b" if short else "")
        text = re.sub(rf"\b{re.escape(other)}\b", friend, text)
        content = re.sub(pattern, name_of, text) if re.search(pattern, text) else f"{subject}: {text}"
    content = content[0].upper() + content[1:]
    words = re.findall(r"[a-z]+", content.lower())
    category = next((CATEGORY_OF[w] for w in words if w in CATEGORY_OF), "other")
    return {
        "content": content,
        "category": category,
        "memory_type": "episodic" if kind == "turn" else "semantic",
        "source": "extracted",
        "created_at": when + timedelta(days=9 * telling),
    }


def memories(data: Path, count: int) -> list[dict]:
    """The first ``count`` memories of the fixed order (distinct texts)."""
    bases = base_sentences(data)
    out, seen = [], set()
    telling = 0
    while len(out) < count:
        for index, base in enumerate(bases):
            item = retold(base, index, telling)
            if item["content"] not in seen:
                seen.add(item["content"])
                out.append(item)
                if len(out) == count:
                    break
        telling += 1
    return out


# -- building the stores ---------------------------------------------------------------------


class CachedEmbedder:
    """The local model, with every vector it made kept in ``vectors.npy`` (same name, same vectors)."""

    def __init__(self, folder: Path):
        import numpy as np

        from memora.model.embeddings import LocalEmbedder

        self.local = LocalEmbedder()
        self.name = self.local.name
        self.folder = folder
        self.index: dict[str, int] = {}
        self.vectors = np.zeros((0, 384), dtype=np.float32)
        if (folder / "vectors.npy").exists():
            self.vectors = np.load(folder / "vectors.npy")
            texts = json.loads((folder / "vector-texts.json").read_text(encoding="utf-8"))
            self.index = {t: n for n, t in enumerate(texts[: len(self.vectors)])}

    def embed(self, texts):
        import numpy as np

        from memora.model.embeddings import EmbeddingResult

        missing = list(dict.fromkeys(t for t in texts if t not in self.index))
        if missing:
            made = np.asarray(self.local.embed(missing).vectors, dtype=np.float32)
            self.index.update({t: len(self.vectors) + n for n, t in enumerate(missing)})
            self.vectors = np.concatenate([self.vectors, made])
        return EmbeddingResult([self.vectors[self.index[t]].tolist() for t in texts])

    def save(self) -> None:
        import numpy as np

        np.save(self.folder / "vectors.npy", self.vectors)
        texts = sorted(self.index, key=self.index.get)
        (self.folder / "vector-texts.json").write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")


def build(folder: Path, size: int, data: Path, embedder: CachedEmbedder) -> dict:
    """The cached store of ``size`` memories (built once): Memora's, and the bare one beside it."""
    marker = folder / "built.json"
    if marker.exists():
        return json.loads(marker.read_text())
    import chromadb

    from memora.app.assistant import Memora
    from memora.core.config import Settings
    from memora.teaching.ledger import NewMistake

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    edits = size // 100
    items = memories(data, size - edits)  # each edit adds a version: ``size`` records in all
    settings = Settings.from_env({"MEMORA_HOME": str(folder / "home")})
    app = Memora.from_settings(settings, embedder=embedder, notify=lambda _m: None)
    app.set_memory_cap(None)
    started = time.perf_counter()
    records = add_many(app.store, items)
    edited, replaced = [], set()
    for n, record in enumerate(records[:: max(len(records) // max(edits, 1), 1)][:edits]):
        replaced.add(record.id)
        month = ("March", "June", "October")[n % 3]
        edited.append(app.store.edit(record.id, f"{record.content.rstrip('.')} (since {month} 2024).").id)
    memora_seconds = time.perf_counter() - started
    for n in range(40):
        wrong, right, rule = MISTAKES[n % len(MISTAKES)]
        who = NAMES[n]
        app.ledger.record(
            NewMistake(original=f"{who}: {wrong}", corrected=f"{who}: {right}", rule=rule, kind="grammar")
        )
    app.profiles.set_english_level("B1")
    app.profiles.add_learning_goal("pass IELTS with 7.0")
    collection = app.store.vectors._coll()
    rows = {"ids": [], "documents": [], "metadatas": [], "embeddings": []}
    for offset in range(0, size, BATCH):
        got = collection.get(limit=BATCH, offset=offset, include=["documents", "metadatas", "embeddings"])
        for key in rows:
            rows[key].extend(list(got[key]))
    app.close(timeout=30)
    embedder.save()
    client = chromadb.PersistentClient(path=str(folder / "bare"), settings=chroma_settings())
    bare = client.create_collection(BARE, configuration={"hnsw": {"space": "cosine"}}, embedding_function=None)
    started = time.perf_counter()
    for start in range(0, len(rows["ids"]), BATCH):
        bare.add(**{key: values[start : start + BATCH] for key, values in rows.items()})
    built = {
        "size": size,
        "records": len(rows["ids"]),
        "memora_build_s": round(memora_seconds, 1),
        "bare_build_s": round(time.perf_counter() - started, 1),
        "edited": edited,
        "ids": [r.id for r in records if r.id not in replaced][:: max(size // 200, 1)],  # what forget picks from
    }
    marker.write_text(json.dumps(built))
    return built


def disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


# -- the worker: one operation, Memora beside bare Chroma, in one process ---------------------


def emit(**line) -> None:
    print(json.dumps(line), flush=True)


class Timer:
    """Times a Memora call, under cProfile when ``--profile`` asks."""

    def __init__(self, profile: Path | None):
        self.profiler = None
        if profile:
            import cProfile

            self.profiler = cProfile.Profile()
        self.profile = profile

    def __call__(self, call) -> float:
        started = time.perf_counter()
        if self.profiler:
            self.profiler.runcall(call)
        else:
            call()
        return time.perf_counter() - started

    def save(self) -> None:
        if self.profiler:
            self.profiler.dump_stats(str(self.profile))


def bare_timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def open_memora(home: Path, server=None):
    """Memora as ``chatbot.py`` opens it, its warm-up done (as while a learner types), and its command runner."""
    from chatbot import preload
    from memora.app.assistant import Memora
    from memora.cli.commands import CommandRouter, run_command
    from memora.cli.terminal import PlainConsole
    from memora.core.config import Settings

    env = {"MEMORA_HOME": str(home)}
    if server is not None:
        env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench")
    app = Memora.from_settings(Settings.from_env(env), notify=lambda _m: None)
    shown: list[str] = []
    console = PlainConsole(read=lambda _prompt: "", write=shown.append)
    preload(app, threading.Event())
    router = CommandRouter(app, console)

    def run(line: str) -> None:
        shown.clear()
        if not run_command(router, line) or any(text.startswith("Error") for text in shown):
            raise SystemExit(f"'{line}' did not run as a command: {''.join(shown)[:300]}")

    run.router, run.shown = router, shown
    return app, run


def get_all(collection) -> None:
    offset = 0
    while collection.get(limit=BATCH, offset=offset, include=["documents", "metadatas"])["ids"]:
        offset += BATCH


def select_texts(bare: Path) -> None:
    with contextlib.closing(sqlite3.connect(bare / "chroma.sqlite3")) as db:
        db.execute(
            "SELECT e.embedding_id, m.string_value FROM embeddings e JOIN embedding_metadata m "
            "ON m.id = e.id AND m.key = 'chroma:document'"
        ).fetchall()


def worker(args) -> None:
    import chromadb

    op, home, bare_dir, built = args.worker, Path(args.home), Path(args.bare), json.loads(Path(args.built).read_text())
    client = chromadb.PersistentClient(path=str(bare_dir), settings=chroma_settings())
    bare = client.get_collection(BARE)
    bare.count()  # the bare side's first call opens its files, as Memora's opening did
    timer = Timer(Path(args.profile) / f"{built['size']}-{op.replace(' ', '-')}.prof" if args.profile else None)
    server = None
    if op == "why":
        from helpers.fake_openai import FakeOpenAIServer

        server = FakeOpenAIServer().start()
    started = time.perf_counter()
    app, run = open_memora(home, server)
    emit(ready=time.perf_counter() - started)
    questions = [q for q in queries(Path(args.data)) if run.router.is_command(f"search {q}")]
    rng = random.Random(built["size"])

    def embedded_query(text: str) -> None:
        bare.query(query_embeddings=app.embedder.embed([text]).vectors, n_results=10)

    if op == "why":
        app.chat(questions[0], on_delta=lambda _d: None)
        app.wait_for_extraction(60)
    if op == "page":
        page_worker(app, bare_dir, args.open_only, timer)
    elif op == "conflicts":
        from memora.cli.page import open_conflicts

        found: list = []
        seconds = timer(lambda: found.extend(open_conflicts(app)))
        emit(op=op, memora=seconds, note=f"{len(found)} flags")
    elif op == "remember":

        def bare_add(text: str) -> None:
            vectors = app.embedder.embed([text]).vectors
            bare.add(ids=["new"], documents=[text], embeddings=vectors, metadatas=[{"category": "other"}])

        fresh = memories(Path(args.data), built["size"] + args.runs)[-args.runs :]
        for item in fresh:
            text = item["content"]
            memora = timer(lambda text=text: run(f"remember {text}"))
            if not "".join(run.shown).startswith("Remembered"):  # a duplicate writes nothing: not this op
                raise SystemExit(f"remember did not store a new memory: {''.join(run.shown)[:200]}")
            emit(op="remember", memora=memora, bare=bare_timed(lambda text=text: bare_add(text)))
            emit(op="undo", memora=timer(lambda: run("undo")), bare=bare_timed(lambda: bare.delete(ids=["new"])))
    else:
        for n in range(args.runs):
            if op == "status":
                line, reference = "status", bare.count
            elif op == "memories":
                line, reference = "memories", lambda: get_all(bare)
            elif op in ("search", "why"):
                question = questions[(n + 1) % len(questions)]
                line = "why" if op == "why" else f"search {question}"
                reference = lambda q=question: embedded_query(q)  # noqa: E731
            elif op == "forget":
                chosen = rng.choice(built["ids"])
                built["ids"].remove(chosen)
                line, reference = f"forget {chosen}", lambda c=chosen: bare.delete(ids=[c])
            elif op == "history":
                chosen = built["edited"][n % len(built["edited"])]
                line, reference = f"history {chosen}", lambda c=chosen: bare.get(ids=[c])
            elif op == "mistakes":
                line, reference = "mistakes", bare.count
            else:
                raise SystemExit(f"unknown operation {op}")
            if n % 2:  # interleaved: each side goes first every other run
                emit(op=op, bare=bare_timed(reference), memora=timer(lambda line=line: run(line)))
            else:
                emit(op=op, memora=timer(lambda line=line: run(line)), bare=bare_timed(reference))

    timer.save()
    app.close(timeout=30)
    if server is not None:
        server.stop()


QUESTION = re.compile(
    r"^(what|when|where|who|why|how|which|did|does|do|is|are|was|were|would|has|have|might)\b\s*"
    r"((is|are|did|does|do|was|were|has|have|would|might|kind of|many|long|much)\b\s*)?",
    re.IGNORECASE,
)


def queries(data: Path) -> list[str]:
    """The LoCoMo questions as a learner would search for them ("Caroline's identity"):
    a line ending in "?" is a question to the tutor, not a ``search``."""
    found = []
    for path in sorted(data.glob("*.json")):
        conversation = json.loads(path.read_text(encoding="utf-8"))
        names = (conversation["speaker_a"], conversation["speaker_b"])
        for q in conversation.get("qa", [])[:40]:
            text = QUESTION.sub("", q["question"].strip().rstrip("?").strip())
            for n, name in enumerate(names):
                text = text.replace(name, NAMES[n])
            found.append(text)
    random.Random(7).shuffle(found)
    return found


def page_worker(app, bare_dir: Path, open_only: bool, timer: Timer) -> None:
    """The page as ``page`` opens it, into an 80x24 VT100 buffer; open = the first frame."""
    import io

    from page import keypresses
    from prompt_toolkit.data_structures import Size
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output.vt100 import Vt100_Output

    from memora.cli.commands import line_runner
    from memora.cli.page import MemoryPage

    with create_pipe_input() as pipe:
        frames: list[float] = []
        drawn = threading.Event()
        holder = {}

        def opened() -> None:
            out = Vt100_Output(io.StringIO(), lambda: Size(rows=24, columns=80), term="xterm")
            holder["page"] = MemoryPage(app, line_runner, input=pipe, output=out)
            holder["app"] = holder["page"].build()

            def rendered(_app) -> None:
                frames.append(time.perf_counter())
                drawn.set()

            holder["app"].after_render += rendered

        # The reference first: once the page is on screen, its conflicts are found in a thread beside it.
        bare = bare_timed(lambda: select_texts(bare_dir))
        started = time.perf_counter()
        timer(opened)

        def typist() -> None:
            drawn.wait(600)
            emit(op="page open", memora=frames[0] - started, bare=bare)
            if open_only:
                pipe.send_bytes(b"q")
                return
            timings = []
            for key in keypresses():
                drawn.clear()
                sent = time.perf_counter()
                pipe.send_bytes(key)
                if drawn.wait(10):
                    timings.append(frames[-1] - sent)
            emit(op="page redraw p95", memora=percentile(timings, 0.95), note=f"{len(timings)} keys")
            pipe.send_bytes(b"q")

        threading.Thread(target=typist, daemon=True).start()
        if open_only:
            timer(holder["app"].run)  # under the profiler too: the first frame builds the rows
        else:
            holder["app"].run()
    if open_only:
        timer.save()
        os._exit(0)  # the conflicts are still being found beside the page: not waited for


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# -- child processes: the REPL itself, and Chroma's own add ----------------------------------


def child_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMORA_", "CHROMA_"))}
    env.update(MEMORA_HOME=str(home), TERM="xterm-256color", COLUMNS="100", LINES="40")
    return env


def peak_mb(pid: int | str = "self") -> float:
    """The process's peak RSS so far (VmHWM). Not ``ru_maxrss``: a child's starts at its
    parent's size at the fork, and this parent holds the model and the vectors."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", status).group(1)) / 1024


class Child:
    """A child process whose output arrives on a queue, so a wait can have a deadline."""

    def __init__(self, command: list[str], env: dict, *, stdin=None, lines: bool = True, log: Path | None = None):
        errors = open(log, "a") if log else subprocess.DEVNULL  # noqa: SIM115 -- open while the child runs
        self.process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, stderr=errors, env=env, cwd=ROOT)
        self.out: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()

    def _read(self, lines: bool) -> None:
        stream = self.process.stdout
        while True:
            chunk = stream.readline() if lines else os.read(stream.fileno(), 65536)
            if not chunk:
                self.out.put(None)
                return
            self.out.put(chunk)

    def next(self, timeout: float):
        """The next chunk, None at the end; TimeoutError after ``timeout`` seconds."""
        try:
            return self.out.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None

    def finish(self, kill: bool = False) -> int:
        """Wait for the child (killed first if asked); its exit status."""
        if kill:
            self.process.kill()
        return self.process.wait()


def run_worker(op: str, work: Path, built_file: Path, args, *, runs: int, open_only: bool = False) -> list[dict]:
    """One worker; its result lines, or a line saying it passed the timeout."""
    command = [sys.executable, __file__, "--worker", op, "--home", str(work / "home"), "--bare", str(work / "bare")]
    command += ["--built", str(built_file), "--runs", str(runs), "--data", args.data]
    command += ["--open-only"] * open_only + (["--profile", args.profile] if args.profile else [])
    child = Child(command, os.environ.copy(), log=Path(args.cache) / "workers.log")
    results = []
    timeout = max(600, args.timeout)  # opening the store is not timed
    try:
        while True:
            line = child.next(timeout)
            if line is None:
                break
            record = json.loads(line)
            if "ready" not in record:
                results.append(record)
            timeout = args.timeout
    except TimeoutError:
        child.finish(kill=True)
        results.append({"op": op, "timeout": True})
        return results
    if child.finish():
        results.append({"op": op, "failed": True})
    return results


def repl_session(home: Path, lines: list[str], timeout: float, *, cap: bool = False):
    """``chatbot.py --plain`` typing ``lines``: each line's time to the next prompt (None: over the
    timeout, then killed), and the REPL's peak RSS in MB. ``cap``: a cap above the import's size
    (a new learner's default cap would refuse it)."""
    env = child_env(home) | ({"MEMORA_MEMORY_CAP": "1000000"} if cap else {})
    child = Child([sys.executable, str(ROOT / "chatbot.py"), "--plain"], env, stdin=subprocess.PIPE, lines=False)

    def to_prompt(limit: float) -> bool:
        seen = b""
        deadline = time.perf_counter() + limit
        while b"You: " not in seen:
            chunk = child.next(max(deadline - time.perf_counter(), 0.001))
            if chunk is None:
                raise RuntimeError("chatbot.py exited: " + seen[-300:].decode(errors="replace"))
            seen += chunk
        return True

    times: list[float | None] = []
    try:
        to_prompt(600)
        for line in lines:
            started = time.perf_counter()
            child.process.stdin.write(line.encode() + b"\n")
            child.process.stdin.flush()
            to_prompt(timeout)
            times.append(time.perf_counter() - started)
    except TimeoutError:
        times.append(None)
        peak = peak_mb(child.process.pid)
        child.finish(kill=True)
        return times, peak
    peak = peak_mb(child.process.pid)
    child.process.stdin.write(b"exit\n")
    child.process.stdin.close()
    child.finish()
    return times, peak


CHROMA_ADD = """
import json, sys, time, chromadb
sys.path.insert(0, {root!r})
from memora.model.embeddings import LocalEmbedder
started = time.perf_counter()
rows = [m for m in json.load(open({path!r}))["memories"]]
embedder = LocalEmbedder()
client = chromadb.PersistentClient(path={target!r}, settings=chromadb.Settings(anonymized_telemetry=False))
collection = client.create_collection("bare", configuration={{"hnsw": {{"space": "cosine"}}}}, embedding_function=None)
for start in range(0, len(rows), 256):
    batch = rows[start:start + 256]
    texts = [m["content"] for m in batch]
    collection.add(ids=[m["id"] for m in batch], documents=texts, embeddings=embedder.embed(texts).vectors,
                   metadatas=[{{"category": m["category"], "status": m["status"]}} for m in batch])
print(time.perf_counter() - started, flush=True)
"""
CHILD_END = """
import re
print(int(re.search(r"VmHWM:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) / 1024, flush=True)
"""
CHROMA_EXPORT = """
import json, sys, time, chromadb
started = time.perf_counter()
client = chromadb.PersistentClient(path={bare!r}, settings=chromadb.Settings(anonymized_telemetry=False))
collection = client.get_collection({name!r})
rows, offset = [], 0
while True:
    got = collection.get(limit=1000, offset=offset, include=["documents", "metadatas"])
    if not got["ids"]:
        break
    rows += [{{"id": i, "content": d, **m}} for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])]
    offset += 1000
json.dump(rows, open({target!r}, "w"), indent=2)
print(time.perf_counter() - started, flush=True)
"""


def python_child(code: str, timeout: float) -> tuple[float | None, float]:
    """A Python child running ``code`` (which ends by printing its time): that time and its peak RSS in MB."""
    child = Child([sys.executable, "-c", code + CHILD_END], os.environ.copy())
    try:
        line = child.next(timeout)
        peak = float(child.next(timeout))
    except TimeoutError:
        peak = peak_mb(child.process.pid)
        child.finish(kill=True)
        return None, peak
    child.finish()
    return float(line), peak


def startup_times(home: Path, bare: Path, runs: int) -> dict[str, float]:
    """Medians of start-up to the prompt (pseudo-terminal) and its two references, interleaved."""
    from startup import time_interactive, time_reference

    env = child_env(home)
    bare_code = (
        f"import chromadb; c = chromadb.PersistentClient(path={str(bare)!r}, "
        "settings=chromadb.Settings(anonymized_telemetry=False)); "
        f"c.get_collection({BARE!r}).query(query_embeddings=[[0.05] * 384], n_results=10)"
    )
    time_interactive(env)  # the first start after the copy is not timed
    times: dict[str, list[float]] = {"memora": [], "import": [], "bare": []}
    for _ in range(runs):
        times["import"].append(time_reference(env))
        times["memora"].append(time_interactive(env))
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", bare_code], check=True, env=env, stderr=subprocess.DEVNULL)
        times["bare"].append(time.perf_counter() - started)
    return {key: statistics.median(values) for key, values in times.items()}


# -- the parent ------------------------------------------------------------------------------


def shown(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 0.01:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


def cell(memora, bare=None, note: str = "") -> str:
    text = memora if isinstance(memora, str) else shown(memora)
    if bare is not None and not isinstance(memora, str):
        ratio = memora / bare
        text += f" / {shown(bare)} = {ratio:.0f}x" if ratio >= 10 else f" / {shown(bare)} = {ratio:.2f}x"
    return text + (f" ({note})" if note else "")


def measure(size: int, args, cache: Path, selected: set[str], embedder) -> dict[str, str]:
    """Every selected operation at one size: {operation: table cell}."""
    folder = cache / f"size-{size}"
    built = build(folder, size, Path(args.data), embedder)
    cells: dict[str, str] = {}
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"== {size} memories ({built['records']} records, built in {built['memora_build_s']} s; "
          f"bare {built['bare_build_s']} s); load {load}", flush=True)  # fmt: skip
    memora_disk, bare_disk = disk_bytes(folder / "home"), disk_bytes(folder / "bare")
    cells["disk per memory"] = f"{memora_disk / size / 1024:.1f} KB / {bare_disk / size / 1024:.1f} KB"
    work = Path(tempfile.mkdtemp(prefix=f"work-{size}-", dir=cache))
    try:
        for part in ("home", "bare"):
            shutil.copytree(folder / part, work / part)
        built_file = work / "built.json"
        shutil.copy(folder / "built.json", built_file)
        times = {}

        def take(results: list[dict]) -> None:
            for r in results:
                times.setdefault(r["op"], []).append(r)

        for op in ("status", "memories", "search", "why", "history", "mistakes", "conflicts", "page"):
            if op not in selected:
                continue
            if op == "status":  # first in a session: a fresh process each run
                for _ in range(args.runs):
                    results = run_worker(op, work, built_file, args, runs=1)
                    take(results)
                    if any(r.get("timeout") for r in results):
                        break
            elif op == "page":
                take(run_worker(op, work, built_file, args, runs=1))
                for _ in range(args.runs - 1):
                    take(run_worker(op, work, built_file, args, runs=1, open_only=True))
            else:
                take(run_worker(op, work, built_file, args, runs=1 if op == "conflicts" else args.runs))
            report(op, times, cells)
        for op in ("remember", "forget"):
            if op in selected:
                take(run_worker(op, work, built_file, args, runs=args.runs))
                report(op, times, cells)
        children(size, work, args, selected, cells)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return cells


def report(op: str, times: dict, cells: dict) -> None:
    """Table cells for ``op`` (and what its worker timed beside it), printed as they come."""
    timed_out = any(r.get("timeout") for r in times.get(op, []))
    failed = any(r.get("failed") for r in times.get(op, []))
    for name in {"remember": ["remember", "undo"], "page": ["page open", "page redraw p95"]}.get(op, [op]):
        done = [r for r in times.get(name, []) if "memora" in r]
        if not done and failed and not timed_out:
            cells[name] = "failed (see workers.log in the cache)"
        elif not done:
            cells[name] = f">{ARGS.timeout:g} s" + (" (conflicts not in)" if name == "page redraw p95" else "")
        else:
            memora = statistics.median(r["memora"] for r in done)
            bare = statistics.median(r["bare"] for r in done) if "bare" in done[0] else None
            note = done[0].get("note", "")
            if timed_out and name == op:
                note = (note + "; " if note else "") + f"a later run >{ARGS.timeout:g} s"
            cells[name] = cell(memora, bare, note)
        print(f"  {name:<18} {cells[name]}", flush=True)


def children(size: int, work: Path, args, selected: set[str], cells: dict) -> None:
    """Start-up, the REPL's peak memory, and export / import / reindex beside Chroma's own."""
    home = work / "home"
    if "startup" in selected:
        found = startup_times(home, work / "bare", 3)
        cells["startup"] = (
            f"{shown(found['memora'])} / {shown(found['import'])} = {found['memora'] / found['import']:.2f}x "
            f"(bare open + query {shown(found['bare'])})"
        )
        print(f"  {'startup':<18} {cells['startup']}", flush=True)
    exported = work / "export.json"
    if {"export", "import"} & selected:
        timed, peak = repl_session(home, [f"export {exported}"], args.timeout * 10)
        target = work / "bare-export.json"
        code = CHROMA_EXPORT.format(bare=str(work / "bare"), name=BARE, target=str(target))
        bare, bare_peak = python_child(code, args.timeout * 10)
        cells["export"] = child_cell(timed[-1], peak, bare, bare_peak, args.timeout * 10)
        print(f"  {'export':<18} {cells['export']}", flush=True)
    for op in ("import", "reindex"):
        if op not in selected or (op == "import" and not exported.exists()):
            continue
        fresh = work / "import-home"
        line = f"import {exported}" if op == "import" else "reindex"
        timed, peak = repl_session(fresh if op == "import" else home, [line], args.timeout * 10, cap=op == "import")
        code = CHROMA_ADD.format(root=str(ROOT), path=str(exported), target=str(work / f"chroma-{op}"))
        bare, bare_peak = python_child(code, args.timeout * 10)
        cells[op] = child_cell(timed[-1], peak, bare, bare_peak, args.timeout * 10)
        print(f"  {op:<18} {cells[op]}", flush=True)
        shutil.rmtree(work / f"chroma-{op}", ignore_errors=True)
    if "repl" in selected:
        chosen = json.loads((work / "built.json").read_text())["edited"][0]
        lines = ["memories", "search where did they go on holiday", f"history {chosen}", "mistakes", "status"]
        timed, peak = repl_session(home, lines, args.timeout)
        cut = "" if timed[-1] is not None else f", killed in '{lines[len(timed) - 1]}' after {args.timeout:g} s"
        cells["repl"] = f"{peak:.0f} MB{cut}"
        print(f"  {'repl peak memory':<18} {cells['repl']}", flush=True)


def child_cell(memora, peak, bare, bare_peak, timeout) -> str:
    memora_text = shown(memora) if memora is not None else f">{timeout:g} s"
    bare_text = shown(bare) if bare is not None else f">{timeout:g} s"
    ratio = f" = {memora / bare:.2f}x" if memora is not None and bare else ""
    return f"{memora_text}, {peak:.0f} MB / {bare_text}, {bare_peak:.0f} MB{ratio}"


ROWS = [
    ("status", "status, first in a session"),
    ("memories", "memories"),
    ("search", "search"),
    ("why", "why"),
    ("remember", "remember"),
    ("undo", "undo of a remember"),
    ("forget", "forget <id>"),
    ("history", "history <id>"),
    ("mistakes", "mistakes"),
    ("page open", "page open"),
    ("page redraw p95", "page redraw, p95"),
    ("conflicts", "conflict detector"),
    ("startup", "start-up"),
    ("repl", "peak memory of the REPL"),
    ("export", "export (time, peak)"),
    ("import", "import (time, peak)"),
    ("reindex", "reindex (time, peak)"),
    ("disk per memory", "disk per memory"),
]


def main() -> int:
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--cache", default=str(ROOT.parent / "scale-cache"), help="where built stores are kept")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo"))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a run is cut off")
    parser.add_argument("--only", default="", help="comma-separated operations: " + ", ".join(SELECTABLE))
    parser.add_argument("--skip", default="", help="comma-separated operations to leave out")
    parser.add_argument("--profile", default="", help="folder for cProfile files of the worker operations")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    for hidden in ("--home", "--bare", "--built"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    parser.add_argument("--open-only", action="store_true", help=argparse.SUPPRESS)
    args = ARGS = parser.parse_args()
    from memora.model.embeddings import local_model_available

    if not local_model_available():
        print("the local all-MiniLM-L6-v2 model is missing: source ../shared/tools/offline-caches.sh", file=sys.stderr)
        return 2
    if args.worker:
        worker(args)
        return 0
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    wanted = {w.strip() for w in args.only.split(",") if w.strip()} or set(SELECTABLE)
    selected = wanted - {w.strip() for w in args.skip.split(",")}
    unknown = selected - set(SELECTABLE)
    if unknown:
        parser.error(f"unknown operation(s): {', '.join(sorted(unknown))}; choose from {', '.join(SELECTABLE)}")
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",")]
    embedder = CachedEmbedder(cache)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"bench/scale.py: {args.runs} runs, timeout {args.timeout:g} s, load average {load} (2 cores)", flush=True)
    started = time.perf_counter()
    table = {}
    for size in sizes:
        size_started = time.perf_counter()
        table[size] = measure(size, args, cache, selected, embedder)
        print(f"   ({size} memories took {time.perf_counter() - size_started:.0f} s)", flush=True)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nMemora / bare Chroma = ratio, medians (load average at the end {load}; "
          f"{time.perf_counter() - started:.0f} s in all)\n")  # fmt: skip
    heads = [f"{s // 1000}k" if s % 1000 == 0 else str(s) for s in sizes]
    print("| operation | bare Chroma | " + " | ".join(heads) + " |")
    print("|---|---|" + "---|" * len(sizes))
    for key, label in ROWS:
        if all(key not in table[s] for s in sizes):
            continue
        reference = {"repl": "", "disk per memory": "Chroma's files"}.get(key, OPS.get(key, (None,))[0] or "")
        print(f"| {label} | {reference} | " + " | ".join(table[s].get(key, "") for s in sizes) + " |")
    return 0


ARGS = None

if __name__ == "__main__":
    sys.exit(main())
