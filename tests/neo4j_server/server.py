"""Start and stop a real Neo4j 5.26 Community server for the tests.

The server is the Java launcher in this folder (``Neo4jTestServer``), built by Maven from
Maven Central artifacts (``org.neo4j:neo4j`` and ``org.neo4j:neo4j-bolt``) on first use
(``mvn package dependency:build-classpath``; Maven caches the jars in ``~/.m2``) and run
with ``java`` on a free loopback port, a temporary data directory and a random password.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE / "target"


class Neo4jServerError(RuntimeError):
    """The test server could not be built or started."""


def build() -> str:
    """Build the launcher if needed; return the Java class path."""
    cp_file = TARGET / "classpath.txt"
    sources = [HERE / "pom.xml", *HERE.glob("src/**/*.java")]
    fresh = cp_file.exists() and all(cp_file.stat().st_mtime >= s.stat().st_mtime for s in sources)
    if not fresh:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise Neo4jServerError("Maven (mvn) is not on PATH; it builds the Neo4j test server")
        cmd = [
            mvn,
            "-B",
            "-q",
            "package",
            "dependency:build-classpath",
            f"-Dmdep.outputFile={cp_file}",
        ]
        done = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise Neo4jServerError(f"mvn failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return f"{TARGET / 'classes'}{os.pathsep}{cp_file.read_text().strip()}"


def free_port() -> int:
    """A free loopback port (asked of a child process: the test run blocks sockets)."""
    code = "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"
    return int(subprocess.check_output([sys.executable, "-c", code], text=True).strip())


class Neo4jTestServer:
    """One server process; :meth:`stop`, :meth:`kill` and :meth:`start` again on the same data."""

    def __init__(
        self,
        *,
        startup_timeout: float = 180.0,
        heap: str = "1g",
        page_cache_mb: int = 64,
        settings: dict[str, str] | None = None,
    ) -> None:
        self.classpath = build()
        self.heap, self.page_cache_mb = heap, int(page_cache_mb)
        self.settings = dict(settings or {})  # further settings, as neo4j.conf would give them
        self.home = Path(tempfile.mkdtemp(prefix="semrag-neo4j-"))
        self.port = free_port()
        self.user = "neo4j"
        self.password = secrets.token_hex(8)
        self.startup_timeout = startup_timeout
        self.process: subprocess.Popen[str] | None = None
        self._log: list[str] = []

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    def start(self) -> None:
        if self.settings:  # the launcher reads them as a server reads its neo4j.conf
            conf = "".join(f"{name}={value}\n" for name, value in self.settings.items())
            (self.home / "neo4j.conf").write_text(conf, encoding="utf-8")
        java = shutil.which("java")
        if java is None:
            raise Neo4jServerError("java is not on PATH (JDK 17 runs the Neo4j test server)")
        self.process = subprocess.Popen(
            [
                java,
                f"-Xmx{self.heap}",
                "-cp",
                self.classpath,
                "semrag.testing.Neo4jTestServer",
                str(self.home),
                str(self.port),
                self.password,
                str(self.page_cache_mb),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        ready = threading.Event()

        def pump() -> None:
            assert self.process is not None and self.process.stdout is not None
            for line in self.process.stdout:
                self._log.append(line)
                if line.strip() == "READY":
                    ready.set()

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()
        deadline = time.monotonic() + self.startup_timeout
        while not ready.wait(0.2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise Neo4jServerError("Neo4j did not start:\n" + "".join(self._log[-60:]))

    def stop(self) -> None:
        """Shut down cleanly."""
        if self.process is None:
            return
        try:
            assert self.process.stdin is not None
            self.process.stdin.write("stop\n")
            self.process.stdin.flush()
            self.process.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(30)
        self._release()

    def kill(self) -> None:
        """Kill the server at once (as a crash or a dropped connection would)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(30)
            self._release()

    def _release(self) -> None:
        assert self.process is not None
        self._pump.join(10)  # the output pump ends at EOF
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
        self.process = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)
