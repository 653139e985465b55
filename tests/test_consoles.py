"""Any console, any command line: hostile and quoted kernel parameters are
data, every console= the kernel accepts gets a shell, questions go to every
console, the banner tells what was done, plain poweroff leaves the disks
clean, and everything fits 80 columns."""
import re
import subprocess

import pexpect
import pytest

from disks import blank, fsck_clean, make_fs, sha256_file
from harness import SocketConsole, boot_with_disks, host, scaled

PASS = "xr-console-pass"


def direct(guest, name, append, disks=(), extra=(), mem=512):
    args = ["--direct", "--mem", str(mem), "--append", append] + list(extra)
    for d in disks:
        args += ["--disk", f"{d},if=virtio-blk,rw"]
    return guest(name, args)


def test_hostile_and_quoted_parameters(guest, tmp_path):
    mine = str(tmp_path / "mine.img")
    make_fs(mine, "32M", label="my root")
    other = str(tmp_path / "other.img")
    make_fs(other, "32M", label="other")
    long_value = "x" * 4096
    append = ("console=ttyS0,115200n8 rescue.fsck=check rescue.devices=\"LABEL=my root\" "
              "rescue.a=it's rescue.b=a';touch${IFS}/tmp/m1;' rescue.settle=$(touch${IFS}/tmp/m2) "
              "rescue.after=`touch${IFS}/tmp/m3` rescue.undo=a\\nb "
              f"rescue.timeout={long_value}")
    g = direct(guest, "cmdline-hostile", append, [mine, other])
    g.wait_shell()
    log = g.serial_log()
    assert "rescue-fsck check: summary" in log, log[-3000:]
    summary = log.split("rescue-fsck check: summary")[1]
    assert "/dev/vda         0      clean" in summary, summary
    assert not re.search(r"/dev/vdb +(\d+|-) ", summary), "a volume rescue.devices left out was checked"
    for warning in ("rescue.a is not a parameter extrescue knows", "rescue.b is not a parameter",
                    "rescue.settle=$(touch${IFS}/tmp/m2) is not a number in range",
                    "rescue.after=`touch${IFS}/tmp/m3` is not one of the accepted values"):
        assert warning in log, (warning, log[-3000:])
    assert g.check("ls /tmp").count("m") == 0 and g.check("cat /proc/1/comm").strip() == "init"
    assert g.check("cat /run/extrescue/param/undo") == "a\\nb"
    assert g.poweroff() == 0
    g.assert_no_fatal()


def console_boot(guest, tmp_path, name, append, shell_on, **kw):
    """Boots with APPEND and waits for the banner and a shell on SHELL_ON:
    'ttyS0' (QEMU's stdio), 'ttyS1' (a second serial port) or 'hvc0'."""
    sock = str(tmp_path / f"{name}.sock")
    extra = {"ttyS1": ["--serial2", sock], "hvc0": ["--virtcon", sock]}.get(shell_on, [])
    g = direct(guest, name, append, extra=extra, **kw)
    con = g if shell_on == "ttyS0" else SocketConsole(g, sock, shell_on)
    con.expect([r"Disks found:"], scaled(120), f"the banner on {shell_on}")
    con.wait_shell()
    return g, con


@pytest.mark.parametrize("name,append,shell_on,note", [
    ("con-ttyS1", "console=ttyS1,115200n8", "ttyS1", None),
    ("con-uart", "console=uart8250,io,0x3f8,115200", "ttyS0", None),
    ("con-hvc0", "console=hvc0", "hvc0", None),
    ("con-missing", "console=ttyS3,115200 console=ttyS0,115200n8", "ttyS0",
     "console=ttyS3,115200: no such serial port; no shell there"),
    ("con-none", "", "ttyS0", "no usable console= given; shells on tty1 ttyS0"),
])
def test_every_console_gets_a_shell(guest, tmp_path, name, append, shell_on, note):
    g, con = console_boot(guest, tmp_path, name, append, shell_on)
    tty = con.check("tty").strip()
    assert tty == f"/dev/{shell_on}", tty
    if note:
        assert note in con.check("cat /run/extrescue/cmdline.warnings; /lib/extrescue/console/list -v 2>&1"), note
    con.child.sendline("poweroff -f")
    g.expect([pexpect.EOF], scaled(60), "QEMU to exit after poweroff")
    g.assert_no_fatal()


