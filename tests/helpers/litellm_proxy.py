"""A real LiteLLM proxy, started from its own virtualenv, in front of ``ChatBackend``.

LiteLLM cannot live in the tests' environment (litellm[proxy] pins rich<14, Memora
rich 15): ``.ci/run`` installs ``requirements-litellm.txt`` into ``.venv-litellm/``
and exports ``MEMORA_LITELLM``, the path of that virtualenv's ``litellm`` command.

The proxy serves ``memora-test`` from the backend through its Responses-to-chat
bridge. It is kept offline and on loopback:

* it gets a short allow-listed environment (nothing of the caller's keys, proxies,
  ``DATABASE_URL``...), plus the switches that make LiteLLM read its bundled copies
  instead of fetching them from GitHub at start-up (``OFFLINE``); with them, an
  strace of a start-up and a few requests showed no DNS lookup and no connection but
  to 127.0.0.1;
* ``tests/netguard`` is on its ``PYTHONPATH``, as for Memora's own child processes:
  a plain-Python connection anywhere but loopback kills it with exit code 97 and a
  NETWORK-GUARD line in its log (its uvloop event loop connects in C, past that
  guard: the offline switches and the backend's loopback address are what keep it
  here);
* it listens on 127.0.0.1 only, on a free port.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

MODEL = "memora-test"  # what Memora asks the proxy for
BACKEND_MODEL = "backend-model"  # what the proxy asks the backend for
MASTER_KEY = "sk-memora-litellm-test-master"  # the key Memora sends the proxy
BACKEND_KEY = "sk-memora-litellm-test-backend"  # the key the proxy sends the backend
MAX_INPUT_TOKENS, MAX_OUTPUT_TOKENS = 32768, 8192  # the backend model's limits, as the config states them
START_TIMEOUT = 120.0  # its start-up takes 8-12 s on the 2-core machine, 20 s under strace

# Each tells LiteLLM to use the copy bundled with the package instead of fetching the
# current one from GitHub (raw.githubusercontent.com) when it starts or first needs it:
# the model price and context-window map (litellm_core_utils/get_model_cost_map.py),
# Anthropic's beta headers (anthropic_beta_headers_manager.py), the blog posts the admin
# UI shows (litellm_core_utils/get_blog_posts.py), the guardrail policy templates
# (proxy/management_endpoints/policy_endpoints/endpoints.py) and the auto-router presets
# (proxy/public_endpoints/public_endpoints.py). Its telemetry (proxy/telemetry/) sends
# nothing until LITELLM_TELEMETRY_DESTINATION names a destination, and no LITELLM_*
# variable of the caller's reaches it.
OFFLINE = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
    "LITELLM_LOCAL_BLOG_POSTS": "True",
    "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
_PASSED_ON = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


def config_yaml(backend_url: str) -> str:
    """The proxy's configuration. JSON is YAML, so it is written as JSON."""
    import json

    config = {
        "model_list": [
            {
                "model_name": MODEL,
                "litellm_params": {
                    "model": f"openai/{BACKEND_MODEL}",
                    "api_base": backend_url,
                    "api_key": BACKEND_KEY,
                    # Without it an ``openai/`` model's Responses call is sent on as it
                    # is, to the backend's /v1/responses (litellm/responses/main.py,
                    # ``_bridges_to_chat_completions``): the bridge is what is tested.
                    "use_chat_completions_api": True,
                },
                # What a deployment's config says of a model LiteLLM's own map does not
                # know; the proxy's GET /model/info answers it (Memora fits it).
                "model_info": {"max_input_tokens": MAX_INPUT_TOKENS, "max_output_tokens": MAX_OUTPUT_TOKENS},
            }
        ],
        "router_settings": {"num_retries": 0},  # the backend sees each request once, as Memora sent it
        "general_settings": {"master_key": MASTER_KEY},
    }
    return json.dumps(config, indent=2)


def proxy_env(netguard: Path) -> dict[str, str]:
    env = {name: os.environ[name] for name in _PASSED_ON if name in os.environ}
    env.update(OFFLINE)
    env["PYTHONPATH"] = str(netguard)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class LiteLLMProxy:
    """A started proxy: ``base_url`` (ends in /v1), ``api_key``, ``model``."""

    process: subprocess.Popen
    port: int
    folder: Path
    backend: object
    api_key: str = MASTER_KEY
    model: str = MODEL

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def log(self, tail: int = 3000) -> str:
        return (self.folder / "proxy.log").read_text(errors="replace")[-tail:]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)


def start(executable: str, backend, folder: Path, netguard: Path) -> LiteLLMProxy:
    """Start the proxy and wait until it answers its readiness check (bounded by
    START_TIMEOUT; raises RuntimeError with the end of its log if it does not)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "litellm.yaml"
    config.write_text(config_yaml(backend.base_url))
    port = free_port()
    with open(folder / "proxy.log", "wb") as log:
        process = subprocess.Popen(
            [executable, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=proxy_env(netguard),
            cwd=folder,
        )
    proxy = LiteLLMProxy(process=process, port=port, folder=folder, backend=backend)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(f"{proxy.url}/health/readiness", timeout=2) as answer:
                if answer.status == 200:
                    return proxy
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            proxy.stop()
            why = f"exited with {process.returncode}" if process.returncode is not None else "did not get ready"
            raise RuntimeError(f"the LiteLLM proxy {why} within {START_TIMEOUT:g} s:\n{proxy.log()}")
        time.sleep(0.2)  # polling interval; readiness itself is what is waited for
