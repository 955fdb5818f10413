"""Calling a ROS 2 service from a node whose executor spins in another thread, with a
resend for the response a new client can lose (the demo harness and the tests)."""
from __future__ import annotations

import time


def call_service(node, srv_type, name: str, request, timeout=10.0, resend_after=3.0):
    """The response of service ``name`` to ``request``, through a client on ``node`` (whose
    executor spins elsewhere); TimeoutError after ``timeout`` s.

    A new client can lose its first response: wait_for_service sees the server, but the
    server may not have discovered this client's response reader yet, and Fast DDS gives
    it 100 ms ("failed to send response (timeout)" in the server's log; seen in CI on a
    loaded machine).  So the request is sent again, on the same client, every
    ``resend_after`` s without a response, and the first response wins: only for
    services that a repeated request leaves as one request would (every one called
    here and in the tests)."""
    cli = node.create_client(srv_type, name)
    try:
        if not cli.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {name} not available")
        t_end = time.monotonic() + timeout
        futs = []
        while True:
            futs.append(cli.call_async(request))
            t_resend = time.monotonic() + resend_after
            while time.monotonic() < min(t_resend, t_end):
                done = next((f for f in futs if f.done()), None)
                if done is not None:
                    return done.result()
                time.sleep(0.002)
            if time.monotonic() >= t_end:
                raise TimeoutError(f"no response from {name} ({len(futs)} requests)")
    finally:
        node.destroy_client(cli)
