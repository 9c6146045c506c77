"""Start-up time: `python chatbot.py` to its first prompt, against importing chromadb and openai.

    python bench/startup.py [--runs 7]

Each run starts a fresh interpreter. Memora is started in a pseudo-terminal
(the interactive path: prompt_toolkit and rich) and, separately, with piped
input (``--plain``); the clock stops when the prompt appears. The reference
is ``python -c "import chromadb, openai"``. Runs alternate between the three
commands so machine noise hits all of them; the ratios of medians are the
result. Target: interactive ratio <= 1.3.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def clean_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMORA_", "CHROMA_"))}
    env.update(MEMORA_HOME=str(home), TERM="xterm-256color", COLUMNS="100", LINES="40")
    return env


def time_reference(env: dict) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import chromadb, openai"], check=True, env=env)
    return time.perf_counter() - started


def time_plain(env: dict) -> float:
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "chatbot.py"), "--plain"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    seen = b""
    while b"You: " not in seen:
        chunk = os.read(process.stdout.fileno(), 4096)
        if not chunk:
            raise RuntimeError("chatbot.py exited before its prompt")
        seen += chunk
    elapsed = time.perf_counter() - started
    process.stdin.write(b"exit\n")
    process.stdin.close()
    process.wait(60)
    return elapsed


def time_interactive(env: dict) -> float:
    leader, follower = pty.openpty()
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "chatbot.py")],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=ROOT,
        close_fds=True,
    )
    os.close(follower)
    seen = b""
    elapsed = None
    deadline = time.time() + 60
    while time.time() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            seen += chunk
            if b"You:" in seen:
                elapsed = time.perf_counter() - started
                break
            if b"\x1b[6n" in chunk:  # prompt_toolkit asks where the cursor is
                os.write(leader, b"\x1b[1;1R")
    if elapsed is None:
        process.kill()
        raise RuntimeError("no prompt within 60 s")
    os.write(leader, b"exit\r")
    try:
        process.wait(60)
    finally:
        os.close(leader)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = clean_env(Path(tmp))
        time_plain(env)  # the first start creates the data folder and store; not timed
        times: dict[str, list[float]] = {"reference": [], "interactive": [], "plain": []}
        for _ in range(args.runs):
            times["reference"].append(time_reference(env))
            times["interactive"].append(time_interactive(env))
            times["plain"].append(time_plain(env))
    reference = statistics.median(times["reference"])
    print(f"start-up to first prompt, median of {args.runs} runs each, interleaved")
    print(f"  python -c 'import chromadb, openai'   {reference:.2f} s")
    for mode in ("interactive", "plain"):
        median = statistics.median(times[mode])
        print(f"  python chatbot.py ({mode:<11})       {median:.2f} s   ratio {median / reference:.2f}")
    ratio = statistics.median(times["interactive"]) / reference
    print(f"target (interactive ratio <= 1.3): {'met' if ratio <= 1.3 else 'NOT met'} (ratio {ratio:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
