"""The kernel command line parser (the host build with ASan/UBSan, and the
image's arm64 build): split as the kernel splits it, rescue.* values checked
and written as data, console= values listed, warnings one line each, exit 0
whatever the input."""
import pytest

from harness import SRC_BUILDS, host, src_program


@pytest.fixture(scope="module", params=SRC_BUILDS)
def cmdline(request):
    return src_program("cmdline", request.param)


def parse(cmdline, tmp_path, line):
    src = tmp_path / "cmdline"
    src.write_bytes(line.encode() if isinstance(line, str) else line)
    out = tmp_path / "out"
    r = host([*cmdline, "--dir", str(out), str(src)])
    assert r.returncode == 0 and "ERROR" not in r.stderr, r.stderr
    params = {p.name: p.read_text() for p in (out / "param").iterdir()}
    consoles = (out / "consoles").read_text().splitlines() if (out / "consoles").exists() else []
    return params, consoles, r.stderr.splitlines()


def test_quotes_group_like_the_kernel(cmdline, tmp_path):
    params, consoles, warnings = parse(
        cmdline, tmp_path, 'BOOT_IMAGE=/vmlinuz console=tty0 "console=ttyS1,115200n8" rescue.devices="LABEL=my root" '
                  '"rescue.keyfile=LABEL=key disk:/k e y" rescue.fsck=check\n')
    assert params == {"devices": "LABEL=my root", "keyfile": "LABEL=key disk:/k e y", "fsck": "check"}
    assert consoles == ["tty0", "ttyS1,115200n8"] and not warnings


@pytest.mark.parametrize("arg,warning", [
    ("rescue.fsck=fix", "rescue.fsck=fix is not one of the accepted values; ignored"),
    ("rescue.settle=$(reboot)", "rescue.settle=$(reboot) is not a number in range; ignored"),
    ("rescue.timeout=0", "rescue.timeout=0 is not a number in range; ignored"),
    ("rescue.devices=a,,b", "has an empty device name"),
    ("rescue.keyfile=nocolon", "is not DEVICE:PATH"),
    ("rescue.bogus=1", "rescue.bogus is not a parameter extrescue knows"),
    ("rescue.after", "rescue.after has no value"),
    ("rescue.undo=" + "u" * 2000, "is longer than 1024 characters"),
    ("rescue.iso=isos/x.iso", "rescue.iso=isos/x.iso is not an absolute path without .."),
    ("rescue.iso=/isos/../x.iso", "is not an absolute path without .."),
    ("rescue.iso=/isos/..", "is not an absolute path without .."),
])
def test_bad_values_are_named_and_ignored(cmdline, tmp_path, arg, warning):
    params, _, warnings = parse(cmdline, tmp_path, f"console=ttyS0 {arg} rescue.fsck=check")
    assert params == {"fsck": "check"}, params
    assert len(warnings) == 1 and warning in warnings[0], warnings
    assert len(warnings[0]) < 120


def test_an_iso_path_is_taken_as_given(cmdline, tmp_path):
    params, _, warnings = parse(cmdline, tmp_path, '"rescue.iso=/isos/extrescue 1.0.iso" rescue.fsck=check\n')
    assert params == {"iso": "/isos/extrescue 1.0.iso", "fsck": "check"} and not warnings, (params, warnings)


def test_shell_code_is_only_data(cmdline, tmp_path):
    params, _, warnings = parse(cmdline, tmp_path, "rescue.undo=it's rescue.devices=a';reboot;',`id` "
                                          "rescue.keyfile=x:$(touch${IFS}/tmp/x)\n")
    assert params == {"undo": "it's", "devices": "a';reboot;',`id`", "keyfile": "x:$(touch${IFS}/tmp/x)"}
    assert not warnings


def test_garbage_and_truncation(cmdline, tmp_path):
    params, _, warnings = parse(cmdline, tmp_path, b"rescue.fsck=check\x01 rescue.settle=5 \xff\xfe " + b"x" * 20000)
    assert params == {"settle": "5"}, params
    assert any("holds control characters" in w for w in warnings), warnings


def net(tmp_path):
    folder = tmp_path / "out" / "net"
    return {p.name: p.read_text().splitlines() for p in folder.iterdir()}