def luks_disk(guest, tmp_path):
    """A LUKS2 volume with ext4 inside, made in a preparation boot."""
    img = blank(str(tmp_path / "luks.img"), "40M")
    g = boot_with_disks(guest, "con-luks-prepare", [img], mem=768)
    g.check(f"printf %s '{PASS}' > /run/k && cryptsetup luksFormat --batch-mode --type luks2 --pbkdf pbkdf2 "
            "--pbkdf-force-iterations 1000 --key-file=/run/k /dev/vda && cryptsetup open --key-file=/run/k "
            "/dev/vda xrc && mkfs.ext4 -q -L xrconluks /dev/mapper/xrc && cryptsetup close xrc", timeout=180)
    assert g.poweroff() == 0
    return img


def test_passphrase_on_every_console(guest, tmp_path):
    img = luks_disk(guest, tmp_path)
    before = sha256_file(img)
    sock = str(tmp_path / "com2.sock")
    g = direct(guest, "con-luks-ask", "console=ttyS0,115200n8 console=ttyS1,115200n8 rescue.assemble=ro "
               "rescue.timeout=300", [img], extra=["--serial2", sock], mem=768)
    com2 = SocketConsole(g, sock, "ttyS1")
    g.expect([r"Passphrase for /dev/vda"], scaled(120), "the prompt on ttyS0")
    com2.expect([r"Passphrase for /dev/vda"], scaled(30), "the prompt on ttyS1")
    com2.child.sendline(PASS)
    g.expect([r"\(answered\)"], scaled(30), "the prompt withdrawn on ttyS0")
    g.expect([r"/dev/mapper/luks-\S+: opened read-only"], scaled(120), "the volume opened")
    g.wait_shell()
    assert "xrconluks" in g.check("extscan")
    g.check("rescue-assemble --stop")
    assert g.poweroff() == 0
    g.assert_no_fatal()
    assert sha256_file(img) == before


def test_unanswered_passphrase_times_out(guest, tmp_path):
    img = luks_disk(guest, tmp_path)
    g = direct(guest, "con-luks-timeout", "console=ttyS0,115200n8 rescue.assemble=ro rescue.timeout=3",
               [img], mem=768)
    g.expect([r"Passphrase for /dev/vda"], scaled(120), "the prompt")
    g.expect([r"no answer within 3s: skipped"], scaled(30), "the prompt to give up")
    g.expect([r"/dev/vda: not opened: no passphrase given within 3s \(rescue.timeout=\)"], scaled(30),
             "the skip reason")
    g.wait_shell()
    assert g.poweroff() == 0


def test_banner_tells_the_truth_and_poweroff_leaves_clean(guest, tmp_path):
    img = str(tmp_path / "root.img")
    make_fs(img, "32M", label="xrtruth")
    g = boot_with_disks(guest, "con-truth", [img])
    assert "Nothing on any disk has been mounted, assembled or changed" in g.check("/lib/extrescue/boot/banner")
    g.check("rescue-mount --rw LABEL=xrtruth && echo hello > /mnt/root/new")
    banner = g.check("/lib/extrescue/boot/banner")
    assert "mounted    /dev/vda on /mnt/root rw" in banner and "Nothing on any disk" not in banner, banner
    # Plain poweroff: extrescue's way out unmounts first.
    assert g.poweroff("poweroff") == 0
    g.assert_no_fatal()
    fsck_clean(img)
    assert "needs_recovery" not in host(["dumpe2fs", "-h", img]).stdout


def test_eighty_columns_and_no_daemons(guest, tmp_path):
    img = str(tmp_path / "wide.img")
    make_fs(img, "32M", label="0123456789abcdef")
    bad = str(tmp_path / "bad.img")
    make_fs(bad, "32M", label="fedcba9876543210")
    subprocess.run(["debugfs", "-w", "-R", "feature needs_recovery", bad], check=True, capture_output=True)
    g = boot_with_disks(guest, "con-80", [img, bad])
    name = "xr-a-very-long-mapper-name-0123456789ab"   # /dev/mapper/ + 40 characters
    g.check(f"echo \"0 $(blockdev --getsz /dev/vda) linear /dev/vda 0\" | dmsetup create {name}")
    long_lines = g.check("stty cols 80; { /lib/extrescue/boot/banner; extscan; extscan -v; } | awk 'length > 80'")
    g.check("stty cols 500")
    assert not long_lines.strip(), long_lines
    table = g.check("stty cols 80; extscan; stty cols 500")
    assert f"/dev/mapper/{name}\n" in table and "0123456789abcdef" in table, table
    assert "state: journal needs recovery" in table or "journal needs r" in table, table
    for daemon in ("telnetd", "httpd", "ftpd", "tftpd", "inetd", "udhcpd"):
        assert g.run(f"which {daemon}")[0] != 0, f"{daemon} is in the image"
    g.check(f"dmsetup remove {name}")
    assert g.poweroff() == 0
