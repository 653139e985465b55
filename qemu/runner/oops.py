"""The kernel's oops, panic and warning lines, read from a console log: what
happened, where, called from where. Names need the kernel's symbols
(CONFIG_KALLSYMS); without them the frames are bare addresses and only the
headline is told. qemu/smoke (guest.py) tells with it why a guest came
down or warned."""
import re

HEAD = re.compile(r"\] ((?:BUG: |Oops: |general protection fault|Kernel panic - |Unable to handle kernel |"
                  r"WARNING: CPU: ).*?)\s*$")
AT = re.compile(r"\] (?:RIP: [0-9a-f]{4}:|pc : )([A-Za-z_][\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+)")
CALLS = re.compile(r"\] Call [Tt]race:")
FRAME = re.compile(r"\]\s+(?:\? )?([A-Za-z_][\w.]*\+0x[0-9a-f]+/0x[0-9a-f]+)")
# The oops's own machinery, before the frames that tell something.
MACHINERY = ("dump_stack", "show_", "panic", "die", "__die", "oops_", "exc_", "asm_exc_", "do_trap",
             "do_error_trap", "handle_bug", "report_bug", "fixup_exception", "page_fault_oops", "__warn",
             "warn_slowpath", "kernelmode_fixup", "do_kernel_fault", "__do_kernel_fault", "el1_", "el1h_")


def summary(text, frames=6):
    """The first oops, panic or warning in console TEXT as one line: its
    headline, 'at' the function it happened in, 'called from' up to FRAMES
    callers; None when there is none."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        head = HEAD.search(line)
        if not head:
            continue
        at, calls, in_calls = None, [], False
        for later in lines[i + 1:i + 120]:
            if at is None and AT.search(later):
                at = AT.search(later).group(1)
            elif CALLS.search(later):
                in_calls = True
            elif in_calls and FRAME.search(later):
                name = FRAME.search(later).group(1)
                if not name.startswith(MACHINERY) and len(calls) < frames:
                    calls.append(name)
            elif "---[ end" in later:
                break
        words = head.group(1)
        if at:
            words += f"; at {at}"
        if calls:
            words += f"; called from {', '.join(calls)}"
        return words
    return None
