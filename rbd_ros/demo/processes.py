"""The two processes of a :class:`~rbd_ros.demo.closed_loop.ClosedLoop`: the dynamics node
and the sim driver (``python -m``), their parameters, wiring and logs."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile

import yaml

NODE_NAME = "rbd_dynamics"


class LoopProcesses:
    """Starts and stops the node and the driver of the loop under namespace ``self.ns``
    (the attributes ClosedLoop sets: ns, fqn, robot, q0, node_params, sim_params,
    lock_step, node_status, _logs, _tmp, _wait)."""

    def _env(self):
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        env["RCUTILS_COLORIZED_OUTPUT"] = "0"
        return env

    def _popen(self, what, args):
        log = tempfile.NamedTemporaryFile("w+", prefix=f"rbd_{what}_{self.ns}_", suffix=".log",
                                          delete=False)
        self._tmp.append(log.name)
        self._logs[what] = log.name
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=self._env())

    def log(self, what: str) -> str:
        """The output of 'node' or 'sim' so far."""
        try:
            with open(self._logs[what]) as f:
                return f.read()
        except (KeyError, OSError):
            return ""

    def start_node(self):
        params = {"urdf_file": self.robot, "diagnostics_period": 0.2, **self.node_params}
        pf = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        yaml.safe_dump({f"/**/{NODE_NAME}": {"ros__parameters": params}}, pf)
        pf.close()
        self._tmp.append(pf.name)
        self.node_proc = self._popen("node", [sys.executable, "-m", "rbd_ros.node", "--ros-args",
                                              "-r", f"__ns:=/{self.ns}", "--params-file", pf.name])

    def wait_node_ready(self, timeout=60.0) -> bool:
        """Until the node's /diagnostics shows its model (it then waits for joint states)."""
        return self._wait(lambda: self.node_status is not None
                          and self.node_status.get("model") not in (None, ""), timeout,
                          self.node_proc)

    def start_sim(self):
        p = {"urdf_file": self.robot, "initial_positions": list(self.q0),
             "command_timeout": 0.05, **self.sim_params, "lock_step": self.lock_step}
        args = [sys.executable, "-m", "rbd_ros.sim", "--ros-args", "-r", f"__ns:=/{self.ns}",
                # the wiring: the driver's effort input <- the node's ~/effort_command (real
                # time), or its stamped twin ~/effort_command_state through this process
                # (lock-step, _on_lock_step_command)
                "-r", f"effort_command:={self.fqn}/effort_command",
                "-r", f"effort_command_state:=/{self.ns}/lock_step_command"]
        for k, v in p.items():
            args += ["-p", f"{k}:={v}"]
        self.sim_proc = self._popen("sim", args)

    def stop_node(self, timeout=10.0) -> int | None:
        return self._stop_proc(self.node_proc, timeout)

    @staticmethod
    def _stop_proc(proc, timeout):
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode
