"""tenforge as a service: a Prefect server (API + UI), and for this machine's hardware profiles
(tenforge.deployments) their work pools, deployments and a worker each, plus the `train` pool's
hardware-independent deployments. `tenforge service start` brings it all up, `join` adds a
second machine's profiles to a server that runs elsewhere, `stop` takes down what this machine
started.

Everything lives under one folder (default data/service/, or $TENFORGE_SERVICE_DIR): the
Prefect home (its SQLite database), a log per process, and state.json with the processes'
ids, so `stop` and `status` work from any shell. Each process runs in its own session, so a
stop ends a worker together with the flow runs it started.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from core.errors import TenforgeError
from core.procs import pid_alive

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PORT = 4200


def service_dir() -> Path:
    return Path(os.environ.get("TENFORGE_SERVICE_DIR", PROJECT_ROOT / "data" / "service"))


@dataclass
class ServiceState:
    url: str  # the API; the UI is the same address without /api
    home: str  # PREFECT_HOME of the server
    server_pid: int | None  # None: this machine joined a server that runs elsewhere
    workers: dict[str, int] = field(default_factory=dict)  # pool -> pid
    started_at: float = field(default_factory=time.time)

    @property
    def ui(self) -> str:
        return self.url.removesuffix("/api")


def _state_file() -> Path:
    return service_dir() / "state.json"


def read_state() -> ServiceState | None:
    path = _state_file()
    if not path.exists():
        return None
    try:
        return ServiceState(**json.loads(path.read_text()))
    except (json.JSONDecodeError, TypeError) as exc:
        raise TenforgeError(f"{path} is damaged ({exc}); stop the processes by hand and delete "
                            "it") from None


def service_env(url: str, home: Path) -> dict[str, str]:
    """The environment of every service process (and of a client that talks to it)."""
    return {**os.environ, "PREFECT_API_URL": url, "PREFECT_HOME": str(home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "TENFORGE_ROOT": str(PROJECT_ROOT),
            # the server's SQLite is written by every worker's poll: on a busy 2-core machine
            # its default 10 s wait for the lock ran out ("database is locked", HTTP 503)
            "PREFECT_SERVER_DATABASE_TIMEOUT": os.environ.get("PREFECT_SERVER_DATABASE_TIMEOUT",
                                                              "60"),
            # a worker asks for new runs every 5 s (Prefect's default is 10 s)
            "PREFECT_WORKER_QUERY_SECONDS": os.environ.get("PREFECT_WORKER_QUERY_SECONDS", "5")}


def check_port_free(host: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
            return
        except OSError:
            pass
    holder = ""
    try:
        import psutil

        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.status == "LISTEN" and conn.pid:
                holder = f" by pid {conn.pid} ({psutil.Process(conn.pid).name()})"
                break
    except Exception:  # noqa: BLE001 - naming the holder is a courtesy, not a requirement
        pass
    raise TenforgeError(f"port {port} on {host} is taken{holder}; stop that process or pass "
                        f"--port with a free one")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def spawn_server(host: str, port: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    """`prefect server start` in its own session, logging to `log` (wait_healthy next)."""
    return _spawn(_prefect("server", "start", "--host", host, "--port", str(port)), log, env)


def wait_healthy(url: str, server: subprocess.Popen, log: Path, timeout_s: float) -> None:
    """The server this process started answers its health check (or its exit is reported)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            tail = log.read_text()[-1500:] if log.exists() else ""
            raise TenforgeError(f"the Prefect server exited with status {server.returncode} "
                                f"while starting; see {log}: ...{tail[-300:]!r}")
        if _healthy(url):
            return
        time.sleep(0.5)
    raise TenforgeError(f"the Prefect server did not answer at {url} within {timeout_s:.0f} s; "
                        f"see {log}")


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen(args, cwd=PROJECT_ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def _prefect(*args: str) -> list[str]:
    return [sys.executable, "-m", "prefect", *args]


def _wait_reachable(url: str, timeout_s: float) -> None:
    """A server this process did not start (joining a fleet): it must answer its health check."""
    deadline = time.monotonic() + timeout_s
    while not _healthy(url):
        if time.monotonic() > deadline:
            raise TenforgeError(f"no Prefect server answers at {url}; start one with `tenforge "
                                "service start --host 0.0.0.0` on the server machine, or fix "
                                "--api (it ends in /api)")
        time.sleep(0.5)


def _serve(state: ServiceState, env: dict[str, str], profiles: list, shared: bool,
           deploy: bool, report: Callable[[str], None]) -> None:
    """Pools, deployments and a worker per pool for `profiles` (and the hardware-independent
    deployments on the train pool when `shared`): every deployment has a worker, so every
    deployment is Ready."""
    from tenforge.deployments import machine_deployments, pools_of, write_prefect_file

    folder = service_dir()
    spec = machine_deployments(profiles, shared=shared)
    pools = pools_of(spec)
    # all at once: each `prefect` process spends ~3 s importing, one after another 14 s
    creating = {pool: subprocess.Popen(_prefect("work-pool", "create", pool, "--type", "process"),
                                       cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
                for pool in pools}
    for pool, proc in creating.items():
        said, _ = proc.communicate(timeout=120)
        if proc.returncode != 0 and "already exists" not in said:
            raise TenforgeError(f"cannot create work pool {pool}: {said.strip()[-300:]}")
    report(f"work pools: {', '.join(pools)}")
    if deploy:
        prefect_file = write_prefect_file(spec, folder / f"prefect.{socket.gethostname()}.yaml")
        deployed = subprocess.run(_prefect("--no-prompt", "deploy", "--all", "--prefect-file",
                                           str(prefect_file)),
                                  cwd=PROJECT_ROOT, env=env, capture_output=True,
                                  text=True, timeout=900)
        (folder / "deploy.log").write_text(deployed.stdout + deployed.stderr)
        if deployed.returncode != 0:
            raise TenforgeError(f"`prefect deploy` of {prefect_file} failed; see "
                                f"{folder / 'deploy.log'}")
        report(f"deployed {len(spec['deployments'])} deployments for "
               f"{', '.join(p.name for p in profiles)} ({prefect_file})")
    for pool in pools:
        worker = _spawn(_prefect("worker", "start", "--pool", pool, "--type", "process"),
                        folder / f"worker-{pool}.log", env)
        state.workers[pool] = worker.pid
    _state_file().write_text(json.dumps(asdict(state), indent=1))
    report(f"workers: {', '.join(f'{p} (pid {pid})' for p, pid in state.workers.items())}")


def _refuse_if_running() -> None:
    running = read_state()
    if running is None:
        return
    alive = [pid for pid in [running.server_pid, *running.workers.values()]
             if pid is not None and pid_alive(pid)]
    if alive:
        what = (f"server pid {running.server_pid}, UI {running.ui}" if running.server_pid
                else f"joined {running.url}")
        raise TenforgeError(f"the tenforge service is already running ({what}); "
                            "`tenforge service stop` first")


def start(host: str = "127.0.0.1", port: int = DEFAULT_PORT, deploy: bool = True,
          profiles: list[str] | None = None, report: Callable[[str], None] = print,
          startup_timeout_s: float = 180) -> ServiceState:
    """Start the server, then pools, deployments and workers for this machine's profiles and
    the train pool."""
    from tenforge.deployments import machine_profiles

    _refuse_if_running()
    check_port_free(host, port)
    served = machine_profiles(profiles, report=report)  # a bad --profiles fails before any work
    folder = service_dir()
    home = folder / "prefect"
    home.mkdir(parents=True, exist_ok=True)
    url = f"http://{host}:{port}/api"
    env = service_env(url, home)

    began = time.monotonic()
    server = spawn_server(host, port, env, folder / "server.log")
    state = ServiceState(url=url, home=str(home), server_pid=server.pid)
    _state_file().write_text(json.dumps(asdict(state), indent=1))
    try:
        wait_healthy(url, server, folder / "server.log", startup_timeout_s)
        report(f"Prefect server up at {state.ui} in {time.monotonic() - began:.0f} s "
               f"(log {folder / 'server.log'})")
        _serve(state, env, served, shared=True, deploy=deploy, report=report)
    except BaseException:
        stop(report=lambda _: None)
        raise
    report(f"tenforge service ready in {time.monotonic() - began:.0f} s: UI {state.ui}; "
           f"stop it with `tenforge service stop`")
    return state


def join(api_url: str, profiles: list[str] | None = None, deploy: bool = True,
         report: Callable[[str], None] = print, timeout_s: float = 60) -> ServiceState:
    """This machine joins a fleet whose server runs elsewhere: it creates the pools of its own
    profiles, deploys their deployments and starts a worker for each. Its flows write its own
    store ($TENFORGE_DB); `tenforge ingest` on the server's side collects their shards."""
    from tenforge.deployments import machine_profiles

    _refuse_if_running()
    url = api_url.rstrip("/")
    served = machine_profiles(profiles, report=report)
    if not served:
        raise TenforgeError("this machine has no hardware profile it can run; declare one in "
                            "hardware.toml (`tenforge hardware`)")
    _wait_reachable(url, timeout_s)
    folder = service_dir()
    home = folder / "prefect"
    home.mkdir(parents=True, exist_ok=True)
    env = service_env(url, home)
    state = ServiceState(url=url, home=str(home), server_pid=None)
    _state_file().write_text(json.dumps(asdict(state), indent=1))
    try:
        _serve(state, env, served, shared=False, deploy=deploy, report=report)
    except BaseException:
        stop(report=lambda _: None)
        raise
    report(f"joined {url} with {', '.join(p.name for p in served)}; leave with "
           "`tenforge service stop`")
    return state


def _end(pids: list[int], grace_s: float = 15) -> None:
    """SIGTERM each process's session (each leads one), all at once, then SIGKILL what is left
    after `grace_s`: stopping N workers takes one grace period, not N of them."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        living = []
        for pid in pids:
            try:
                os.killpg(pid, sig)
                living.append(pid)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while living and time.monotonic() < deadline:
            for pid in living:
                try:
                    os.waitpid(pid, os.WNOHANG)  # reap it if it is our child
                except ChildProcessError:
                    pass
            living = [pid for pid in living if pid_alive(pid)]
            time.sleep(0.2)
        if not living:
            return
        pids = living


def stop(report: Callable[[str], None] = print) -> bool:
    """Stop the workers, then the server; False if nothing was running."""
    state = read_state()
    if state is None:
        report("the tenforge service is not running")
        return False
    _end(list(state.workers.values()))
    if state.server_pid is not None:
        _end([state.server_pid])
    _state_file().unlink(missing_ok=True)
    what = "server and " if state.server_pid is not None else ""
    report(f"tenforge service stopped ({what}{len(state.workers)} worker(s))")
    return True


def status() -> str:
    state = read_state()
    if state is None:
        return "the tenforge service is not running (`tenforge service start`)"
    lines = [f"UI {state.ui}  API {state.url}  home {state.home}",
             f"server pid {state.server_pid}: {'up' if pid_alive(state.server_pid) else 'GONE'}"
             if state.server_pid is not None else "joined a server that runs elsewhere"]
    lines += [f"worker {pool} pid {pid}: {'up' if pid_alive(pid) else 'GONE'}"
              for pool, pid in state.workers.items()]
    return "\n".join(lines)
