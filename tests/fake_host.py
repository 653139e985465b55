"""A stand-in host for qemu/run's safety checks: a sysfs tree, /proc tables
and a kernel that binds and unbinds fake PCI devices, so the refusals and
the VFIO bind/restore run for real on a machine without an IOMMU.

The fake kernel is a thread that reads what the runner writes to the tree's
drivers_probe and drivers/*/unbind (FIFOs) and moves the devices' driver
links as Linux would, honouring driver_override."""
import os
import select
import threading
import time


class FakeHost:
    def __init__(self, root):
        self.root = root
        self.sys = os.path.join(root, "sys")
        self.proc = os.path.join(root, "proc")
        self.devvfio = os.path.join(root, "dev-vfio")
        self.state = os.path.join(root, "vfio-state")
        self.original = {}               # bdf -> the driver the device had
        self.refuse_vfio = set()         # bdfs that will not bind to vfio-pci
        self.fds = {}
        self.stop = threading.Event()
        for d in (self.sys, os.path.join(self.proc, "self"), self.devvfio):
            os.makedirs(d, exist_ok=True)
        self.mountinfo([])
        self.write("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n")
        os.makedirs(os.path.join(self.sys, "kernel", "iommu_groups"), exist_ok=True)
        os.makedirs(os.path.join(self.sys, "class", "block"), exist_ok=True)
        os.makedirs(os.path.join(self.sys, "dev", "block"), exist_ok=True)
        self._fifo(os.path.join(self.sys, "bus", "pci", "drivers_probe"))
        with open(os.path.join(self.devvfio, "vfio"), "w"):
            pass

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def env(self):
        return dict(os.environ, EXTRESCUE_SYSFS=self.sys, EXTRESCUE_PROCFS=self.proc,
                    EXTRESCUE_DEVVFIO=self.devvfio, EXTRESCUE_VFIO_STATE=self.state)

    def mountinfo(self, mounts):
        """MOUNTS: [(major:minor, source, mount point)]; "/" is always there."""
        lines = [f"{i + 30} 1 {mm} / {where} rw - ext4 {src} rw" for i, (mm, src, where) in enumerate(mounts)]
        self.write("proc/self/mountinfo", "\n".join(lines) + "\n")

    # Block devices
    def block(self, name, dev, parent=None, under=None):
        """A block device NAME (major:minor DEV) in class/block; PARENT makes
        it a partition of that disk, UNDER a device folder it hangs below."""
        if parent:
            real = os.path.join(os.path.realpath(os.path.join(self.sys, "class", "block", parent)), name)
        else:
            real = os.path.join(under or os.path.join(self.sys, "devices", "virtual", "block"), name)
        os.makedirs(os.path.join(real, "holders"), exist_ok=True)
        with open(os.path.join(real, "dev"), "w") as f:
            f.write(dev + "\n")
        if parent:
            with open(os.path.join(real, "partition"), "w") as f:
                f.write("1\n")
        os.symlink(real, os.path.join(self.sys, "class", "block", name))
        os.symlink(real, os.path.join(self.sys, "dev", "block", dev))
        return real

    def hold(self, name, holder, dm_name=None):
        if not os.path.exists(os.path.join(self.sys, "class", "block", holder)):
            real = self.block(holder, f"253:{len(os.listdir(os.path.join(self.sys, 'class', 'block')))}")
            if dm_name:
                self.write(os.path.join(real, "dm", "name"), dm_name + "\n")
        os.symlink(os.path.join(self.sys, "class", "block", holder),
                   os.path.join(self.sys, "class", "block", name, "holders", holder))

    # PCI devices
    def pci(self, bdf, klass, driver, group):
        real = os.path.join(self.sys, "devices", "pci0000:00", bdf)
        os.makedirs(real)
        self.write(os.path.join(real, "class"), klass + "\n")
        self.write(os.path.join(real, "driver_override"), "(null)\n")
        os.makedirs(os.path.join(self.sys, "bus", "pci", "devices"), exist_ok=True)
        os.symlink(real, os.path.join(self.sys, "bus", "pci", "devices", bdf))
        gdir = os.path.join(self.sys, "kernel", "iommu_groups", group)
        os.makedirs(os.path.join(gdir, "devices"), exist_ok=True)
        os.symlink(real, os.path.join(gdir, "devices", bdf))
        os.symlink(gdir, os.path.join(real, "iommu_group"))
        with open(os.path.join(self.devvfio, group), "w"):
            pass
        self.original[bdf] = driver
        if driver:
            self._link(bdf, driver)
        return real

    def _driver_dir(self, name):
        d = os.path.join(self.sys, "bus", "pci", "drivers", name)
        if not os.path.isdir(d):
            os.makedirs(d)
            self._fifo(os.path.join(d, "unbind"))
        return d

    def _link(self, bdf, driver):
        os.symlink(self._driver_dir(driver), os.path.join(self.sys, "bus", "pci", "devices", bdf, "driver"))

    def driver(self, bdf):
        try:
            return os.path.basename(os.readlink(os.path.join(self.sys, "bus", "pci", "devices", bdf, "driver")))
        except OSError:
            return None

    # The fake kernel
    def _fifo(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.mkfifo(path)
        r = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        w = os.open(path, os.O_WRONLY | os.O_NONBLOCK)     # held: no end of file between writers
        self.fds[r] = (path, w)

    def _handle(self, path, text):
        bdf = text.strip()
        dev = os.path.join(self.sys, "bus", "pci", "devices", bdf)
        if not os.path.isdir(dev):
            return
        if path.endswith("/unbind"):
            if self.driver(bdf) == os.path.basename(os.path.dirname(path)):
                os.unlink(os.path.join(dev, "driver"))
        elif self.driver(bdf) is None:          # drivers_probe
            with open(os.path.join(dev, "driver_override")) as f:
                override = f.read().strip()
            want = override if override not in ("", "(null)") else self.original[bdf]
            if want and not (want == "vfio-pci" and bdf in self.refuse_vfio):
                self._link(bdf, want)

    def _loop(self):
        while not self.stop.is_set():
            ready, _, _ = select.select(list(self.fds), [], [], 0.05)
            for fd in ready:
                try:
                    data = os.read(fd, 4096).decode()
                except BlockingIOError:
                    continue
                # One write per bdf; several may have queued up.
                for i in range(0, len(data), 12):
                    self._handle(self.fds[fd][0], data[i:i + 12])

    def __enter__(self):
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        for r, (_, w) in self.fds.items():
            os.close(r)
            os.close(w)

    def wait_drivers(self, want, timeout=20):
        """Waits until each bdf of WANT ({bdf: driver}) has that driver; returns the drivers now."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            now = {b: self.driver(b) for b in want}
            if now == want:
                return now
            time.sleep(0.05)
        return {b: self.driver(b) for b in want}
