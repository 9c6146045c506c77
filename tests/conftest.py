"""Shared fixtures.

* ``block_network`` (autouse): any connection that is not loopback fails the
  test, even if the code under test swallows the exception.
* ``isolated_env`` (autouse): data goes to a temporary folder and no real
  OpenAI or Chroma settings leak in from the environment.
* ``server``: a local Responses API server (``fake_openai.py``); what it sends is checked
  against the SDK's types at teardown.
* ``make_app``: a ``Memora`` wired to that server, a temporary data folder,
  the deterministic hash embedding and an injectable clock.
* ``litellm_proxy``: a real LiteLLM proxy (its own virtualenv, ``MEMORA_LITELLM``)
  in front of a scripted chat-completions server (``chat_backend.py``).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest
from helpers.clock import FakeClock
from helpers.fake_openai import FakeOpenAIServer

# The root and tests/ are on sys.path through pyproject.toml's ``pythonpath``.
ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

NETGUARD = TESTS / "netguard"
# What the test run is told by CI, not settings of Memora's: kept when isolated_env clears the rest.
_TEST_SETTINGS = {"MEMORA_REQUIRE_LOCAL_MODELS", "MEMORA_LITELLM"}
_LOOPBACK = {"127.0.0.1", "::1", "localhost", "0.0.0.0"}
MEMORY_BACKED_TMP = Path("/dev/shm")


def pytest_configure(config):
    """Put the tests' folders (``tmp_path``, the Chroma server's data) in memory when the
    machine has a tmpfs at /dev/shm.

    Every Chroma and SQLite write ends in an fsync; on a disk that is most of a write's
    cost (an embedded upsert takes 20-30 ms on this machine's disk, 4 ms on tmpfs), and
    the suite makes thousands of them. tmpfs keeps the same POSIX semantics the tests
    check (renames, flock, permission bits, symlinks), and a SIGKILLed child loses
    nothing on either, since its writes are in the page cache once the call returns. Only
    a power cut would tell them apart, and no test can make one. ``--basetemp`` or
    ``PYTEST_DEBUG_TEMPROOT=/tmp`` put the folders on disk instead. Under xdist the
    controller runs this first; its workers inherit the variable and get their folders
    under its base folder."""
    if config.option.basetemp or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    if MEMORY_BACKED_TMP.is_dir() and os.access(MEMORY_BACKED_TMP, os.W_OK | os.X_OK):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(MEMORY_BACKED_TMP)


# The tiktoken encodings Memora's models use (o200k_base for every current and unknown
# model, cl100k_base for the older ones).
TOKEN_ENCODINGS = ("o200k_base", "cl100k_base")
_MODEL_FILES_MISSING: dict[str, str] = {}


@pytest.fixture(scope="session", autouse=True)
def model_files(tmp_path_factory):
    """Fetch tiktoken's encoding files and the local embedding model once, before any
    test's network guard is in place (pytest sets up session fixtures before function
    ones), so a fresh machine with internet runs every test, in this process and in the
    children (which share the caches). Offline, what is missing is recorded: a failed
    encoding stays failed in this process (``tokens.load_encoding``), so every later
    counter takes the documented approximation without touching the network, and the
    tests that need the exact files skip with the reason (``exact_tokens``,
    ``local_model_or_skip``), or fail under ``MEMORA_REQUIRE_LOCAL_MODELS=1``."""
    import fcntl

    from memora.model.embeddings import LocalEmbedder, local_model_available, local_model_dir
    from memora.model.tokens import load_encoding

    for name in TOKEN_ENCODINGS:
        model = {"o200k_base": "gpt-4o", "cl100k_base": "gpt-3.5-turbo"}[name]
        try:
            load_encoding(model)
        except Exception as error:
            _MODEL_FILES_MISSING[name] = f"{type(error).__name__}: {' '.join(str(error).split())[:120]}"
    if not local_model_available():
        # One download per machine: pytest-xdist workers take turns on a lock beside the cache.
        folder = local_model_dir().parent.parent
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".memora-tests.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not local_model_available():
                    LocalEmbedder(threads=1).embed(["download"])
            except Exception as error:
                _MODEL_FILES_MISSING["local model"] = f"{type(error).__name__}"
    yield


def _missing_or_skip(message: str) -> None:
    if os.environ.get("MEMORA_REQUIRE_LOCAL_MODELS") == "1":
        pytest.fail(message + " and MEMORA_REQUIRE_LOCAL_MODELS=1")
    pytest.skip(message)


@pytest.fixture(autouse=True)
def exact_tokens(request, model_files):
    """``@pytest.mark.exact_tokens``: a test whose figures hold only for tiktoken's exact
    counts (not the approximation Memora falls back to without the encoding files)."""
    marker = request.node.get_closest_marker("exact_tokens")
    for name in (marker.args or TOKEN_ENCODINGS) if marker else ():
        if name in _MODEL_FILES_MISSING:
            _missing_or_skip(
                f"tiktoken's {name} could not be downloaded ({_MODEL_FILES_MISSING[name]}); offline, set "
                "TIKTOKEN_CACHE_DIR to a folder holding tiktoken's cached encoding files"
            )


@pytest.fixture(autouse=True)
def block_network(monkeypatch):
    violations: list[str] = []
    original_connect = socket.socket.connect
    original_getaddrinfo = socket.getaddrinfo

    def guarded_connect(sock, address):
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in _LOOPBACK:
            violations.append(f"connect {address!r}")
            raise ConnectionRefusedError(f"tests may not reach the network ({address!r})")
        return original_connect(sock, address)

    def guarded_getaddrinfo(host, *args, **kwargs):
        if host not in _LOOPBACK and host is not None:
            violations.append(f"resolve {host!r}")
            raise socket.gaierror(f"tests may not resolve {host!r}")
        return original_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    yield violations
    assert not violations, f"a test tried to reach the network: {violations}"


@pytest.fixture(autouse=True)
def no_retry_backoff(monkeypatch):
    """Retries happen at once: tests count the attempts the client makes, and its
    backoff (0.5 s, doubling) would only make them slow and timing-dependent."""
    from openai._base_client import SyncAPIClient

    monkeypatch.setattr(SyncAPIClient, "_calculate_retry_timeout", lambda *args, **kwargs: 0.0)


@pytest.fixture(autouse=True)
def server_detection_waits(monkeypatch):
    """The server's kind is always known before the first call: on a loaded machine the
    product's half-second wait could run out and a test would see the base URL's guess."""
    from memora.model import llm

    monkeypatch.setattr(llm, "DETECTION_WAIT", 60.0)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith(("MEMORA_", "OPENAI_", "CHROMA_")) and name not in _TEST_SETTINGS:
            monkeypatch.delenv(name, raising=False)
    home = tmp_path / "memora-home"
    monkeypatch.setenv("MEMORA_HOME", str(home))
    return home


@pytest.fixture
def disk_path():
    """A fresh folder in the system's temporary folder (on disk where /tmp is a disk),
    for the tests that SIGKILL writers in a loop and count the kills that landed inside
    a write: a write that ends in an fsync on disk lasts long enough to be hit often; on
    tmpfs it is over in microseconds and the count can stay at zero."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="memora-test-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def server():
    """The fake server; a test fails if anything it sent does not conform to the SDK's types
    (``FakeOpenAIServer.violations``), so every answer of the suite is checked."""
    with FakeOpenAIServer() as srv:
        yield srv
    assert not srv.violations, "the fake server sent payloads the SDK's types reject:\n" + "\n".join(
        srv.violations[:20]
    )


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def data_dir(isolated_env):
    return isolated_env


