"""`netemu algorithms`: every registered algorithm, task and data kind with its parameters and defaults."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    algs = sub.add_parser(
        "algorithms",
        help="list the algorithms, tasks and data kinds (built-in and plug-ins) with their parameters and defaults",
        description="List every registered algorithm (netemu's own and installed plug-ins, entry point group "
        "netemu.algorithms), learning task (netemu.tasks: model, local training, metrics) and data kind (netemu.data): "
        "where it comes from, what it learns or needs, its parameters and defaults.",
    )
    algs.add_argument("names", nargs="*", help="only these algorithms (default: all)")
    algs.set_defaults(func=cmd_algorithms)


def _parameters(params: type, defaults: dict) -> str:
    import dataclasses

    shown = []
    for f in dataclasses.fields(params):
        default = defaults.get(f.name, f.default)
        shown.append(f.name if default is dataclasses.MISSING else f"{f.name} = {default!r}")
    return ", ".join(shown)


def cmd_algorithms(args) -> int:
    from netemu.config import deadlines
    from netemu.diagnostics import event
    from netemu.plugins import algorithm, registry

    reg = registry()
    for spec in [algorithm(name) for name in args.names or reg.algorithms]:  # an unknown name: PluginError
        doc = (spec.doc.strip().splitlines() or [""])[0]
        print(f"{spec.name}  ({reg.origin.get(('algorithm', spec.name), 'module:attribute')})")
        if doc:
            print(f"    {doc}")
        tasks = ' | '.join(spec.tasks) or 'any'
        kinds = f" on data.kind: {' | '.join(spec.datasets)}" if spec.datasets else ""
        learns = (f"task: {tasks}{kinds} ([task] table; its data kind's default without one)" if spec.task
                  else f"data.kind: {' | '.join(spec.datasets) or 'any'} (its own model and training; no [task])")
        print(f"    {learns}; roles: {', '.join(spec.roles) or 'any'}")
        for req in spec.requires:
            print(f"    needs: {req.needs}")
        print(f"    parameters: {_parameters(spec.params, spec.defaults)}")
        if deadlines(spec.params):
            print(f"    deadlines: {', '.join(deadlines(spec.params))} (the automatic horizon allows a round twice the longest)")
    if not args.names:
        print("\ntasks ([task] name = ...):")
        for name, task in reg.tasks.items():
            print(f"{name}  ({reg.origin[('task', name)]})\n    {task.doc}\n    data.kind: {' | '.join(task.datasets) or 'any'}\n"
                  f"    parameters: {_parameters(task.params, {})}")
        print("\ndata kinds:")
        for name, data in reg.data.items():
            print(f"{name}  ({reg.origin[('data kind', name)]})\n    {data.doc}\n    parameters: {_parameters(data.params, {})}")
    for line in reg.broken:
        event("plugin.not_loaded", f"netemu: plug-in not loaded: {line}", level="warning", detail=line)
    return 2 if reg.broken else 0