def test_network_parameters_are_normalised(cmdline, tmp_path):
    _, _, warnings = parse(
        cmdline, tmp_path, "ip=dhcp ip=eth1:dhcp6 ip=52-54-00-AA-bb-cc:on "
                  "ip=10.1.2.3::10.1.2.1:255.255.255.0:web1:52:54:00:12:34:56:none:10.1.2.53 "
                  "ip=10.0.0.2:::24::eth0.5:off ip=off nameserver=1.1.1.1 nameserver=2001:db8::53 "
                  "vlan=eth0.5:eth0 vlan=vlan0007:bond0 ifname=lan0:52:54:00:AA:bb:cc "
                  "BOOTIF=01-52-54-00-AB-cd-EF")
    assert not warnings
    assert net(tmp_path) == {
        "ip": ["dhcp -", "dhcp6 eth1", "dhcp 52:54:00:aa:bb:cc",
               "static 52:54:00:12:34:56 10.1.2.3/24 10.1.2.1 web1 10.1.2.53 -",
               "static eth0.5 10.0.0.2/24 - - - -"],
        "nameserver": ["1.1.1.1", "2001:db8::53"],
        "vlan": ["eth0.5 eth0 5", "vlan0007 bond0 7"],
        "ifname": ["lan0 52:54:00:aa:bb:cc"],
        "BOOTIF": ["52:54:00:ab:cd:ef"],
    }


@pytest.mark.parametrize("arg,warning", [
    ("ip=10.1.2.3:::255.0.255.0::eth0:none", "has no valid netmask"),
    ("ip=:::24::eth0:none", "has no IPv4 client address"),
    ("ip=10.1.2.3::10.1.2.1:24:h;reboot:eth0:none", "has a host name with characters"),
    ("ip=10.1.2.3:::24::$(reboot):none", "names a device that is neither"),
    ("ip=eth0:bootp", "asks for an address method other than dhcp"),
    ("ip=eth0:none", "gives a device but no address"),
    ("ip=1:2:3", "is not CLIENT:SERVER:GW:NETMASK:HOSTNAME:DEVICE:METHOD"),
    ("ip=" + ":" * 40, "is not CLIENT:SERVER"),
    ("nameserver=one.one", "is not an IP address"),
    ("vlan=eth0.5000:eth0", "has a VLAN id outside 1-4094"),
    ("vlan=mgmt:eth0", "carries no VLAN id"),
    ("ifname=lan0:52:54:00:12:34", "is not NAME:MAC"),
    ("BOOTIF=06-52-54-00-12-34-56", "is not 01-aa-bb-cc-dd-ee-ff"),
    ("BOOTIF=52:54:00:12:34:56", "is not 01-aa-bb-cc-dd-ee-ff"),
    ("ip", "ip has no value"),
    ("rescue.ssh_key=ssh-dss AAAAB3NzaC1kc3MAAACBAP", "is not a public key of a type Dropbear takes"),
    ("rescue.ssh_key=\"ssh-ed25519 AAAAB3NzaC1yc2EAAAADAQABAAABAQAA x\"", "has key data of another type"),
    ("rescue.ssh_key=https://example/keys", "is not an http:// URL"),
    ("rescue.report=http://collector:99999/r", "has a port that is not 1-65535"),
    ("rescue.report=http://collector", "has no /PATH after its host"),
    ("rescue.report=http://a/b`id`", "holds spaces, quotes or control characters"),
    ("rescue.metrics=https://pushgateway:9091", "is not an http:// URL"),
    ("rescue.metrics=http://pushgateway:9091/`id`", "holds spaces, quotes or control characters"),
    ("rescue.metrics=http://pushgateway:9091/#x", "holds ? or #"),
    ("rescue.syslog=log/host", "is not HOST[:PORT][,tcp|,udp]"),
    ("rescue.syslog=loghost,tls", "is not HOST[:PORT][,tcp|,udp]"),
    ("rescue.syslog=loghost:99999", "is not HOST[:PORT][,tcp|,udp]"),
    ("rescue.syslog=,tcp", "is not HOST[:PORT][,tcp|,udp]"),
])
def test_bad_network_values_are_named_and_ignored(cmdline, tmp_path, arg, warning):
    params, _, warnings = parse(cmdline, tmp_path, f"{arg} rescue.fsck=check")
    assert params == {"fsck": "check"}, params
    assert not any(net(tmp_path).values())
    assert len(warnings) == 1 and warning in warnings[0], warnings