@pytest.fixture
def make_settings(data_dir, server):
    from memora.core.config import Settings

    def build(**overrides):
        no_notes = data_dir.parent / "no-knowledge"
        no_notes.mkdir(exist_ok=True)
        values = dict(
            data_dir=data_dir,
            base_url=server.base_url,
            api_key="sk-test-not-real",
            max_retries=0,
            timeout=10,
            knowledge_dir=no_notes,  # knowledge tests opt in to the shipped notes
        )
        values.update(overrides)
        return Settings(**values).validated()

    return build


@pytest.fixture(scope="session")
def tls_context():
    """The TLS context httpx would build for each client, built once per worker: it reads
    the whole CA bundle (about 20 ms), the tests make hundreds of clients, and none of
    them speaks TLS (the fake server is plain HTTP on loopback)."""
    import ssl

    import certifi

    return ssl.create_default_context(cafile=certifi.where())


@pytest.fixture
def make_app(request, make_settings, clock, tls_context, server):
    """Apps on the test's data folder. Their memories' vectors are in memory
    (``InMemoryVectors``, one index per data folder and learner, shared by every app
    of the test as one store on disk would be), unless the test is marked ``chroma``."""
    import openai
    from helpers.openai_route import openai_http_client

    from memora.app.assistant import Memora
    from memora.model.embeddings import HashEmbedder
    from memora.store.index import InMemoryVectors

    apps, clients = [], []
    indexes: dict = {}
    in_memory = request.node.get_closest_marker("chroma") is None

    def build(*, settings=None, notices=None, embedder=None, as_openai=False, **overrides):
        """``as_openai``: Memora talks to OpenAI itself (no base URL), played by the stand-in."""
        if as_openai:
            overrides["base_url"] = None
        settings = settings or make_settings(**overrides)
        sink = notices if notices is not None else []
        if as_openai:
            http = openai_http_client(server.base_url, verify=tls_context)
        else:
            http = openai.DefaultHttpxClient(verify=tls_context)  # the openai client's own defaults
        clients.append(http)
        vectors = (lambda user: indexes.setdefault((settings.db_dir, user), InMemoryVectors())) if in_memory else None
        app = Memora.from_settings(
            settings,
            clock=clock,
            http_client=http,
            embedder=embedder or HashEmbedder(),
            notify=sink.append,
            vectors=vectors,
        )
        # The program's warm-up loads the token counter before the first turn; so does this,
        # so that on a machine without tiktoken's files (``model_files``) the fallback's one
        # warning is given here, once, and not inside the lines a test checks.
        app.set_notify(lambda text: None)
        app.counter.encoding_name  # noqa: B018
        app.set_notify(sink.append)
        app.notices = sink
        apps.append(app)
        return app

    yield build
    for app in apps:
        try:
            app.close(timeout=5)
        except Exception:
            pass
    for http in clients:
        http.close()


