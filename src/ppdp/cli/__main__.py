"""``python -m ppdp.cli``: the ``ppdp`` command."""

from ppdp.cli import main

main()
