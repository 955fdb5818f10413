"""The closed-loop demo and its harness: the dynamics node and the simulated arm (``rbd_ros.sim``)
running as two processes (``closed_loop.ClosedLoop``); above both layers, like the tests."""