class Transcript:
    """Scripted REPL input and captured output for ``chatbot.run``.

    A line may also be an exception (raised by the read) or a function of no
    arguments, called when the REPL comes to read it, before the prompt
    (something that happens between two lines, such as a file deleted
    mid-session); the next line is then read."""

    def __init__(self, lines, app=None):
        self.lines = list(lines)
        self.out: list[str] = []
        self.app = app

    def read(self, prompt: str) -> str:
        if self.app is not None:
            self.app.wait_for_extraction(10)  # deterministic: extraction settles between turns
        while self.lines and callable(self.lines[0]) and not isinstance(self.lines[0], type):
            self.lines.pop(0)()  # before the prompt: what it prints comes before it, as a notice would
        self.out.append(prompt)
        if not self.lines:
            raise EOFError
        line = self.lines.pop(0)
        if isinstance(line, BaseException) or (isinstance(line, type) and issubclass(line, BaseException)):
            raise line
        self.out.append(line + "\n")
        return line

    def write(self, text: str) -> None:
        self.out.append(text)

    @property
    def text(self) -> str:
        return "".join(self.out)


@pytest.fixture
def run_repl():
    import chatbot
    from memora.cli.terminal import PlainConsole

    def run(app, lines, *, settle=True):
        transcript = Transcript(lines, app if settle else None)
        console = PlainConsole(transcript.read, transcript.write)
        app.set_notify(console.notice)
        code = chatbot.run(app, console, raise_unexpected=True)
        transcript.code = code
        return transcript

    return run


def local_model_or_skip():
    from memora.model.embeddings import local_model_available, local_model_dir

    if local_model_available():
        return
    _missing_or_skip(
        f"the local ONNX all-MiniLM-L6-v2 model could not be downloaded; offline, put its files in {local_model_dir()}"
    )


