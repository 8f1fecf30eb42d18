"""What the merge benchmarks' child processes share: the process's resident memory counters."""


def status(key: str) -> int:
    """A ``/proc/self/status`` counter (``VmRSS``, ``VmHWM``) in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)
