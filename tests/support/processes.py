"""What a process left behind: its descendants and the TCP ports they listen on (Linux /proc)."""

from pathlib import Path

_PROC = Path("/proc")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, grandchildren, ...)."""
    children: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # it exited while we looked
        # The command name may hold spaces and parentheses: the fields follow the last ")".
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` that still exist (zombies count as gone)."""
    living = set()
    for pid in pids:
        try:
            state = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            living.add(pid)
    return living


def listening_ports(pids: set[int]) -> set[int]:
    """TCP ports (IPv4 and IPv6) on which any of ``pids`` holds a listening socket."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in (_PROC / str(pid) / "fd").iterdir():
                target = str(fd.readlink())
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:[") : -1])
        except OSError:
            continue
    ports = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (_PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and inode in inodes:
                ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports
