"""Run kafka-ref with one mutant applied: `python -m kafka_ref.conformance.mutant_broker
--mutant NAME [kafka-ref arguments...]`, e.g. `--mutant fetch-skips-batch broker --listen
127.0.0.1:9093 --data-dir /tmp/m`.

The mutant patches kafka-ref's classes in this process (mutants.py); then the ordinary
`kafka-ref` command line runs, so the broker is the real one except for the one bug.
`--list` prints the mutants and the rules that must catch each.
"""

from __future__ import annotations

import argparse
import sys

from kafka_ref.conformance.mutants import MUTANTS, apply


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mutant_broker", description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", choices=sorted(MUTANTS), help="the bug to switch on")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args, rest = parser.parse_known_args(argv)
    if args.list or not args.mutant:
        for m in MUTANTS.values():
            print(f"{m.name:32} {','.join(m.rules):22} {m.bug}")
        return 0 if args.list else 2
    apply(args.mutant)
    from kafka_ref.cli import main as kafka_ref_main

    return kafka_ref_main(rest)


if __name__ == "__main__":
    sys.exit(main())