def test_metrics_and_syslog_servers(cmdline, tmp_path):
    params, _, warnings = parse(cmdline, tmp_path, "rescue.metrics=http://10.0.0.5:9091 "
                                "rescue.syslog=[fd00::5]:6514,tcp")
    assert params == {"metrics": "http://10.0.0.5:9091", "syslog": "[fd00::5]:6514,tcp"} and not warnings
    params, _, warnings = parse(cmdline, tmp_path, "rescue.metrics=http://pg/prefix/ rescue.syslog=loghost")
    assert params == {"metrics": "http://pg/prefix/", "syslog": "loghost"} and not warnings


def test_repeated_values_are_bounded(cmdline, tmp_path):
    pub = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEkFJ7nK3Z4z9Dd3Jqj8kzYdgCZ/4o3panB55BX3DZlj k")
    params, _, warnings = parse(cmdline, tmp_path, " ".join([f'"rescue.ssh_key={pub}{i}"' for i in range(20)] +
                                          [f"nameserver=10.0.0.{i}" for i in range(20)]))
    assert params["ssh_key"].splitlines() == [f"{pub}{i}" for i in range(16)]
    assert len(net(tmp_path)["nameserver"]) == 16
    assert len(warnings) == 8 and all("is one too many (at most 16)" in w for w in warnings), warnings



@pytest.fixture(scope="module", params=SRC_BUILDS)
def authkeys(request):
    return src_program("authkeys", request.param)



@pytest.mark.parametrize("text,status,kept,said", [
    (b"# team\n\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEkFJ7nK3Z4z9Dd3Jqj8kzYdgCZ/4o3panB55BX3DZlj a@b\r\n"
     b"from=\"10.0.0.1\" ssh-ed25519 AAAA\n", 0, 1, "line 4 is not a public key"),
    (b"ssh-ed25519 " + b"A" * (64 << 10), 2, 0, "is larger than 64 KiB; no key taken from it"),
    (b"ssh-ed25519 AAAA\x00", 1, 0, "is not text"),
    (b"hello\n", 1, 0, "holds no usable public key"),
])
def test_authorized_keys_from_a_url_are_checked(authkeys, text, status, kept, said):
    r = host([*authkeys, "http://10.0.2.2/keys"], input=text.decode("latin-1"))
    assert r.returncode == status and len(r.stdout.splitlines()) == kept, (r.stdout, r.stderr)
    assert said in r.stderr


PIN = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"


def test_key_urls_carry_a_pin(cmdline, tmp_path):
    """A key URL with its file's sha256 is taken as given; the flag that
    takes one without a pin is a parameter of its own."""
    url = f"http://10.0.2.2:8080/keys#sha256={PIN}"
    params, _, warnings = parse(cmdline, tmp_path, f"rescue.ssh_key={url} rescue.ssh_key=http://[fd00::1]/k "
                                          "rescue.ssh_key_insecure=1")
    assert not warnings
    assert params == {"ssh_key": f"{url}\nhttp://[fd00::1]/k\n", "ssh_key_insecure": "1"}


@pytest.mark.parametrize("arg,warning", [
    (f"rescue.ssh_key=http://h/keys#sha256={PIN[:63]}", "has a #sha256= pin that is not 64 hex digits"),
    (f"rescue.ssh_key=http://h/keys#sha256={PIN}0", "has a #sha256= pin that is not 64 hex digits"),
    (f"rescue.ssh_key=http://h/keys#sha256={PIN[:63]}g", "has a #sha256= pin that is not 64 hex digits"),
    (f"rescue.ssh_key=http://h/keys#md5={PIN[:32]}", "has a # part that is not #sha256="),
    (f"rescue.ssh_key=http://h/keys#sha256={PIN}#sha256={PIN}", "has a #sha256= pin that is not 64 hex"),
    (f"rescue.ssh_key=http://h#sha256={PIN}", "has no /PATH after its host"),
    (f"rescue.ssh_key=https://h/keys#sha256={PIN}", "is not an http:// URL"),
    ("rescue.ssh_key_insecure=yes", "rescue.ssh_key_insecure=yes is not one of the accepted values"),
])
def test_bad_key_pins_are_named_and_ignored(cmdline, tmp_path, arg, warning):
    params, _, warnings = parse(cmdline, tmp_path, f"{arg} rescue.fsck=check")
    assert params == {"fsck": "check"}, params
    assert len(warnings) == 1 and warning in warnings[0], warnings


