"""Loaded in child processes started by the tests (via PYTHONPATH): any network
connection that is not loopback or a Unix socket aborts the child loudly."""

import os
import socket
import sys

_ALLOWED = {"127.0.0.1", "::1", "localhost", "0.0.0.0"}
_original_connect = socket.socket.connect


def _guarded_connect(self, address):
    host = address[0] if isinstance(address, tuple) else None
    if host is not None and host not in _ALLOWED:
        sys.stderr.write(f"NETWORK-GUARD: blocked connection to {address!r}\n")
        sys.stderr.flush()
        os._exit(97)
    return _original_connect(self, address)


socket.socket.connect = _guarded_connect
