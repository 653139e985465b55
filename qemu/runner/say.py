"""The runner's messages: one line on stderr, prefixed with the command
that says it ("qemu/run: ...", "qemu/smoke: ..."), and exit status 2 for a
refusal. Every module of the package says things through here."""
import sys

RUN = "qemu/run"
SMOKE = "qemu/smoke"


def say(msg, who=RUN):
    print(f"{who}: {msg}", file=sys.stderr)


def die(msg, who=RUN):
    say(msg, who)
    sys.exit(2)