@pytest.mark.parametrize("value,status,out,said", [
    (f"http://10.0.2.2:8080/keys#sha256={PIN}", 0, f"http://10.0.2.2:8080/keys {PIN.lower()}\n", ""),
    ("http://10.0.2.2/keys", 0, "http://10.0.2.2/keys -\n", ""),
    ("http://10.0.2.2/keys#sha256=abc", 1, "", "has a #sha256= pin that is not 64 hex digits"),
    ("http://10.0.2.2/a b", 1, "", "holds spaces, quotes or control characters"),
    ("ssh-ed25519 AAAA", 1, "", "is not an http:// URL"),
])
def test_authkeys_splits_a_key_url_from_its_pin(authkeys, value, status, out, said):
    r = host([*authkeys, "--url", value])
    assert (r.returncode, r.stdout) == (status, out), (r.stdout, r.stderr)
    assert said in r.stderr and (not said or len(r.stderr.splitlines()) == 1), r.stderr


def stick_pass(cmdline, tmp_path, kernel, stick_text):
    """The kernel's line KERNEL, then the stick's cmdline file STICK_TEXT over
    it; returns (params, net, taken, warnings of the stick's pass)."""
    out = tmp_path / "out"
    (tmp_path / "kernel").write_text(kernel)
    (tmp_path / "stick").write_bytes(stick_text.encode() if isinstance(stick_text, str) else stick_text)
    assert host([*cmdline, "--dir", str(out), str(tmp_path / "kernel")]).returncode == 0
    r = host([*cmdline, "--dir", str(out), "--stick", str(tmp_path / "stick")])
    assert r.returncode == 0 and "ERROR" not in r.stderr, r.stderr
    params = {p.name: p.read_text() for p in (out / "param").iterdir()}
    net = {p.name: p.read_text() for p in (out / "net").iterdir()}
    taken = (out / "stick-taken").read_text().split() if (out / "stick-taken").exists() else []
    return params, net, taken, r.stderr.splitlines()


def test_stick_cmdline_adds_to_the_kernels_and_never_overrides(cmdline, tmp_path):
    params, net, taken, warnings = stick_pass(
        cmdline, tmp_path, "console=ttyS0 rescue.after=shell ip=dhcp",
        "# a comment rescue.fsck=repair\r\nrescue.after=poweroff rescue.fsck=check\r\n"
        "  # indented comment\r\nip=10.0.0.5::10.0.0.1:255.255.255.0::eth0:off nameserver=10.0.0.53\r\n")
    assert params == {"after": "shell", "fsck": "check"}, params
    assert net["ip"] == "dhcp -\n" and net["nameserver"] == "10.0.0.53\n", net
    assert taken == ["rescue.fsck", "nameserver"], taken
    assert warnings == ["extrescue: the stick's rescue.after= is left out: the boot command line sets it",
                        "extrescue: the stick's ip= is left out: the boot command line sets it"], warnings


@pytest.mark.parametrize("text,warning", [
    ("init=/bin/sh rescue.fsck=check", "the stick's cmdline may not set init; left out"),
    ("console=ttyS1 rescue.fsck=check", "the stick's cmdline may not set console; left out"),
    ("rescue.stick=/dev/sdb1 rescue.fsck=check", "the stick's cmdline may not set rescue.stick; left out"),
    ("rescue.iso=/isos/x.iso rescue.fsck=check", "the stick's cmdline may not set rescue.iso; left out"),
    ("BOOTIF=01-52-54-00-12-34-56 rescue.fsck=check", "the stick's cmdline may not set BOOTIF; left out"),
    ("rescue.after=$(reboot) rescue.fsck=check", "rescue.after=$(reboot) is not one of the accepted values"),
])
def test_stick_cmdline_takes_only_documented_parameters(cmdline, tmp_path, text, warning):
    params, _, taken, warnings = stick_pass(cmdline, tmp_path, "console=ttyS0", text)
    assert params == {"fsck": "check"} and taken == ["rescue.fsck"], (params, taken)
    assert len(warnings) == 1 and warning in warnings[0], warnings


@pytest.mark.parametrize("text,warning", [
    ("rescue.fsck=check " + "x" * 9000, "larger than 8192 bytes; none of it is taken"),
    (b"rescue.fsck=check\0rescue.after=poweroff", "not text (it holds NUL bytes); none of it is taken"),
])
def test_stick_cmdline_too_large_or_binary_gives_nothing(cmdline, tmp_path, text, warning):
    params, _, taken, warnings = stick_pass(cmdline, tmp_path, "console=ttyS0", text)
    assert params == {} and taken == [], params
    assert len(warnings) == 1 and warning in warnings[0], warnings
