"""The ``ppdp`` command line: publish releases, answer count queries, show guarantees, run the demo.

Every expected failure (a ppdp error, a bad value, a missing or existing file) ends in one red
``error: ...`` line on standard error, without a traceback, and the exit code of its kind: 2
the command line, 3 the data, 4 a release (`_app.exit_code`; docs/reference/exit-codes.md).

One module per command; `_app` holds the typer application and the error handling, `_options`
the options the commands share and the reading of the data they name, `_output` how they
print. The commands import what they need when they run, so that ``ppdp --help`` and argument
errors answer at once, without numpy, pyarrow or the mechanisms.
"""

from ppdp.cli import (
    attack,
    certify,
    compare,
    count,
    demo,
    evaluate,
    guarantee,
    keys,
    mechanisms,
    publish,
    risk,
    serve,
    ui,
    verify,
)
from ppdp.cli._app import app, filled_help, main

__all__ = ["app", "main"]

# The commands whose help lists a registry, filled in when that help is shown.
_FILLED = {attack.attack: attack.help_lists, evaluate.evaluate: evaluate.help_lists}

# The commands, in the order `ppdp --help` lists them.
for _command in (publish.publish, count.count, guarantee.guarantee, risk.risk, attack.attack,
                 certify.certify,
                 evaluate.evaluate, compare.compare, mechanisms.mechanisms, serve.serve,
                 ui.ui, demo.demo):
    _fill = _FILLED.get(_command)
    app.command(cls=filled_help(_fill) if _fill is not None else None)(_command)
app.command()(verify.verify)
app.add_typer(keys.keys_app)
