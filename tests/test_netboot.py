"""Network boot from out/<arch>/netboot (make netboot) under QEMU user networking:
BIOS PXE by TFTP, lpxelinux fetching by HTTP, UEFI PXE and UEFI HTTP boot of
the unified image, iPXE chaining extrescue.ipxe (a fleet checked from one
tree: test_fleet.py). The test servers listen on 127.0.0.1; the guests see
the host as 10.0.2.2."""
import http.server
import os
import re
import threading
import time

import pytest

from harness import OUT, TOP, host
from test_network import network_ready

NETBOOT = os.path.join(OUT, "netboot")
BOOT_MAC = "52:54:00:12:34:56"   # QEMU's first NIC


class Server:
    """HTTP on 127.0.0.1: GET serves FOLDER and logs the paths asked for, POST
    keeps the body with the time it came."""

    def __init__(self, folder):
        self.gets, self.posts = [], []
        gets, posts = self.gets, self.posts

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a):
                super().__init__(*a, directory=folder)

            def do_GET(self):
                gets.append(self.path)
                super().do_GET()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                posts.append((time.monotonic(), self.headers.get("Content-Type"), body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://10.0.2.2:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.fixture
def server():
    s = Server(NETBOOT)
    yield s
    s.close()


def menu_entries():
    """label -> APPEND of the CD menu (iso/isolinux.cfg), and its default label."""
    entries, label, default = {}, None, None
    with open(os.path.join(TOP, "iso", "isolinux.cfg")) as f:
        for line in f:
            words = line.split(None, 1)
            if not words:
                continue
            if words[0] == "LABEL":
                label = words[1].strip()
                entries[label] = None
            elif words[0] == "APPEND":
                entries[label] = words[1].strip()
            elif words[0] == "DEFAULT":
                default = words[1].strip()
    return entries, default


def test_menus_match_the_cd_and_the_example_config_is_valid(tmp_path):
    entries, default = menu_entries()
    pxe = open(os.path.join(NETBOOT, "pxelinux.cfg", "default")).read()
    ipxe = open(os.path.join(NETBOOT, "extrescue.ipxe")).read()
    assert ipxe.startswith("#!ipxe\n")
    for label, append in entries.items():
        assert f"\nLABEL {label}\n" in pxe and f"\nitem {label} " in ipxe and f"\n:{label}\n" in ipxe, label
        if append:
            assert f"  APPEND {append} ip=dhcp\n  IPAPPEND 2\n" in pxe, label
            assert f"\n:{label}\nset args {append}\n" in ipxe, label
    # The unified image carries the default entry's command line.
    out = tmp_path / "cmdline"
    r = host(["objcopy", "-O", "binary", "--only-section=.cmdline", os.path.join(NETBOOT, "extrescue.efi"), str(out)])
    assert r.returncode == 0, r.stderr
    assert out.read_text() == entries[default]
    # dnsmasq reads the example as it is and with the HTTP boot lines switched on.
    example = os.path.join(NETBOOT, "dnsmasq.conf.example")
    text = open(example).read()
    http_on = tmp_path / "http.conf"
    http_on.write_text(re.sub(r"^#(dhcp-\S+=)", r"\1", text, flags=re.M).replace(
        "dhcp-range=192.168.10.0,proxy\n", ""))
    assert "dhcp-boot=tag:efihttp,http://" in http_on.read_text()
    for conf in (example, str(http_on)):
        r = host(["dnsmasq", "--test", f"--conf-file={conf}"])
        assert r.returncode == 0 and "syntax check OK" in r.stderr + r.stdout, (conf, r.stderr)


def boot(guest, name, bootfile, firmware="bios", nics=("virtio-net-pci",), extra=(), timeout=240):
    args = ["--firmware", firmware, "--mem", "768", "--netboot", bootfile]
    for n in nics:
        args += ["--nic", n]
    g = guest(name, args + (["--", *extra] if extra else []), boot_timeout=timeout)
    seconds = g.wait_shell()
    print(f"netboot {name}: shell {seconds:.1f} s after QEMU started")
    return g


def test_bios_pxe_by_tftp_configures_only_the_nic_that_booted(guest):
    g = boot(guest, "netboot-bios-tftp", "pxelinux.0", nics=("virtio-net-pci", "virtio-net-pci"))
    log = g.serial_log()
    assert "PXELINUX" in log and "check all ext volumes (read-only)" in log and "Automatic boot in" in log
    cmdline = g.check("cat /proc/cmdline")
    assert "BOOTIF=01-52-54-00-12-34-56" in cmdline and " ip=dhcp" in cmdline, cmdline
    network_ready(g)
    # Both NICs have a DHCP server behind them; only the booting one is asked.
    assert g.check("cat /sys/class/net/eth0/address").strip() == BOOT_MAC
    assert "10.0.2.15/24" in g.check("ip -o -4 addr show dev eth0")
    assert g.check("ip -o -4 addr show dev eth1").strip() == ""
    g.assert_no_fatal()


def test_lpxelinux_fetches_kernel_and_initramfs_by_http(guest, server):
    g = boot(guest, "netboot-lpxelinux-http", f"{server.base}/lpxelinux.0")
    for path in ("/lpxelinux.0", "/ldlinux.c32", "/pxelinux.cfg/default", "/vmlinuz", "/initrd.zst"):
        assert path in server.gets, server.gets
    assert "BOOTIF=01-52-54-00-12-34-56" in g.check("cat /proc/cmdline")
    g.assert_no_fatal()


def test_uefi_http_boot_of_the_unified_image(guest, server):
    entries, default = menu_entries()
    g = boot(guest, "netboot-uefi-http", f"{server.base}/extrescue.efi", firmware="uefi")
    assert "/extrescue.efi" in server.gets and "/vmlinuz" not in server.gets, server.gets
    assert "Start HTTP Boot over IPv4" in g.serial_log()
    assert g.check("cat /proc/cmdline").strip() == entries[default]
    assert g.check("[ -d /sys/firmware/efi ] && echo uefi").strip() == "uefi"
    g.assert_no_fatal()


def test_uefi_pxe_of_the_unified_image(guest):
    g = boot(guest, "netboot-uefi-tftp", "extrescue.efi", firmware="uefi", timeout=360)
    assert "Start PXE over IPv4" in g.serial_log()
    assert g.check("[ -d /sys/firmware/efi ] && echo uefi").strip() == "uefi"
    g.assert_no_fatal()


def test_ipxe_chains_the_menu_script(guest, server):
    # QEMU's NIC option ROM is Debian's iPXE build (ipxe-qemu).
    g = boot(guest, "netboot-ipxe", f"{server.base}/extrescue.ipxe")
    assert server.gets[:3] == ["/extrescue.ipxe", "/vmlinuz", "/initrd.zst"], server.gets
    cmdline = g.check("cat /proc/cmdline")
    assert "BOOTIF=01-52-54-00-12-34-56" in cmdline and " ip=dhcp" in cmdline, cmdline
    network_ready(g)
    assert "10.0.2.15/24" in g.check("ip -o -4 addr show dev eth0")
    g.assert_no_fatal()
