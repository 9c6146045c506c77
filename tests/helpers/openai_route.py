"""Play OpenAI itself: requests for ``https://api.openai.com`` reach the local stand-in.

Memora treats OpenAI differently from every other server (the background goes as a
``developer`` message, reasoning efforts are known), and it tells OpenAI by its URL.
A test that runs Memora with no ``OPENAI_BASE_URL`` gets an HTTP client whose
transport sends each request for OpenAI's host to the stand-in on loopback instead,
so the path under test is exactly the one a learner with an OpenAI key takes, and
nothing leaves the machine (the network guard still fails any other connection).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx2
import openai

OPENAI_HOST = "api.openai.com"


class _ToStandIn(httpx2.HTTPTransport):
    def __init__(self, base_url: str, **kwargs):
        super().__init__(**kwargs)
        parts = urlsplit(base_url)
        self._host, self._port = parts.hostname, parts.port

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.host == OPENAI_HOST:
            request.url = request.url.copy_with(scheme="http", host=self._host, port=self._port)
        return super().handle_request(request)


def openai_http_client(stand_in_base_url: str, *, verify=True) -> openai.DefaultHttpxClient:
    """An ``http_client`` for ``openai.OpenAI`` whose OpenAI requests reach the stand-in."""
    return openai.DefaultHttpxClient(transport=_ToStandIn(stand_in_base_url, verify=verify))