@pytest.fixture(scope="session")
def local_embedder():
    """The local ONNX model (``.model``), remembering each text's vector for the session."""
    local_model_or_skip()
    from helpers.embedding import RememberingEmbedder

    from memora.model.embeddings import LocalEmbedder

    return RememberingEmbedder(LocalEmbedder(threads=1))  # one xdist worker per core: see LocalEmbedder


def child_env(**extra) -> dict:
    """Environment for a child ``python chatbot.py``: network-guarded, isolated."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CHROMA_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(NETGUARD), str(ROOT)])
    env.update({k: str(v) for k, v in extra.items()})
    return env


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real Chroma server on loopback (``chroma run``), for the whole test session."""
    import shutil
    import subprocess
    import time
    import urllib.request

    executable = shutil.which("chroma")
    if executable is None:
        pytest.fail("the `chroma` command (from the chromadb package) is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder = tmp_path_factory.mktemp("chroma-server")
    log = open(folder / "server.log", "wb")
    process = subprocess.Popen(
        [executable, "run", "--path", str(folder / "data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.time() > deadline:
                process.kill()
                pytest.fail(
                    f"chroma server did not start: {(folder / 'server.log').read_text(errors='replace')[-500:]}"
                )
            time.sleep(0.3)
    yield url
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


@pytest.fixture(params=["embedded", "server"])
def connection(request, tmp_path):
    """A Chroma connection of each kind: the embedded store and a real server."""
    from memora.store.chroma_backend import ChromaConnection

    if request.param == "server":
        return ChromaConnection(url=request.getfixturevalue("chroma_server"))
    return ChromaConnection(tmp_path / "memora_db")


def run_chatbot(lines, *args: str, umask: int | None = None, **env):
    """``python chatbot.py --plain [args]`` fed ``lines``, as a network-guarded child process."""
    import subprocess

    return subprocess.run(
        [sys.executable, str(ROOT / "chatbot.py"), "--plain", *args],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(**env),
        cwd=ROOT,
        preexec_fn=(lambda: os.umask(umask)) if umask is not None else None,
    )


def litellm_or_skip() -> str:
    """The LiteLLM proxy's command (``MEMORA_LITELLM``), or skip; under
    ``MEMORA_REQUIRE_LOCAL_MODELS=1`` (CI) a missing one fails instead."""
    path = os.environ.get("MEMORA_LITELLM", "")
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    message = (f"MEMORA_LITELLM={path!r} is not an executable" if path else "MEMORA_LITELLM is not set") + (
        " (the LiteLLM proxy's `litellm` command from its own virtualenv: python -m venv .venv-litellm && "
        ".venv-litellm/bin/pip install -r requirements-litellm.txt && "
        "export MEMORA_LITELLM=$PWD/.venv-litellm/bin/litellm; .ci/run does this)"
    )
    if os.environ.get("MEMORA_REQUIRE_LOCAL_MODELS") == "1":
        pytest.fail(message + " and MEMORA_REQUIRE_LOCAL_MODELS=1")
    pytest.skip(message)


@pytest.fixture(scope="session")
def litellm_proxy(tmp_path_factory):
    """A real LiteLLM proxy on loopback in front of a scripted chat-completions server
    (``helpers/chat_backend.py``), for the whole test session (``helpers/litellm_proxy.py``)."""
    from helpers import litellm_proxy as proxies
    from helpers.chat_backend import ChatBackend

    executable = litellm_or_skip()
    with ChatBackend() as backend:
        try:
            proxy = proxies.start(executable, backend, tmp_path_factory.mktemp("litellm"), NETGUARD)
        except RuntimeError as error:
            pytest.fail(str(error))
        try:
            yield proxy
        finally:
            proxy.stop()


@pytest.fixture
def litellm(litellm_proxy):
    """The session's LiteLLM proxy, its backend emptied of what earlier tests left."""
    litellm_proxy.backend.reset()
    yield litellm_proxy
    assert litellm_proxy.process.poll() is None, f"the LiteLLM proxy died:\n{litellm_proxy.log()}"
    assert not litellm_proxy.backend.problems, litellm_proxy.backend.problems
