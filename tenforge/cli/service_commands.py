"""Commands for the long-running parts: the Prefect service and the Optuna dashboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.errors import TenforgeError


def cmd_service(args: argparse.Namespace) -> int:
    from tenforge import service

    if args.action == "start":
        service.start(host=args.host, port=args.port, deploy=not args.no_deploy,
                      profiles=args.profiles)
    elif args.action == "join":
        if not args.api:
            raise TenforgeError("service join needs --api http://SERVER:4200/api (the server "
                                "machine's `tenforge service status` prints it)")
        service.join(args.api, profiles=args.profiles, deploy=not args.no_deploy)
    elif args.action == "deployments":
        from tenforge.deployments import machine_deployments, machine_profiles, write_prefect_file

        spec = machine_deployments(machine_profiles(args.profiles))
        if args.write:
            print(f"wrote {write_prefect_file(spec, Path(args.write))}")
        for d in spec["deployments"]:
            print(f"{d['name']:<40} pool {d['work_pool']['name']:<28} {d['entrypoint']}")
    elif args.action == "stop":
        service.stop()
    else:
        print(service.status())
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from tasks.training import study_storage
    from tenforge.service import check_port_free

    journal = study_storage(args.db)
    if not journal.exists():
        raise TenforgeError(f"no search studies next to {args.db} yet ({journal} is missing); "
                            "run `tenforge search` first")
    check_port_free(args.host, args.port)
    print(f"Optuna dashboard for {journal}: http://{args.host}:{args.port} (Ctrl-C stops it)",
          flush=True)
    from optuna_dashboard._cli import main as dashboard

    sys.argv = ["optuna-dashboard", "--host", args.host, "--port", str(args.port),
                "--storage-class", "JournalFileStorage", str(journal)]
    dashboard()
    return 0
